#include "bench/common/measure.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

namespace sandgate::bench {

Stats stats(std::vector<double> samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    return samples[std::min(samples.size() - 1, static_cast<std::size_t>(q * samples.size()))];
  };
  double sum = 0;
  for (double x : samples) sum += x;
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.mean = sum / static_cast<double>(samples.size());
  return s;
}

double run_bare(const std::vector<std::string>& argv_s) {
  std::vector<char*> argv;
  for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* env[] = {const_cast<char*>("PATH=/usr/bin:/bin"), const_cast<char*>("HOME=/tmp"),
                 const_cast<char*>("LANG=C.UTF-8"), nullptr};
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  auto start = Clock::now();
  pid_t pid;
  int failed = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), env);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (failed) {
    ::close(out[0]);
    return -1;
  }
  char buffer[1 << 16];
  while (::read(out[0], buffer, sizeof buffer) > 0) {
  }
  ::close(out[0]);
  int status;
  ::waitpid(pid, &status, 0);
  return ms_since(start);
}

long proc_status_kib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

void reset_peak_rss(pid_t pid) {
  std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";
}

long host_used_kib() {
  std::ifstream meminfo("/proc/meminfo");
  long total = 0, available = 0;
  std::string key;
  long value;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemTotal:") total = value;
    if (key == "MemAvailable:") available = value;
  }
  return total - available;
}

std::string machine() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string model;
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  long mem_gib = sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGE_SIZE) >> 30;
  return std::to_string(std::thread::hardware_concurrency()) + " cores (" + model + "), " +
         std::to_string(mem_gib) + " GiB";
}

}  // namespace sandgate::bench
