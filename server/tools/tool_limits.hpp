#pragma once
// What one `execute` call may ask for and send: timeouts, stdin, files in and out. The defaults
// live here; the gateway's option table writes into them (server/gateway/config.cpp).
#include <chrono>
#include <cstdint>

#include "sandbox/limits.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

struct ToolLimits {
  std::uint32_t timeout_default_s = 60;
  std::uint32_t timeout_max_s = 300;
  std::uint64_t stdin_max_bytes = 1 << 20;
  std::chrono::seconds progress_interval{5};  // between "running for N s" notifications
  std::uint32_t task_timeout_max_s = 1800;    // timeout_seconds of a call run as a task
  // 2026-07-28 tasks extension: a call still running after this becomes a task.
  std::chrono::milliseconds task_after{10'000};
  // Files in (`files`) and out (`return_files`).
  std::uint64_t file_in_max_bytes = 10 << 20;   // --file-in-max-bytes: one file, decoded
  std::uint64_t files_in_max_bytes = 10 << 20;  // --files-in-max-bytes: all of a call's
  std::uint32_t files_in_max_count = 100;
  std::uint32_t return_files_max = 20;               // --return-files-max
  std::uint64_t file_inline_max_bytes = 256 << 10;   // --file-inline-max-bytes; a call's total
                                                     // inline is 4 times this
  std::uint64_t resource_read_max_bytes = 50 << 20;  // --resource-read-max-bytes
  // Facts of other layers the tool bounds by or tells the model, defaulting to theirs: the
  // gateway sets them from its sandbox and registry settings (effective_tool_limits).
  std::uint64_t output_max_bytes = sandbox::Limits{}.output_bytes;  // bounds the response too
  std::chrono::seconds idle_timeout = session::RegistryConfig{}.idle_timeout;  // a handle ends

  bool operator==(const ToolLimits&) const = default;
};

}  // namespace sandgate::server
