#pragma once
// Tenants and their tokens. Only SHA-256 digests of tokens are kept; a presented token is
// hashed and compared with every digest in constant time (CRYPTO_memcmp), so neither the
// token's length nor its prefix shows in the time a check takes.
//
// Tokens file: one tenant per line, "#" starts a comment:
//   <sha256 hex of the token> <tenant name> [max_sessions=N] [spend_cap_usd=X]
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::auth {

using Digest = std::array<unsigned char, 32>;

struct Tenant {
  std::string name;
  std::optional<std::uint32_t> max_sessions;  // overrides the per-tenant default
  std::optional<double> spend_cap_usd;        // overrides the per-sandbox default
};

Digest sha256(std::string_view data);
std::string to_hex(const Digest& digest);

class TokenStore {
 public:
  // Throws std::runtime_error naming the line that is wrong.
  static TokenStore parse(std::string_view text);
  static TokenStore load(const std::filesystem::path& path);
  // One token for one tenant ("default"), e.g. from SANDGATE_TOKEN.
  static TokenStore single(std::string_view token, std::string tenant = "default");

  // The tenant whose token this is; every entry is compared, whatever matches first.
  const Tenant* find(std::string_view token) const;
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Digest digest;
    Tenant tenant;
  };
  std::vector<Entry> entries_;
};

}  // namespace sandgate::auth
