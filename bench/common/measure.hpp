#pragma once
// What every benchmark here measures with: percentiles, the floor (a program spawned bare on the
// host), process and host memory, and a description of the machine.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace sandgate::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Stats {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
  std::size_t count = 0;
};
Stats stats(std::vector<double> samples);

// fork+exec+wait of `argv` (absolute path first) with the sandbox's scrubbed environment,
// stdout into a pipe that is read to the end and discarded, stderr to /dev/null; milliseconds,
// or -1 on failure.
double run_bare(const std::vector<std::string>& argv);

// A field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM"); -1 when the process is gone.
long proc_status_kib(pid_t pid, const std::string& field);
// Resets the peak RSS (VmHWM) of `pid` to its current RSS (clear_refs 5).
void reset_peak_rss(pid_t pid);
// MemTotal - MemAvailable from /proc/meminfo, KiB: what the host as a whole holds.
long host_used_kib();

// "2 cores (model), 23 GiB".
std::string machine();

}  // namespace sandgate::bench
