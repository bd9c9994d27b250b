#include "token_store.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace sandgate::auth {

namespace {

std::optional<Digest> parse_hex_digest(const std::string& hex) {
  if (hex.size() != 64) return std::nullopt;
  Digest d{};
  for (std::size_t i = 0; i < 32; ++i) {
    unsigned v = 0;
    for (int k = 0; k < 2; ++k) {
      char c = hex[2 * i + static_cast<std::size_t>(k)];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        return std::nullopt;
    }
    d[i] = static_cast<unsigned char>(v);
  }
  return d;
}

void apply_option(Tenant& tenant, const std::string& option, int line_no) {
  auto eq = option.find('=');
  std::string key = option.substr(0, eq),
              value = eq == std::string::npos ? "" : option.substr(eq + 1);
  auto bad = [&] {
    return std::runtime_error("tokens file line " + std::to_string(line_no) + ": bad option '" +
                              key + "' (expected max_sessions=N or spend_cap_usd=X)");
  };
  try {
    std::size_t used = 0;
    if (key == "max_sessions") {
      long n = std::stol(value, &used);
      if (used != value.size() || n < 0 || n > std::numeric_limits<std::uint32_t>::max())
        throw bad();
      tenant.max_sessions = static_cast<std::uint32_t>(n);
    } else if (key == "spend_cap_usd") {
      double x = std::stod(value, &used);
      if (used != value.size() || !(x > 0) || !std::isfinite(x)) throw bad();
      tenant.spend_cap_usd = x;
    } else {
      throw bad();
    }
  } catch (const std::logic_error&) {
    throw bad();
  }
}

}  // namespace

Digest sha256(std::string_view data) {
  Digest d{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), d.data(), &len, EVP_sha256(), nullptr);
  return d;
}

std::string to_hex(const Digest& digest) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

TokenStore TokenStore::parse(std::string_view text) {
  TokenStore store;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string hex, name;
    if (!(words >> hex)) continue;
    auto digest = parse_hex_digest(hex);
    if (!digest)
      throw std::runtime_error("tokens file line " + std::to_string(line_no) +
                               ": expected the token's SHA-256 as 64 hex digits");
    if (!(words >> name))
      throw std::runtime_error("tokens file line " + std::to_string(line_no) +
                               ": missing tenant name");
    Entry entry{*digest, Tenant{name, std::nullopt, std::nullopt}};
    for (std::string option; words >> option;) apply_option(entry.tenant, option, line_no);
    for (const auto& earlier : store.entries_)
      if (earlier.digest == entry.digest)
        throw std::runtime_error("tokens file line " + std::to_string(line_no) +
                                 ": the same token is already listed (for tenant '" +
                                 earlier.tenant.name + "')");
    store.entries_.push_back(std::move(entry));
  }
  if (store.entries_.empty()) throw std::runtime_error("tokens file has no tenants");
  return store;
}

TokenStore TokenStore::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read tokens file " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

TokenStore TokenStore::single(std::string_view token, std::string tenant) {
  TokenStore store;
  store.entries_.push_back({sha256(token), Tenant{std::move(tenant), std::nullopt, std::nullopt}});
  return store;
}

const Tenant* TokenStore::find(std::string_view token) const {
  Digest presented = sha256(token);
  const Tenant* match = nullptr;
  for (const auto& e : entries_) {
    // No early exit: every digest is compared, whichever matches.
    bool equal = CRYPTO_memcmp(presented.data(), e.digest.data(), presented.size()) == 0;
    if (equal && match == nullptr) match = &e.tenant;
  }
  return match;
}

}  // namespace sandgate::auth
