#include "session_id.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace sandgate::session {

namespace {
constexpr std::string_view kHandleMark = "sbx_";
constexpr std::string_view kTaskMark = "task_";

bool is_random_part(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Splits off "<replica>." when there is one; false when what precedes the dot is no replica.
bool strip_replica(std::string_view& id) {
  auto dot = id.find('.');
  if (dot == std::string_view::npos) return true;
  if (!is_replica_name(id.substr(0, dot))) return false;
  id.remove_prefix(dot + 1);
  return true;
}

std::string marked_id(std::string_view replica, std::string_view mark) {
  std::string id = new_session_id();
  return (replica.empty() ? std::string() : std::string(replica) + ".") + std::string(mark) + id;
}

bool looks_marked(std::string_view id, std::string_view mark) {
  if (!strip_replica(id) || id.substr(0, mark.size()) != mark) return false;
  return is_random_part(id.substr(mark.size()));
}
}  // namespace

std::string new_handle_id(std::string_view replica) {
  return marked_id(replica, kHandleMark);
}
std::string new_task_id(std::string_view replica) {
  return marked_id(replica, kTaskMark);
}
bool looks_like_handle(std::string_view id) {
  return looks_marked(id, kHandleMark);
}
bool looks_like_task_id(std::string_view id) {
  return looks_marked(id, kTaskMark);
}

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
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  // A client chooses the name in the ids it sends, and the name becomes part of a peer's host
  // name: nothing a resolver could read as a number (an IPv4 address in decimal, octal with a
  // leading 0, or hex with 0x) is a replica name.
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_hex = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); };
  if (std::all_of(name.begin(), name.end(), is_digit)) return false;
  if (name.size() >= 2 && name[0] == '0' && name[1] == 'x' &&
      std::all_of(name.begin() + 2, name.end(), is_hex))
    return false;
  return true;
}

std::string_view owner_replica(std::string_view id) {
  auto dot = id.find('.');
  return dot == std::string_view::npos ? std::string_view() : id.substr(0, dot);
}

bool looks_like_session_id(std::string_view id) {
  return strip_replica(id) && is_random_part(id);
}

std::string_view log_prefix(std::string_view id) {
  // The random part tells sessions apart; a replica name in front would be the same on every line.
  if (auto dot = id.find('.'); dot != std::string_view::npos) id = id.substr(dot + 1);
  for (auto mark : {kHandleMark, kTaskMark})
    if (id.substr(0, mark.size()) == mark) return id.substr(0, mark.size() + 8);
  return id.substr(0, 8);
}

}  // namespace sandgate::session
