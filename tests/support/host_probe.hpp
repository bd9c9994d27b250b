#pragma once
// What a gateway left on the host, read from /proc and /sys: shared by the integration tests
// and the soak driver, which check the same things after a run.
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <compare>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sandgate::test {

// The whole of a /proc or /sys file; "" if it cannot be read. A process can exit between open and
// read (read then fails with ESRCH): libstdc++'s filebuf throws from underflow in that case when
// read through istreambuf_iterator, so /proc is read with plain read(2) here.
inline std::string read_proc(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(fd);
  return text;
}

// Entries of a /proc directory, tolerant of entries vanishing while it is read.
inline std::vector<std::filesystem::path> proc_entries(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    out.push_back(it->path());
  return out;
}

// The instance directories ("sandgate-<pid>-<start>-<n>") of a gateway process in every
// hierarchy, and for each the number of sandbox cgroups in it. Other gateways (tests run side by
// side) make and remove their cgroups meanwhile: a walk that met a directory vanishing under it
// is incomplete, and is walked again rather than taken as "none".
inline std::vector<std::pair<std::filesystem::path, int>> instance_dirs_of(pid_t gateway) {
  const std::string prefix = "sandgate-" + std::to_string(gateway) + "-";
  std::vector<std::pair<std::filesystem::path, int>> found;
  for (int attempt = 0; attempt < 50; ++attempt) {
    found.clear();
    bool complete = true;
    std::error_code ec;
    auto it = std::filesystem::recursive_directory_iterator("/sys/fs/cgroup", ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 5) it.disable_recursion_pending();
      std::error_code entry_ec;
      if (!it->is_directory(entry_ec)) continue;
      if (it->path().filename().string().rfind(prefix, 0) != 0) continue;
      int sandboxes = 0;
      for (const auto& child : std::filesystem::directory_iterator(it->path(), entry_ec))
        if (child.is_directory(entry_ec)) ++sandboxes;
      found.emplace_back(it->path(), sandboxes);
      it.disable_recursion_pending();
    }
    complete = !ec;
    if (complete) break;
  }
  return found;
}

// cgroup directories of a gateway process: its instance directories and the sandbox cgroups
// inside them. `sandboxes_only` counts just the latter (a running gateway keeps its instance
// directories).
inline int cgroups_of(pid_t gateway, bool sandboxes_only = false) {
  int n = 0;
  for (const auto& [dir, sandboxes] : instance_dirs_of(gateway))
    n += sandboxes + (sandboxes_only ? 0 : 1);
  return n;
}

// The instance directories ("sandgate-<pid>-<start>-<n>") of a gateway process, in every
// hierarchy.
inline std::vector<std::filesystem::path> instance_cgroups_of(pid_t gateway) {
  std::vector<std::filesystem::path> out;
  for (const auto& [dir, sandboxes] : instance_dirs_of(gateway)) out.push_back(dir);
  return out;
}

inline int sandbox_cgroups_of(pid_t gateway) {
  return cgroups_of(gateway, true);
}

// Direct children of `pid` from every one of its threads: a gateway's sandbox supervisors.
inline std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& task : proc_entries("/proc/" + std::to_string(pid) + "/task")) {
    std::istringstream list(read_proc(task / "children"));
    for (pid_t child; list >> child;) out.push_back(child);
  }
  return out;
}

// Alive: exists and is not a zombie (a dead orphan waits for init to reap it; it holds nothing).
inline bool process_alive(pid_t pid) {
  std::string text = read_proc("/proc/" + std::to_string(pid) + "/stat");
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// A process's start time (clock ticks after boot, /proc/PID/stat field 22); 0 if it is gone. A
// pid with the same start time is the same process, not a later one that reused the number.
inline unsigned long long start_time_of(pid_t pid) {
  std::string text = read_proc("/proc/" + std::to_string(pid) + "/stat");
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  unsigned long long start = 0;
  fields >> start;
  return start;
}

struct ProcessIdentity {
  pid_t pid = 0;
  unsigned long long start_time = 0;
  auto operator<=>(const ProcessIdentity&) const = default;
};

// Every process below `pid` (children, their children…, sandboxed ones included), as seen now.
inline std::vector<ProcessIdentity> descendants_of(pid_t pid) {
  std::vector<ProcessIdentity> out;
  std::vector<pid_t> pending = children_of(pid);
  while (!pending.empty()) {
    pid_t next = pending.back();
    pending.pop_back();
    if (auto start = start_time_of(next); start != 0) out.push_back({next, start});
    for (pid_t child : children_of(next)) pending.push_back(child);
  }
  return out;
}

// Whether this very process (not a later one with its pid) is still alive.
inline bool still_alive(const ProcessIdentity& process) {
  return process_alive(process.pid) && start_time_of(process.pid) == process.start_time;
}

// Whether `process` has exited and been reaped (its /proc entry is gone, or is a later
// process's) within `limit`.
inline bool gone_within(const ProcessIdentity& process, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (start_time_of(process.pid) != process.start_time) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Mounts in the mount namespace of `pid` ("self": this process's).
inline std::size_t mount_count(const std::string& pid = "self") {
  std::istringstream table(read_proc("/proc/" + pid + "/mountinfo"));
  std::size_t n = 0;
  for (std::string line; std::getline(table, line);) ++n;
  return n;
}

// Live processes anywhere on the host (sandboxed ones included) whose command line is exactly
// `cmdline`, arguments joined by spaces. Tests give their programs distinctive command lines.
inline std::vector<pid_t> pids_running(const std::string& cmdline) {
  std::vector<pid_t> found;
  for (const auto& entry : proc_entries("/proc")) {
    std::string name = entry.filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string text = read_proc(entry / "cmdline");
    if (!text.empty() && text.back() == '\0') text.pop_back();
    for (auto& c : text)
      if (c == '\0') c = ' ';
    if (text == cmdline && process_alive(std::stoi(name))) found.push_back(std::stoi(name));
  }
  return found;
}

inline int processes_running(const std::string& cmdline) {
  return static_cast<int>(pids_running(cmdline).size());
}

// The first of pids_running(`cmdline`); 0 if none.
inline pid_t process_running(const std::string& cmdline) {
  auto found = pids_running(cmdline);
  return found.empty() ? 0 : found.front();
}

// A line of /proc/PID/status ("Uid", "CapEff"…): its value, tabs and all; "" if absent.
inline std::string status_field(pid_t pid, const std::string& field) {
  std::istringstream status(read_proc("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  return "";
}

// TCP connections a server on `port` still holds open (ESTABLISHED, or CLOSE_WAIT: the client
// has gone but the server has not closed its end yet), from /proc/net/tcp{,6}.
inline int server_connections(int port) {
  int n = 0;
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(read_proc(table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      // "  sl  local_address rem_address st ...": local is ADDR:PORT in hex, st is hex.
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      auto colon = local.rfind(':');
      if (colon == std::string::npos || local.substr(colon + 1) != wanted) continue;
      if (state == "01" || state == "08") ++n;
    }
  }
  return n;
}

// Polls `holds` until it does or `limit` passes: a slow host (CI, sanitizers, memory pressure)
// stretches every step, so tests wait for the state they need instead of a fixed time.
template <class Predicate>
bool eventually(Predicate holds, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (holds()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace sandgate::test
