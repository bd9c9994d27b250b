#pragma once
// Real upstream MCP servers for the code-mode tests (issue #45), started on loopback with Node
// from tests/e2e/node_modules (installed by `npm ci` there; CI runs scripts/install-deps.sh and
// scripts/test.sh):
//   - start_everything(): @modelcontextprotocol/server-everything (pinned), Streamable HTTP, the
//     2025-11-25 era (tests/support/everything_server.mjs);
//   - start_test_upstream(era, token file, events file): a small upstream made with the official
//     SDKs that requires a bearer token, in either era (tests/support/upstream_server.mjs: its
//     tools and the events it records are described there).
// node_modules_missing() says why they cannot run here (the test then skips, loudly).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/server_process.hpp"

namespace sandgate::test {

inline std::filesystem::path e2e_dir() {
  return std::filesystem::path(SANDGATE_SOURCE_DIR) / "tests" / "e2e";
}
// Node 22 from the npm package `node` in tests/e2e (the v2 SDK needs it; the system's may be 20).
inline std::filesystem::path e2e_node() {
  return e2e_dir() / "node_modules" / ".bin" / "node";
}

// Empty when the upstreams can run; else why not.
inline std::string node_modules_missing() {
  for (const char* needed : {"node_modules/.bin/node", "node_modules/@modelcontextprotocol/sdk",
                             "node_modules/@modelcontextprotocol/server",
                             "node_modules/@modelcontextprotocol/server-everything"})
    if (!std::filesystem::exists(e2e_dir() / needed))
      return std::string("tests/e2e/") + needed + " is missing: run `npm ci` in tests/e2e";
  return {};
}

inline std::vector<std::string> node_environment() {
  std::vector<std::string> env;
  for (const char* name : {"PATH", "HOME", "TMPDIR"})
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  return env;
}

inline std::unique_ptr<ServerProcess> start_everything() {
  auto script = std::filesystem::path(SANDGATE_SOURCE_DIR) / "tests/support/everything_server.mjs";
  LaunchOptions options;
  options.stop_grace = std::chrono::seconds(2);
  return std::make_unique<ServerProcess>(
      "server-everything", std::vector<std::string>{e2e_node().string(), script.string()},
      node_environment(), options);
}

// era: "2025" (v1 SDK, sessions) or "2026" (v2 SDK, 2026-07-28 only). tls_dir: serve HTTPS
// with its server.pem and server.key (make_test_certificates).
inline std::unique_ptr<ServerProcess> start_test_upstream(
    const std::string& era, const std::filesystem::path& token_file,
    const std::filesystem::path& events_file, const std::filesystem::path& tls_dir = {}) {
  auto script = std::filesystem::path(SANDGATE_SOURCE_DIR) / "tests/support/upstream_server.mjs";
  LaunchOptions options;
  options.stop_grace = std::chrono::seconds(2);
  std::vector<std::string> argv{
      e2e_node().string(), script.string(),     "--era",    era,
      "--token-file",      token_file.string(), "--events", events_file.string()};
  if (!tls_dir.empty()) {
    argv.push_back("--tls");
    argv.push_back(tls_dir.string());
  }
  return std::make_unique<ServerProcess>("test upstream (" + era + ")", std::move(argv),
                                         node_environment(), options);
}

// A throwaway CA (dir/ca.pem) and a server certificate it signs for `alt_name` (e.g.
// "DNS:localhost"): dir/server.pem and dir/server.key (tests/support/test_tls.py).
inline void make_test_certificates(const std::filesystem::path& dir, const std::string& alt_name) {
  auto support = std::filesystem::path(SANDGATE_SOURCE_DIR) / "tests/support";
  std::string command = "/usr/bin/python3 -c \"import sys; sys.path.insert(0, '" +
                        support.string() + "'); import test_tls; test_tls.make_ca('" +
                        dir.string() + "'); test_tls.sign_server_certificate('" + dir.string() +
                        "', ['" + alt_name + "'])\" > /dev/null";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("cannot make test certificates in " + dir.string());
}

// The events an upstream recorded so far (one JSON object a line).
inline std::vector<nlohmann::json> upstream_events(const std::filesystem::path& events_file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(events_file);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line, nullptr, false));
  return out;
}

// Waits up to `limit` for an event named `name`; the first such event, or nullopt.
inline std::optional<nlohmann::json> wait_for_event(const std::filesystem::path& events_file,
                                                    const std::string& name,
                                                    std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (auto& event : upstream_events(events_file))
      if (event.is_object() && event.value("event", "") == name) return event;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

}  // namespace sandgate::test
