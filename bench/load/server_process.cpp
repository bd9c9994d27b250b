#include "bench/load/server_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "bench/common/measure.hpp"

namespace sandgate::bench {

namespace http = boost::beast::http;

ServerProcess::ServerProcess(std::string name, std::vector<std::string> argv_s,
                             std::vector<std::string> env_s, std::string ready_path)
    : name_(std::move(name)) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
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
    ::close(out[0]);
    throw std::runtime_error(name_ + ": cannot start " + argv_s[0]);
  }
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  auto colon = line.rfind(':');
  if (colon == std::string::npos) {
    stop();
    throw std::runtime_error(name_ + " did not report its port");
  }
  endpoint_ = {boost::asio::ip::make_address("127.0.0.1"),
               static_cast<unsigned short>(std::stoi(line.substr(colon + 1)))};
  if (!ready_path.empty()) wait_until_ready(ready_path);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop();
}

long ServerProcess::rss_kib() const {
  return proc_status_kib(pid_, "VmRSS");
}

int ServerProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 3000; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return 128 + SIGKILL;
}

void ServerProcess::wait_until_ready(const std::string& path) {
  for (int attempt = 0; attempt < 400; ++attempt) {
    if (http_get(endpoint_, path).first == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error(name_ + " did not become ready");
}

std::pair<int, std::string> http_get(boost::asio::ip::tcp::endpoint server,
                                     const std::string& path) {
  try {
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(5));
    stream.connect(server);
    http::request<http::empty_body> request{http::verb::get, path, 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(stream, request);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    return {response.result_int(), response.body()};
  } catch (const std::exception&) {
    return {0, {}};
  }
}

}  // namespace sandgate::bench
