#include "session_id.hpp"

#include <openssl/rand.h>

#include <stdexcept>

namespace sandgate::session {

std::string new_session_id(std::string_view replica) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  static const char* hex = "0123456789abcdef";
  std::string id = replica.empty() ? std::string() : std::string(replica) + ".";
  for (unsigned char b : bytes) {
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

bool is_replica_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

std::string_view owner_replica(std::string_view id) {
  auto dot = id.find('.');
  return dot == std::string_view::npos ? std::string_view() : id.substr(0, dot);
}

bool looks_like_session_id(std::string_view id) {
  if (auto dot = id.find('.'); dot != std::string_view::npos) {
    if (!is_replica_name(id.substr(0, dot))) return false;
    id = id.substr(dot + 1);
  }
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string_view log_prefix(std::string_view id) {
  // The random part tells sessions apart; a replica name in front would be the same on every line.
  if (auto dot = id.find('.'); dot != std::string_view::npos) id = id.substr(dot + 1);
  return id.substr(0, 8);
}

}  // namespace sandgate::session
