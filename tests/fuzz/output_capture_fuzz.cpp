// Fuzz target: how a call keeps its program's output. The input is split into chunks alternately
// written to stdout and stderr under a small shared cap, as the pipes deliver them; then the
// kept bytes are made valid UTF-8. The kept output is exactly the first bytes up to the cap,
// `truncated` says whether anything was dropped, and the text is valid UTF-8 that equals the
// input wherever the input was valid.
#include <cstdlib>
#include <cstring>

#include "common/utf8.hpp"
#include "sandbox/output_budget.hpp"

using namespace sandgate::sandbox;
using sandgate::is_valid_utf8;
using sandgate::make_valid_utf8;
using sandgate::sanitize_utf8;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::size_t cap = data[0] * 4u;  // 0 .. 1020 bytes
  std::size_t chunk = data[1] % 64 + 1;
  const char* bytes = reinterpret_cast<const char*>(data + 2);
  std::size_t n = size - 2;

  OutputBudget budget{cap};
  std::string out, err, expected_out, expected_err;
  std::size_t kept_total = 0;
  for (std::size_t at = 0, turn = 0; at < n; at += chunk, ++turn) {
    std::size_t len = std::min(chunk, n - at);
    auto& sink = turn % 2 ? err : out;
    auto& expected = turn % 2 ? expected_err : expected_out;
    std::size_t keep = std::min(len, cap - kept_total);
    expected.append(bytes + at, keep);
    kept_total += keep;
    budget.take(sink, bytes + at, len);
  }
  if (out != expected_out || err != expected_err) std::abort();
  if (budget.truncated != (n > cap)) std::abort();
  if (out.size() + err.size() != std::min(n, cap)) std::abort();

  std::string copy = out;
  bool replaced = false;
  make_valid_utf8(out, &replaced);
  if (!is_valid_utf8(out)) std::abort();
  if (replaced == is_valid_utf8(copy)) std::abort();
  if (!replaced && out != copy) std::abort();
  if (sanitize_utf8(copy) != out) std::abort();
  if (sanitize_utf8(out) != out) std::abort();  // idempotent
  return 0;
}
