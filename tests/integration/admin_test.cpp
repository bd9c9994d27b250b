// The operator's admin channel on the real binary (issue #47): `sandgate sessions` lists exactly
// the live sessions of the named tenant, `sandgate end` ends one mid-call (the call is told, its
// slot goes to the next call), every action is logged, and the socket refuses another uid.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <set>

#include "admin_peer.hpp"
#include "gateway_process.hpp"
#include "temp_file.hpp"
#include "tests/support/skip.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string socket_of(const TwoTenantDir& dir) {
  return (dir.state / "admin.sock").string();
}

// The first 8 hex characters of a session id: how the channel names it.
std::string prefix_of(const std::string& id) {
  return id.substr(0, 8);
}

// `sandgate sessions --json` for `tenant` (all when empty), parsed; fails the test on an error.
json sessions_json(const TwoTenantDir& dir, const std::string& tenant = "") {
  auto run = run_sandgate("sessions --state-dir " + dir.state.string() + " --json" +
                          (tenant.empty() ? "" : " --tenant " + tenant));
  INFO(run.out);
  REQUIRE(run.status == 0);
  return json::parse(run.out);
}

std::set<std::string> prefixes_in(const json& rows) {
  std::set<std::string> out;
  for (const auto& row : rows) out.insert(row["session"].get<std::string>());
  return out;
}

// The gateway for `dir`'s tenants, its log (info and worse) in `log`.
std::unique_ptr<GatewayProcess> admin_gateway(const TwoTenantDir& dir, const TempFile& log,
                                              std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--token-file",     dir.tokens.string(), "--state-dir",
                                   dir.state.string(), "--log-level",       "info"};
  args.insert(args.end(), more.begin(), more.end());
  return std::make_unique<GatewayProcess>(
      args, std::vector<std::string>{}, false,
      std::vector<std::string>{EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
}

}  // namespace

TEST_CASE("the admin channel lists exactly the live sessions of the named tenant",
          "[integration][admin]") {
  TwoTenantDir dir("admin-list");
  TempFile log("admin-list-log");
  auto gw = admin_gateway(dir, log);
  // A 0600 socket of the gateway's user, in the state directory.
  struct stat st {};
  REQUIRE(::stat(socket_of(dir).c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_uid == ::geteuid());

  std::string a1 = gw->initialize("tok-a"), a2 = gw->initialize("tok-a");
  std::string b1 = gw->initialize("tok-b");
  auto ran = gw->execute(a1, "echo ran", "bash", 30, 1, "tok-a");
  REQUIRE(tool_text(ran).find("ran") != std::string::npos);

  json of_a = sessions_json(dir, "a");
  CHECK(prefixes_in(of_a) == std::set<std::string>{prefix_of(a1), prefix_of(a2)});
  for (const auto& row : of_a) {
    CHECK(row["tenant"] == "a");
    CHECK(row["kind"] == "session");
    CHECK(row["calls"] == 0);
    CHECK(row["age_s"].get<long>() >= 0);
    // The session that ran keeps a live sandbox; the other never had one.
    CHECK(row["state"] == (row["session"] == prefix_of(a1) ? "live" : "none"));
    // The environment its first call decided (the system as it is, here); none before.
    CHECK(row["environment"] == (row["session"] == prefix_of(a1) ? "base" : ""));
  }
  CHECK(prefixes_in(sessions_json(dir, "b")) == std::set<std::string>{prefix_of(b1)});
  CHECK(sessions_json(dir).size() == 3);
  CHECK(sessions_json(dir, "nobody").empty());

  // A session its client deleted is gone from the listing.
  CHECK(gw->request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(a2, "tok-a"))
            .status == 200);
  CHECK(prefixes_in(sessions_json(dir, "a")) == std::set<std::string>{prefix_of(a1)});

  // The table names each session by its prefix, never by its whole id.
  auto table = run_sandgate("sessions --state-dir " + dir.state.string());
  CHECK(table.status == 0);
  CHECK(table.out.find("SESSION") != std::string::npos);
  CHECK(table.out.find(prefix_of(b1)) != std::string::npos);
  CHECK(table.out.find(b1) == std::string::npos);
  CHECK(table.out.find("2 sessions") != std::string::npos);

  // Bad requests get a clear refusal and the gateway serves on.
  auto neither = run_sandgate("end --state-dir " + dir.state.string());
  CHECK(neither.status == 2);
  CHECK(neither.out.find("exactly one of --session and --tenant") != std::string::npos);
  auto unknown = run_sandgate("end --state-dir " + dir.state.string() + " --session 00000000");
  CHECK(unknown.status == 1);
  CHECK(unknown.out.find("no live session or handle is named 00000000") != std::string::npos);

  // Every action is in the log: who (the peer's uid), what, and when (each line's ts).
  CHECK(gw->stop() == 0);
  std::string logged = log.read();
  CHECK(logged.find("\"event\":\"admin_action\"") != std::string::npos);
  CHECK(logged.find("\"peer_uid\":" + std::to_string(::geteuid())) != std::string::npos);
  CHECK(logged.find("\"action\":\"sessions\"") != std::string::npos);
  // A clean exit leaves no socket behind.
  CHECK(!std::filesystem::exists(socket_of(dir)));
}

TEST_CASE("a stale admin socket is replaced at start and the verbs say when no gateway answers",
          "[integration][admin]") {
  TwoTenantDir dir("admin-stale");
  std::filesystem::create_directories(dir.state);
  ::chmod(dir.state.c_str(), 0700);
  // What a gateway killed by SIGKILL leaves: a socket nobody listens on.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_of(dir).c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
  }
  auto none = run_sandgate("sessions --state-dir " + dir.state.string());
  CHECK(none.status == 1);
  CHECK(none.out.find("cannot reach the gateway's admin socket") != std::string::npos);

  TempFile log("admin-stale-log");
  auto gw = admin_gateway(dir, log);
  std::string a = gw->initialize("tok-a");
  CHECK(prefixes_in(sessions_json(dir)) == std::set<std::string>{prefix_of(a)});
}

TEST_CASE("ending a session mid-call ends the call with a clear error and frees its slot",
          "[integration][admin]") {
  TwoTenantDir dir("admin-end");
  TempFile log("admin-end-log");
  // One call slot for the whole gateway: the second session's call waits for the first's.
  auto gw = admin_gateway(dir, log,
                          {"--max-concurrent-calls", "1", "--tenant-max-concurrent-calls", "1"});
  StopGatewayFirst stop_first{*gw};
  std::string runaway = gw->initialize("tok-a"), next = gw->initialize("tok-b");
  auto long_call = std::async(std::launch::async, [&] {
    return gw->call_execute(runaway, "sleep 60", "bash", 120, 1, "tok-a");
  });
  REQUIRE(eventually([] { return sandboxed_running("sleep 60") == 1; }));
  auto waiting = std::async(std::launch::async, [&] {
    return gw->call_execute(next, "echo second runs", "bash", 120, 2, "tok-b");
  });
  REQUIRE(eventually([&] { return metric(*gw, "sandgate_calls_waiting") == 1; }));
  json listed = sessions_json(dir, "a");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["calls"] == 1);

  auto ended =
      run_sandgate("end --state-dir " + dir.state.string() + " --session " + prefix_of(runaway));
  INFO(ended.out);
  CHECK(ended.status == 0);
  CHECK(ended.out.find("ended " + prefix_of(runaway)) != std::string::npos);

  // The running call ends at once, telling the model why.
  REQUIRE(long_call.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  auto stopped = long_call.get();
  REQUIRE(stopped.status == 200);
  std::string said = stopped.body;
  CHECK(said.find("the gateway's operator ended this session") != std::string::npos);
  CHECK(said.find("\"isError\":true") != std::string::npos);
  CHECK(eventually([] { return sandboxed_running("sleep 60") == 0; }));
  // Its slot went to the other session's call.
  REQUIRE(waiting.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(waiting.get().body.find("second runs") != std::string::npos);
  // The ended session's next request is told the same.
  auto after = gw->post(tool_call_message(3, "execute", execute_arguments("echo hi", "bash", 30)),
                        runaway, "tok-a");
  CHECK(after.status == 404);
  CHECK(after.body.find("the gateway's operator ended this session") != std::string::npos);
  CHECK(sessions_json(dir, "a").empty());
  CHECK(log.read().find("\"action\":\"end\"") != std::string::npos);
}

TEST_CASE("the admin socket refuses a peer of another uid", "[integration][admin]") {
  if (::geteuid() != 0) {
    skip_test("root", "becoming another uid to try the socket needs root");
    return;
  }
  TwoTenantDir dir("admin-uid");
  TempFile log("admin-uid-log");
  auto gw = admin_gateway(dir, log);
  gw->initialize("tok-a");
  const uid_t nobody = 65534;
  // The file system refuses it first (a 0700 directory, a 0600 socket) …
  CHECK(ask_as(nobody, socket_of(dir), false) == 10);
  // … and past that, the gateway itself, by the peer's credentials.
  CHECK(ask_as(nobody, socket_of(dir), true) == 11);
  // The gateway's own uid is answered (the same code path, as a control).
  CHECK(ask_as(::geteuid(), socket_of(dir), false) == 12);
  CHECK(eventually([&] {
    std::string logged = log.read();
    return logged.find("\"event\":\"admin_refused\"") != std::string::npos &&
           logged.find("\"peer_uid\":65534") != std::string::npos;
  }));
}
