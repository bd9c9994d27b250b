#include "output_bound.hpp"

namespace sandgate::server {
namespace {

std::uint64_t cost_of(const std::string& text) {
  std::uint64_t cost = 0;
  for (unsigned char c : text) cost += response_cost(c);
  return cost;
}

// Keeps the longest prefix costing at most `allowance`, ending on a character boundary.
void cut_to(std::string& text, std::uint64_t allowance) {
  std::uint64_t cost = 0;
  std::size_t keep = 0;
  while (keep < text.size()) {
    std::uint64_t next = cost + response_cost(static_cast<unsigned char>(text[keep]));
    if (next > allowance) break;
    cost = next;
    ++keep;
  }
  // Not inside a UTF-8 sequence: back off to its lead byte, which goes too.
  while (keep > 0 && keep < text.size() && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80)
    --keep;
  text.resize(keep);
}

}  // namespace

std::size_t response_cost(unsigned char byte) {
  switch (byte) {
    case '"':
    case '\\':
      return 2 + 4;  // \"  then  \\\"
    case '\b':
    case '\f':
    case '\n':
    case '\r':
    case '\t':
      return 2 + 3;  // \n  then  \\n
    default:
      return byte < 0x20 ? 6 + 7 : 1 + 1;  // \u0001  then  \\u0001
  }
}

bool bound_response_output(std::string& out, std::string& err, std::uint64_t budget) {
  std::uint64_t out_cost = cost_of(out), err_cost = cost_of(err);
  if (out_cost + err_cost <= budget) return false;
  std::uint64_t half = budget / 2;
  if (out_cost <= half) {
    cut_to(err, budget - out_cost);
  } else if (err_cost <= half) {
    cut_to(out, budget - err_cost);
  } else {
    cut_to(out, half);
    cut_to(err, budget - half);
  }
  return true;
}

}  // namespace sandgate::server
