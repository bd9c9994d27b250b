#include "tests/support/server_process.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "bench/common/measure.hpp"
#include "common/host_port.hpp"
#include "tests/support/http_client.hpp"

namespace sandgate::test {

namespace {

int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

ServerProcess::ServerProcess(std::string name, std::vector<std::string> argv_s,
                             std::vector<std::string> env_s, LaunchOptions options)
    : name_(std::move(name)), stop_grace_(options.stop_grace) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error(name_ + ": pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int failed = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (failed) {
    pid_ = -1;
    ::close(out[0]);
    throw std::runtime_error(name_ + ": cannot start " + argv_s[0]);
  }
  // First stdout line: "sandgate listening on http://127.0.0.1:PORT/mcp"
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  // The port: between the URL's last ':' and the '/' of its path, read as every port is.
  std::optional<std::uint16_t> port;
  if (auto colon = line.rfind(':'); colon != std::string::npos) {
    std::string_view after = std::string_view(line).substr(colon + 1);
    port = parse_port(after.substr(0, after.find('/')));
  }
  if (!port) give_up(name_ + " did not say where it listens (its stdout: " + line + ")");
  endpoint_ = {boost::asio::ip::make_address("127.0.0.1"), *port};
  if (!options.ready_path.empty()) wait_until_ready(options.ready_path, options.ready_limit);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop_or_kill(stop_grace_);
}

long ServerProcess::rss_kib() const {
  return bench::proc_status_kib(pid_, "VmRSS");
}

int ServerProcess::stop(int sig, std::chrono::milliseconds limit) {
  if (pid_ <= 0) return -1;  // kill(-1, …) would signal every process we may signal
  ::kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return exit_status(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

int ServerProcess::stop_or_kill(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  if (int status = stop(SIGTERM, grace); status >= 0) return status;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return exit_status(status);
}

void ServerProcess::wait_until_ready(const std::string& path, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    // A server that exited will never be ready: say so now instead of at the deadline.
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      give_up(name_ + " exited while starting, status " + std::to_string(status));
    }
    try {
      if (http_request(endpoint_, http::verb::get, path, {}, {}, limit).status == 200) return;
    } catch (const std::exception&) {
      // Not listening yet, or closed: try again.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  give_up(name_ + " did not become ready within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s");
}

void ServerProcess::give_up(const std::string& why) {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  throw std::runtime_error(why);
}

}  // namespace sandgate::test
