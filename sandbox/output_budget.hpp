#pragma once
// What a call keeps of its program's output: stdout and stderr share one cap, and what is over
// it is read and dropped (never buffered), so a flood cannot grow the gateway's memory.
#include <algorithm>
#include <cstddef>
#include <string>

namespace sandgate::sandbox {

struct OutputBudget {
  std::size_t remaining;
  bool truncated = false;
  void take(std::string& sink, const char* data, std::size_t n) {
    std::size_t keep = std::min(n, remaining);
    sink.append(data, keep);
    remaining -= keep;
    if (keep < n) truncated = true;
  }
};

}  // namespace sandgate::sandbox
