#include "token_store.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "common/tenant_name.hpp"

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

TokenStore TokenStore::parse(std::string_view text, const Tenant& defaults) {
  Entries entries;
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
    if (name.size() > kMaxTenantNameBytes)
      throw std::runtime_error("tokens file line " + std::to_string(line_no) +
                               ": the tenant name is longer than " +
                               std::to_string(kMaxTenantNameBytes) + " bytes");
    Entry entry{*digest, defaults};
    entry.tenant.name = name;
    int option_no = 0;
    for (std::string option; words >> option;)
      tenant::apply_tenant_option(entry.tenant, option,
                                  "tokens file line " + std::to_string(line_no), ++option_no);
    for (const auto& earlier : entries)
      if (earlier.digest == entry.digest)
        throw std::runtime_error("tokens file line " + std::to_string(line_no) +
                                 ": the same token is already listed (for tenant '" +
                                 earlier.tenant.name + "')");
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) throw std::runtime_error("tokens file has no tenants");
  TokenStore store;
  store.entries_ = std::make_shared<const Entries>(std::move(entries));
  return store;
}

TokenStore TokenStore::single(std::string_view token, const Tenant& defaults, std::string tenant) {
  Entries entries;
  entries.push_back({sha256(token), defaults});
  entries.back().tenant.name = std::move(tenant);
  TokenStore store;
  store.entries_ = std::make_shared<const Entries>(std::move(entries));
  return store;
}

TokenStore TokenStore::anyone(const Tenant& defaults) {
  TokenStore store;
  auto anonymous = std::make_shared<Tenant>(defaults);
  anonymous->name = kAnonymousTenant;
  store.anyone_ = std::move(anonymous);
  return store;
}

TokenStore::TokenStore(TokenStore&& other) noexcept
    : entries_(other.snapshot()), anyone_(std::move(other.anyone_)) {
  other.replace(TokenStore());
}

TokenStore& TokenStore::operator=(TokenStore&& other) noexcept {
  if (this != &other) {
    anyone_ = std::move(other.anyone_);  // set only where a store is made, before it serves
    replace(std::move(other));
  }
  return *this;
}

void TokenStore::replace(TokenStore&& fresh) {
  auto entries = fresh.snapshot();
  {
    std::lock_guard lock(fresh.mutex_);
    fresh.entries_ = std::make_shared<const Entries>();
  }
  std::lock_guard lock(mutex_);
  // The old entries go when the last request holding one of their tenants is done with it.
  entries_ = std::move(entries);
}

std::shared_ptr<const TokenStore::Entries> TokenStore::snapshot() const {
  std::lock_guard lock(mutex_);
  return entries_;
}

std::size_t TokenStore::size() const {
  return snapshot()->size();
}

std::shared_ptr<const Tenant> TokenStore::find(std::string_view token) const {
  Digest presented = sha256(token);
  auto entries = snapshot();
  const Tenant* match = nullptr;
  for (const auto& e : *entries) {
    // No early exit: every digest is compared, whichever matches.
    bool equal = CRYPTO_memcmp(presented.data(), e.digest.data(), presented.size()) == 0;
    if (equal && match == nullptr) match = &e.tenant;
  }
  // Shares ownership of the whole snapshot: the tenant outlives a replace() that comes now.
  return match ? std::shared_ptr<const Tenant>(entries, match) : nullptr;
}

std::shared_ptr<const Tenant> TokenStore::find_tenant(std::string_view name) const {
  if (anyone_) return name == anyone_->name ? anyone_ : nullptr;
  auto entries = snapshot();
  for (const auto& e : *entries)
    if (e.tenant.name == name) return std::shared_ptr<const Tenant>(entries, &e.tenant);
  return nullptr;
}

std::vector<std::string> TokenStore::tenant_names() const {
  std::vector<std::string> names;
  if (anyone_) names.push_back(anyone_->name);
  for (const auto& e : *snapshot()) names.push_back(e.tenant.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace sandgate::auth
