#pragma once
// Starts the real sandgate binary on a free loopback port and talks HTTP to it. The HTTP client
// code lives in gateway_process.cpp, compiled once for the whole suite: Beast's templates
// instantiated in every test file made them the slowest files of the build.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/beast/http/verb.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/host_probe.hpp"

namespace sandgate::test {

namespace http = boost::beast::http;
using nlohmann::json;

// A loopback port free a moment ago, for gateways that must know each other's addresses before
// they start (replicas and their --peers).
int free_port();

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  json json_body() const { return json::parse(body); }
};

// On a pure cgroup v2 host (the VM stage sets SANDGATE_TEST_CGROUP_PARENT) a gateway gets a
// cgroup of its own below that folder, as a container or a systemd unit would give it: a cgroup
// shared with the test runner could not hand controllers to sandboxes. Gateways started with the
// same `name` share one, as a service restarted in its unit does: a later one joins the earlier
// one's leaf (its cgroup has controllers enabled, so nothing may join it directly). Elsewhere:
// no wrapper.
std::vector<std::string> own_cgroup_wrapper(const std::string& name = "");

class GatewayProcess {
 public:
  // `wrapper`, if given, runs the gateway (e.g. {"/usr/bin/unshare", "-m", "--propagation",
  // "private"}): it must exec it, so that pid() is the gateway's.
  explicit GatewayProcess(std::vector<std::string> args,
                          std::vector<std::string> env = {"SANDGATE_TOKEN=test-token"},
                          bool tls = false, std::vector<std::string> wrapper = {});
  ~GatewayProcess();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // Sends `sig` and waits (up to `limit`) for the exit status; -1 on timeout.
  int stop(int sig = SIGTERM, std::chrono::seconds limit = std::chrono::seconds(20));

  HttpReply request(http::verb verb, const std::string& target, const std::string& body = {},
                    std::map<std::string, std::string> headers = {});

  static std::map<std::string, std::string> mcp_headers(const std::string& session = {},
                                                        const std::string& token = "test-token");

  HttpReply post(const json& message, const std::string& session = {},
                 const std::string& token = "test-token");

  std::string initialize(const std::string& token = "test-token");

  // A 2026-07-28 request (no session): params carry the _meta envelope, headers mirror the
  // method (and the tool's name for tools/call).
  static json stateless_message(const std::string& method, json params, int id = 1);
  static std::map<std::string, std::string> stateless_headers(const json& message,
                                                              const std::string& token);
  // tools/call of `tool` on the stateless path; returns the CallToolResult.
  json call_stateless(const std::string& tool, json arguments,
                      const std::string& token = "test-token");

  // Sends a request, keeps the connection `hold` long without reading the answer, then closes
  // it: a client that goes away.
  void post_and_close(const json& message, const std::map<std::string, std::string>& headers,
                      std::chrono::milliseconds hold);
  // The same, holding the connection until `until` holds (a test waits for the call's program
  // to run, not for a fixed time a loaded machine may not keep); whether it held in `limit`.
  bool post_and_close_when(const json& message, const std::map<std::string, std::string>& headers,
                           const std::function<bool()>& until,
                           std::chrono::milliseconds limit = std::chrono::seconds(60));

  // tools/call execute, without assertions: safe on any thread (Catch2 asserts on one only).
  HttpReply call_execute(const std::string& session, const std::string& code,
                         const std::string& language = "python", int timeout_s = 30, int id = 1);

  // tools/call execute on the test's own thread; returns the CallToolResult.
  json execute(const std::string& session, const std::string& code,
               const std::string& language = "python", int timeout_s = 30, int id = 1);

 private:
  // Ready once its start-up probe sandbox has run; on a loaded CI machine (parallel tests, a
  // sanitizer build) that can take seconds, so the wait is generous and ends early if the
  // gateway exits.
  void wait_ready();
  // A constructor that fails runs no destructor: the gateway is killed here, or it would hold
  // the test's output pipe open and ctest would wait for it until the test's timeout.
  [[noreturn]] void give_up(const std::string& why);

  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace sandgate::test
