#include "session_id.hpp"

#include <openssl/rand.h>

#include <stdexcept>

namespace sandgate::session {

std::string new_session_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

bool looks_like_session_id(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string_view log_prefix(std::string_view id) {
  return id.substr(0, 8);
}

}  // namespace sandgate::session
