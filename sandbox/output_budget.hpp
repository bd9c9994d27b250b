#pragma once
// What a call keeps of its program's output: stdout and stderr share one cap, and what is over
// it is read and dropped (never buffered), so a flood cannot grow the gateway's memory.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace sandgate::sandbox {

struct OutputBudget {
  std::size_t remaining;
  bool truncated = false;
  // Returns how many of the n bytes were kept (the first ones).
  std::size_t take(std::string& sink, const char* data, std::size_t n) {
    std::size_t keep = std::min(n, remaining);
    sink.append(data, keep);
    remaining -= keep;
    if (keep < n) truncated = true;
    return keep;
  }
};

enum class OutputStream { out, err };

// Sees a call's output as it is read: only the bytes the budget keeps, in order per stream,
// raw (a chunk may end inside a UTF-8 character). Called on the I/O thread that reads the
// pipes: it must be cheap, must not block and must not throw.
using OutputObserver = std::function<void(OutputStream which, std::string_view bytes)>;

// Where one stream's kept bytes go: the call's text, and the request's observer if any.
struct OutputSink {
  std::string& bytes;
  OutputStream which;
  const OutputObserver* observer = nullptr;
  void take(OutputBudget& budget, const char* data, std::size_t n) {
    std::size_t kept = budget.take(bytes, data, n);
    if (kept > 0 && observer != nullptr && *observer) (*observer)(which, {data, kept});
  }
};

}  // namespace sandgate::sandbox
