#include "cgroup_instance.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <sstream>

#include "cgroup_tree.hpp"

namespace sandgate::sandbox {

std::string instance_name() {
  static std::atomic<int> next{1};
  pid_t pid = ::getpid();
  return std::string(kInstancePrefix) + std::to_string(pid) + "-" +
         std::to_string(process_start_time(pid).value_or(0)) + "-" + std::to_string(next++);
}

// Whether the gateway that named a directory "sandgate-<pid>-<start>-…" is still running. Names
// of older versions ("sandgate-<pid>-sb<N>") and probes ("sandgate-probe-<pid>") carry no start
// time: their pid alone decides.
bool owner_alive(const std::string& name) {
  std::string rest = name.substr(std::string(kInstancePrefix).size());
  if (rest.rfind("probe-", 0) == 0) rest = rest.substr(6);
  std::istringstream in(rest);
  long pid = 0;
  char dash = 0;
  if (!(in >> pid) || pid <= 0) return false;
  std::uint64_t start = 0;
  if (in >> dash >> start && dash == '-') {
    auto actual = process_start_time(static_cast<pid_t>(pid));
    return actual && *actual == start;
  }
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace sandgate::sandbox
