// Revocation on the real binary (issue #47): a tenant removed from the tokens file stops working
// at the SIGHUP that reloads it — its running call ends saying so, its next request gets 401, its
// hibernated archives are gone — while another tenant's session is untouched and works on. Its
// ledger rows are kept.
#include <signal.h>

#include <future>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// Where the state store keeps a session's hibernated /work (session/state_store.cpp).
std::filesystem::path archive_of(const TwoTenantDir& dir, const std::string& session) {
  return dir.state /
         (sandgate::auth::to_hex(sandgate::auth::sha256(session)).substr(0, 32) + ".sgz");
}

}  // namespace

TEST_CASE("a tenant removed from the tokens file is revoked at the reload",
          "[integration][tenants][revoke]") {
  TwoTenantDir dir("revoke");
  GatewayProcess gw({"--token-file", dir.tokens.string(), "--state-dir", dir.state.string(),
                     "--sandbox-hibernate-after", "1"});
  StopGatewayFirst stop_first{gw};
  // Tenant a: one session hibernated with a file in /work, one running a long call.
  std::string idle = gw.initialize("tok-a"), busy = gw.initialize("tok-a");
  REQUIRE(tool_text(gw.execute(idle, "echo kept > /work/f; echo wrote", "bash", 30, 1, "tok-a"))
              .find("wrote") != std::string::npos);
  // Tenant b: a session with a file of its own.
  std::string other = gw.initialize("tok-b");
  REQUIRE(tool_text(gw.execute(other, "echo mine > /work/g; echo wrote", "bash", 30, 1, "tok-b"))
              .find("wrote") != std::string::npos);
  REQUIRE(eventually([&] {
    return std::filesystem::exists(archive_of(dir, idle)) &&
           std::filesystem::exists(archive_of(dir, other));
  }));
  auto running = std::async(std::launch::async, [&] {
    return gw.call_execute(busy, "sleep 60", "bash", 120, 2, "tok-a");
  });
  REQUIRE(eventually([] { return sandboxed_running("sleep 60") == 1; }));

  // Tenant a's line goes; b's stays.
  std::ofstream(dir.tokens, std::ios::trunc)
      << sandgate::auth::to_hex(sandgate::auth::sha256("tok-b")) << " b\n";
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);

  // Its running call ends at once, saying why.
  REQUIRE(running.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  auto ended = running.get();
  CHECK(ended.status == 200);
  CHECK(ended.body.find("this tenant's access was revoked") != std::string::npos);
  CHECK(eventually([] { return sandboxed_running("sleep 60") == 0; }));
  // Its requests get 401, a new session's too; its archive is gone.
  CHECK(gw.post(tool_call_message(3, "execute", execute_arguments("echo hi", "bash", 30)), idle,
                "tok-a")
            .status == 401);
  CHECK(gw.post({{"jsonrpc", "2.0"},
                 {"id", 0},
                 {"method", "initialize"},
                 {"params", {{"protocolVersion", "2025-11-25"}}}},
                {}, "tok-a")
            .status == 401);
  CHECK(eventually([&] { return !std::filesystem::exists(archive_of(dir, idle)); }));

  // The other tenant's session is untouched: its archive is there and it resumes with its file.
  CHECK(std::filesystem::exists(archive_of(dir, other)));
  auto resumed = gw.execute(other, "cat /work/g", "bash", 30, 4, "tok-b");
  CHECK(tool_text(resumed).find("mine") != std::string::npos);

  // The revoked tenant's use stays in the ledger.
  CHECK(gw.stop() == 0);
  auto usage =
      run_sandgate("usage --state-dir " + dir.state.string() + " --tenant a --format json");
  INFO(usage.out);
  CHECK(usage.status == 0);
  CHECK(usage.out.find("\"a\"") != std::string::npos);
}
