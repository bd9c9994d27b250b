// Fuzz target: the tokens file parser, and authentication against what it accepted. A file is
// either refused with a message saying what is wrong (and on which line), or every tenant it yields
// is well formed; and no header value other than a listed token authenticates.
#include <cstdlib>
#include <stdexcept>

#include "auth/authenticate.hpp"
#include "auth/token_store.hpp"

using namespace sandgate::auth;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<TokenStore> store;
  try {
    store = TokenStore::parse(text);
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).rfind("tokens file", 0) != 0) std::abort();
    return 0;
  }
  // The input's last line, used as a presented token: it must not match unless its SHA-256 is
  // listed, which a fuzzer cannot produce.
  auto last = text.substr(text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1);
  auto header = std::string("Bearer ") + std::string(last);
  auto result = authenticate(*store, header, {});
  if (result.status == AuthStatus::ok) {
    if (!result.tenant || result.tenant->name.empty()) std::abort();
    if (store->find(last) != result.tenant) std::abort();
  }
  auto other = authenticate(*store, {}, last);
  if (other.status == AuthStatus::ok && store->find(last) == nullptr) std::abort();
  return 0;
}
