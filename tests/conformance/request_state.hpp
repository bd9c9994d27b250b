#pragma once
// The opaque requestState of the 2026-07-28 input_required fixtures: a JSON payload the client
// carries between rounds, HMAC-SHA256 protected with a key drawn at random per process, so a
// client can neither forge nor alter it (and a restart invalidates every outstanding state).
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::conformance {

class RequestStateSigner {
 public:
  RequestStateSigner();  // draws the key (RAND_bytes)
  // "<hex payload>.<hex HMAC>".
  std::string sign(const nlohmann::json& payload) const;
  // The payload, or nullopt when the state is malformed or its HMAC does not match.
  std::optional<nlohmann::json> verify(std::string_view state) const;

 private:
  std::string mac(std::string_view data) const;  // hex
  std::array<unsigned char, 32> key_{};
};

}  // namespace sandgate::conformance
