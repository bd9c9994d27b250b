#pragma once
// The one launcher of servers under test, for the integration tests, the soak driver and the
// benchmark: the real sandgate binary, or the benchmark's peer. Both print "... listening on
// http://127.0.0.1:PORT/mcp" as their first line of stdout; that line gives the port, so every
// server listens on an ephemeral port and parallel runs never collide.
#include <signal.h>
#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace sandgate::test {

struct LaunchOptions {
  // Polled with GET until it answers 200 (sandgate's /readyz: its probe sandbox ran). Empty: no
  // wait (a TLS listener, which plain HTTP cannot probe; the peer, ready once it listens).
  std::string ready_path;
  // How long readiness may take: on a loaded CI machine (parallel tests, a sanitizer build) the
  // probe sandbox can take seconds.
  std::chrono::milliseconds ready_limit = std::chrono::seconds(60);
  // What the destructor gives SIGTERM before it sends SIGKILL.
  std::chrono::milliseconds stop_grace = std::chrono::seconds(20);
};

class ServerProcess {
 public:
  // argv[0] is an absolute path: the server, or a wrapper that execs it (so that pid() is the
  // server's). `env` is the whole environment. Throws std::runtime_error, with the server
  // killed, when it cannot start, does not say where it listens, exits while starting or does
  // not become ready in time.
  ServerProcess(std::string name, std::vector<std::string> argv, std::vector<std::string> env,
                LaunchOptions options = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }  // -1 once stopped
  int port() const { return endpoint_.port(); }
  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
  long rss_kib() const;

  // Sends `sig` and waits up to `limit` for the exit status (128+signal if killed by one); -1
  // if it is still running then (a test checks that a signal ends it) or there is no process.
  int stop(int sig = SIGTERM, std::chrono::milliseconds limit = std::chrono::seconds(20));
  // SIGTERM, then SIGKILL after `grace`: the process is gone on return, whatever it does.
  int stop_or_kill(std::chrono::milliseconds grace = std::chrono::seconds(30));

 private:
  void wait_until_ready(const std::string& path, std::chrono::milliseconds limit);
  // A constructor that throws runs no destructor: the server is killed here, or it would hold
  // the caller's output pipe open (ctest would wait for it until the test's timeout).
  [[noreturn]] void give_up(const std::string& why);

  std::string name_;
  pid_t pid_ = -1;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::chrono::milliseconds stop_grace_;
};

}  // namespace sandgate::test
