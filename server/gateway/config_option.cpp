#include "server/gateway/config_option.hpp"

#include <sstream>
#include <stdexcept>

namespace sandgate::server::options_detail {

std::uint64_t to_u64(const std::string& v, std::uint64_t min, std::uint64_t max) {
  std::size_t used = 0;
  unsigned long long n = std::stoull(v, &used);
  if (used != v.size() || n < min || n > max)
    throw std::invalid_argument("expected a whole number from " + std::to_string(min) + " to " +
                                std::to_string(max));
  return n;
}

double to_positive(const std::string& v) {
  std::size_t used = 0;
  double d = std::stod(v, &used);
  if (used != v.size() || !(d > 0)) throw std::invalid_argument("expected a positive number");
  return d;
}

bool to_bool(const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v.empty()) return true;
  if (v == "0" || v == "false" || v == "no") return false;
  throw std::invalid_argument("expected true or false");
}

std::vector<std::string> to_list(const std::string& v) {
  std::vector<std::string> out;
  std::istringstream in(v);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace sandgate::server::options_detail
