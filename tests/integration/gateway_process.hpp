#pragma once
// The integration tests' gateway: the real sandgate binary started by the shared launcher
// (tests/support/server_process.hpp) and spoken to by the shared HTTP client, with the Catch2
// checks the tests expect from every helper. The client code lives in tests/support, compiled
// once: Beast's templates instantiated in every test file made them the slowest of the build.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/beast/http/verb.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gateway_launch.hpp"
#include "tests/support/host_probe.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/mcp_messages.hpp"
#include "tests/support/server_process.hpp"

namespace sandgate::test {

// A CallToolResult's text content, each item on a line of its own.
inline std::string tool_text(const json& result) {
  std::string all;
  for (const auto& c : result["content"]) all += c.value("text", "") + "\n";
  return all;
}

// `sandgate ARGS` run to its end (a subcommand, or a start that fails): exit status and output
// (stderr with stdout).
struct CliRun {
  int status = -1;
  std::string out;
};
// On a pure cgroup v2 host the command gets a cgroup of its own, as a gateway does
// (own_cgroup_wrapper): `environments build` makes sandboxes, and the runner's cgroup holds
// other processes.
inline CliRun run_sandgate(const std::string& args) {
  CliRun c;
  std::string command =
      own_cgroup_shell_prefix() + std::string(SANDGATE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) c.out.append(buffer, n);
  int status = ::pclose(pipe);
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

class GatewayProcess {
 public:
  // `wrapper`, if given, runs the gateway (e.g. {"/usr/bin/unshare", "-m", "--propagation",
  // "private"}): it must exec it, so that pid() is the gateway's.
  // `ready_limit`: how long /readyz may take to answer 200 (a gateway building environments
  // answers 503 until they are built).
  explicit GatewayProcess(std::vector<std::string> args,
                          std::vector<std::string> env = {"SANDGATE_TOKEN=test-token"},
                          bool tls = false, std::vector<std::string> wrapper = {},
                          std::chrono::milliseconds ready_limit = std::chrono::seconds(60));

  int port() const { return server_->port(); }
  pid_t pid() const { return server_->pid(); }

  // Sends `sig` and waits (up to `limit`) for the exit status; -1 on timeout.
  int stop(int sig = SIGTERM, std::chrono::seconds limit = std::chrono::seconds(20)) {
    return server_->stop(sig, limit);
  }

  HttpReply request(http::verb verb, const std::string& target, const std::string& body = {},
                    std::map<std::string, std::string> headers = {});

  static std::map<std::string, std::string> mcp_headers(const std::string& session = {},
                                                        const std::string& token = "test-token") {
    return test::mcp_headers(session, token);
  }

  HttpReply post(const json& message, const std::string& session = {},
                 const std::string& token = "test-token");

  std::string initialize(const std::string& token = "test-token");

  // A 2026-07-28 request (no session): params carry the _meta envelope, headers mirror the
  // method (and the tool's name for tools/call).
  static json stateless_message(const std::string& method, json params, int id = 1) {
    return test::stateless_message(method, std::move(params), id);
  }
  static std::map<std::string, std::string> stateless_headers(const json& message,
                                                              const std::string& token) {
    return test::stateless_headers(message, token);
  }
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
                         const std::string& language = "python", int timeout_s = 30, int id = 1,
                         const std::string& token = "test-token");

  // tools/call execute on the test's own thread; returns the CallToolResult.
  json execute(const std::string& session, const std::string& code,
               const std::string& language = "python", int timeout_s = 30, int id = 1,
               const std::string& token = "test-token");

 private:
  // Ready once its start-up probe sandbox has run (LaunchOptions: up to 60 s, ended early if the
  // gateway exits); engaged unless the constructor failed the test.
  std::optional<ServerProcess> server_;
};

// The value of one /metrics line (its exact name with labels); -1 when absent.
long metric(GatewayProcess& gw, const std::string& name);

// Processes of this test's own sandboxes (host uid in own_sandbox_ids(); any process where that
// range is not known) whose command line is exactly `cmdline`. Tests run side by side: another
// test's `sleep 60` is not this one's.
inline std::vector<pid_t> sandboxed_pids(const std::string& cmdline) {
  auto ids = own_sandbox_ids();
  std::vector<pid_t> mine;
  for (pid_t pid : pids_running(cmdline)) {
    std::istringstream uids(status_field(pid, "Uid"));
    std::uint64_t real_uid = 0;
    if (!ids || ((uids >> real_uid) && ids->contains(real_uid))) mine.push_back(pid);
  }
  return mine;
}

inline int sandboxed_running(const std::string& cmdline) {
  return static_cast<int>(sandboxed_pids(cmdline).size());
}

// Declared after the futures of long calls: should a check fail, the gateway stops before those
// futures wait for their calls (which would otherwise run for minutes), since shutdown answers
// them.
struct StopGatewayFirst {
  GatewayProcess& gw;
  ~StopGatewayFirst() {
    if (gw.pid() > 0) gw.stop(SIGTERM);
  }
};

}  // namespace sandgate::test
