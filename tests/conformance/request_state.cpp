#include "request_state.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace sandgate::conformance {
namespace {

constexpr std::string_view kDomain = "sandgate-conformance-request-state-v1:";

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

RequestStateSigner::RequestStateSigner() {
  if (RAND_bytes(key_.data(), static_cast<int>(key_.size())) != 1)
    throw std::runtime_error("RAND_bytes failed");
}

std::string RequestStateSigner::mac(std::string_view data) const {
  std::string input(kDomain);
  input.append(data);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
            reinterpret_cast<const unsigned char*>(input.data()), input.size(), out, &length))
    throw std::runtime_error("HMAC failed");
  return to_hex(std::string_view(reinterpret_cast<const char*>(out), length));
}

std::string RequestStateSigner::sign(const nlohmann::json& payload) const {
  std::string data = to_hex(payload.dump());
  return data + "." + mac(data);
}

std::optional<nlohmann::json> RequestStateSigner::verify(std::string_view state) const {
  auto dot = state.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view data = state.substr(0, dot), tag = state.substr(dot + 1);
  std::string expected = mac(data);
  if (tag.size() != expected.size() || CRYPTO_memcmp(tag.data(), expected.data(), tag.size()) != 0)
    return std::nullopt;
  auto text = from_hex(data);
  if (!text) return std::nullopt;
  auto payload = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (payload.is_discarded() || !payload.is_object()) return std::nullopt;
  return payload;
}

}  // namespace sandgate::conformance
