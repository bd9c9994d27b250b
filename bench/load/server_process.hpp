#pragma once
// A server under test, started as a child process on a loopback port: sandgate or the peer.
// Both print "... listening on http://127.0.0.1:PORT/mcp" as their first line of stdout.
#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::bench {

class ServerProcess {
 public:
  // argv[0] is an absolute path; `env` is the whole environment. `ready_path`, if set, is
  // polled until it answers 200 (sandgate's /readyz: its probe sandbox ran).
  ServerProcess(std::string name, std::vector<std::string> argv, std::vector<std::string> env,
                std::string ready_path = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
  long rss_kib() const;
  // SIGTERM, then SIGKILL after 30 s; returns the exit status (128+signal if killed).
  int stop();

 private:
  void wait_until_ready(const std::string& path);

  std::string name_;
  pid_t pid_ = -1;
  boost::asio::ip::tcp::endpoint endpoint_;
};

// GET of `path` on a loopback server: the status and the body (status 0 if unreachable).
std::pair<int, std::string> http_get(boost::asio::ip::tcp::endpoint server,
                                     const std::string& path);

}  // namespace sandgate::bench
