// Fuzz target: what a sandboxed program sends the egress proxy before anything is relayed, and
// the tenant's list it is judged by. The first byte picks the parser:
//   0: a tunnel's first bytes (the ClientHello): a complete parse names a printable, lower-case
//      host, and no prefix of a complete ClientHello is judged not TLS;
//   1: a request target, CONNECT or plain: an accepted one names a host the allow-list's own
//      normalisation keeps as it is, and an authority without spaces or line breaks (it goes
//      into the relayed head and the status line of a refusal);
//   2: a tokens file's allow-list: refused with a message naming the entry's position, or
//      written back in a form that parses to itself.
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>

#include "egress/allow_list.hpp"
#include "egress/client_hello.hpp"
#include "egress/proxy_request.hpp"

using namespace sandgate::egress;

namespace {

void check_client_hello(std::span<const unsigned char> bytes) {
  ClientHello whole = parse_client_hello(bytes);
  if (whole.state != ClientHello::State::complete) return;
  if (whole.server_name) {
    const std::string& name = *whole.server_name;
    if (name.empty()) std::abort();
    for (char c : name)
      if (c < 0x21 || c > 0x7e || (c >= 'A' && c <= 'Z')) std::abort();
  }
  for (std::size_t cut : {bytes.size() / 2, bytes.size() > 0 ? bytes.size() - 1 : 0})
    if (parse_client_hello(bytes.first(cut)).state == ClientHello::State::not_tls) std::abort();
}

void check_target(std::string_view text) {
  for (bool connect : {true, false}) {
    auto parsed = parse_proxy_target(connect, text);
    auto* target = std::get_if<ProxyTarget>(&parsed);
    if (target == nullptr) continue;
    if (normalise_host(target->host) != target->host) std::abort();
    if (target->port == 0) std::abort();
    for (char c : target->authority)
      if (c == ' ' || c == '\r' || c == '\n' || c == '\0') std::abort();
  }
}

void check_allow_list(std::string_view text) {
  try {
    auto list = AllowList::parse(text);
    auto again = AllowList::parse(list.to_text());
    if (again.to_text() != list.to_text()) std::abort();
  } catch (const std::invalid_argument& e) {
    if (std::string_view(e.what()).rfind("egress entry ", 0) != 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::span<const unsigned char> rest(data + 1, size - 1);
  std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
  switch (data[0] % 3) {
    case 0:
      check_client_hello(rest);
      break;
    case 1:
      check_target(text);
      break;
    default:
      check_allow_list(text);
  }
  return 0;
}
