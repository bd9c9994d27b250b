// 2026-07-28 clients on the real binary: no session, state kept in a sandbox handle the model
// passes back; the handle belongs to its tenant, ends on request or when idle, and a client
// closing its response stream cancels the call without losing the sandbox.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string stdout_of(const json& result) {
  return result["structuredContent"]["stdout"].get<std::string>();
}
std::string text_of(const json& result) {
  return result["content"][0]["text"].get<std::string>();
}
json bash(const std::string& code, const std::string& sandbox_id = {}) {
  json args = {{"code", code}, {"language", "bash"}};
  if (!sandbox_id.empty()) args["sandbox_id"] = sandbox_id;
  return args;
}

// A tokens file naming tenants a and b, removed at the end.
struct TwoTenants {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("sandgate-stateless-" + std::to_string(::getpid()));
  TwoTenants() {
    std::ofstream(path) << sandgate::auth::to_hex(sandgate::auth::sha256("tok-a")) << " a\n"
                        << sandgate::auth::to_hex(sandgate::auth::sha256("tok-b")) << " b\n";
    ::chmod(path.c_str(), 0600);
  }
  ~TwoTenants() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("a 2026-07-28 client keeps /work through its sandbox handle, and ends it",
          "[integration][stateless]") {
  GatewayProcess gw({});
  auto first = gw.call_stateless("execute", bash("echo kept > /work/note; echo made"));
  REQUIRE(first["isError"] == false);
  std::string handle = first["structuredContent"]["sandbox_id"];
  CHECK(handle.rfind("sbx_", 0) == 0);
  CHECK(text_of(first).find(handle) != std::string::npos);  // the model reads it in the text too

  auto again = gw.call_stateless("execute", bash("cat /work/note", handle));
  CHECK(stdout_of(again) == "kept\n");
  CHECK(again["structuredContent"]["sandbox_id"] == handle);

  // Without the handle: another, new sandbox.
  auto fresh = gw.call_stateless("execute", bash("ls /work | wc -l"));
  CHECK(stdout_of(fresh) == "0\n");
  CHECK(fresh["structuredContent"]["sandbox_id"] != handle);

  auto ended = gw.call_stateless("end_sandbox", {{"sandbox_id", handle}});
  CHECK(ended["isError"] == false);
  auto after = gw.call_stateless("execute", bash("cat /work/note", handle));
  CHECK(after["isError"] == true);
  CHECK(text_of(after).find("ended by end_sandbox") != std::string::npos);
  CHECK(text_of(after).find("Omit sandbox_id") != std::string::npos);
}

TEST_CASE("a sandbox handle belongs to its tenant", "[integration][stateless][tenants]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  auto made = gw.call_stateless("execute", bash("echo secret > /work/s"), "tok-a");
  std::string handle = made["structuredContent"]["sandbox_id"];
  // Another tenant holding the id gets what a made-up id gets: nothing to tell them apart.
  auto theirs = gw.call_stateless("execute", bash("cat /work/s", handle), "tok-b");
  CHECK(theirs["isError"] == true);
  CHECK(text_of(theirs).find("is unknown or has ended") != std::string::npos);
  CHECK(gw.call_stateless("end_sandbox", {{"sandbox_id", handle}}, "tok-b")["isError"] == true);
  // Still the owner's.
  CHECK(stdout_of(gw.call_stateless("execute", bash("cat /work/s", handle), "tok-a")) ==
        "secret\n");
}

TEST_CASE("closing the response stream cancels a 2026-07-28 call, and its sandbox stays",
          "[integration][stateless][cancel]") {
  GatewayProcess gw({});
  std::string handle =
      gw.call_stateless("execute", bash("echo before > /work/kept"))["structuredContent"]["sandbox_id"];
  // The long call ticks a counter in /work; its client goes away after a second. Its timeout
  // (120 s) is longer than the next request waits for its answer (60 s): only a cancel lets
  // the next call run in time.
  {
    json long_call =
        bash("i=0; while true; do echo $i > /work/tick; i=$((i+1)); sleep 0.1; done", handle);
    long_call["timeout_seconds"] = 120;
    json message = GatewayProcess::stateless_message(
        "tools/call", {{"name", "execute"}, {"arguments", long_call}});
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    stream.connect({boost::asio::ip::make_address("127.0.0.1"),
                    static_cast<unsigned short>(gw.port())});
    http::request<http::string_body> req{http::verb::post, "/mcp", 11};
    req.set(http::field::host, "127.0.0.1:" + std::to_string(gw.port()));
    for (auto& [k, v] : GatewayProcess::stateless_headers(message, "test-token")) req.set(k, v);
    req.body() = message.dump();
    req.prepare_payload();
    http::write(stream, req);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }  // closed
  // Calls of one sandbox run one at a time: this one runs only once the long one has ended.
  json message = GatewayProcess::stateless_message(
      "tools/call", {{"name", "execute"}, {"arguments", bash("cat /work/tick; cat /work/kept", handle)}});
  auto pending = std::async(std::launch::async, [&] {
    return gw.request(http::verb::post, "/mcp", message.dump(),
                      GatewayProcess::stateless_headers(message, "test-token"));
  });
  REQUIRE(pending.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  json first = pending.get().json_body()["result"];
  REQUIRE(first["isError"] == false);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto second = gw.call_stateless("execute", bash("cat /work/tick", handle));
  std::string tick = stdout_of(first).substr(0, stdout_of(first).find('\n'));
  CHECK(stdout_of(first).find("before") != std::string::npos);
  CHECK(stdout_of(second) == tick + "\n");  // nothing ticks any more
}

TEST_CASE("an idle sandbox handle ends, and the model is told why", "[integration][stateless]") {
  GatewayProcess gw({"--session-idle-timeout", "1"});
  std::string handle =
      gw.call_stateless("execute", bash("true"))["structuredContent"]["sandbox_id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto late = gw.call_stateless("execute", bash("true", handle));
  CHECK(late["isError"] == true);
  CHECK(text_of(late).find("has ended (it was idle for 1 s)") != std::string::npos);
}
