#include "namespace_processes.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace sandgate::sandbox {
namespace {

std::string pid_namespace_of(const std::string& pid) {
  char target[64];
  ssize_t n = ::readlink(("/proc/" + pid + "/ns/pid").c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

struct ProcessFacts {
  long innermost_pid = 0;              // its pid in the innermost namespace it belongs to
  unsigned long long start_ticks = 0;  // clock ticks after boot
};

std::optional<ProcessFacts> facts_of(const std::string& pid) {
  ProcessFacts facts;
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index)
    if (index == 22) facts.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  std::ifstream status("/proc/" + pid + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    auto last = line.find_last_of(" \t");
    facts.innermost_pid = std::strtol(line.c_str() + last + 1, nullptr, 10);
    return facts;
  }
  return std::nullopt;
}

}  // namespace

void interrupt_interpreter(pid_t init, std::uint64_t since_boottime_ns) {
  std::string init_pid = std::to_string(init);
  std::string ns = pid_namespace_of(init_pid);
  if (ns.empty()) return;
  const unsigned long long ns_per_tick =
      1'000'000'000ull / static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK));
  const unsigned long long since_ticks = since_boottime_ns / ns_per_tick;
  pid_t interpreter = -1;
  for (int pass = 0; pass < 8; ++pass) {
    int killed = 0;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* entry = ::readdir(proc)) {
      if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
      std::string pid = entry->d_name;
      if (pid == init_pid || pid_namespace_of(pid) != ns) continue;
      auto facts = facts_of(pid);
      if (!facts) continue;  // gone meanwhile
      if (facts->innermost_pid == 2) {
        interpreter = static_cast<pid_t>(std::atol(pid.c_str()));
      } else if (facts->start_ticks >= since_ticks) {
        ::kill(static_cast<pid_t>(std::atol(pid.c_str())), SIGKILL);
        ++killed;
      }
    }
    ::closedir(proc);
    if (killed == 0) break;
  }
  if (interpreter > 0) ::kill(interpreter, SIGINT);
}

}  // namespace sandgate::sandbox
