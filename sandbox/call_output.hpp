#pragma once
// One call's stdout and stderr as they are read: both held to the sandbox's output budget and
// shown to the request's observer as they come, then made valid UTF-8 for its result. The same
// for a fresh program and for a call in an interpreter.
#include <cstddef>
#include <string>
#include <utility>

#include "common/utf8.hpp"
#include "output_budget.hpp"
#include "sandbox.hpp"

namespace sandgate::sandbox {

class CallOutput {
 public:
  CallOutput(std::size_t budget_bytes, const OutputObserver& observer)
      : budget{budget_bytes}, observer_(observer ? &observer : nullptr) {}

  OutputSink out() { return {stdout_bytes_, OutputStream::out, observer_}; }
  OutputSink err() { return {stderr_bytes_, OutputStream::err, observer_}; }

  // Into the result; a read may have ended inside a UTF-8 character, so both are mended.
  void move_to(RunResult& result) {
    make_valid_utf8(stdout_bytes_);
    make_valid_utf8(stderr_bytes_);
    result.stdout_text = std::move(stdout_bytes_);
    result.stderr_text = std::move(stderr_bytes_);
    result.truncated = budget.truncated;
  }

  OutputBudget budget;  // stdout and stderr share it

 private:
  std::string stdout_bytes_, stderr_bytes_;
  const OutputObserver* observer_;
};

}  // namespace sandgate::sandbox
