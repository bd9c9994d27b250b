// Restart survival on the real binary: a gateway stopped with SIGTERM (or killed with SIGKILL)
// and started again with the same --state-dir and --replica-name serves the same sessions,
// with their files, tenant and spend; a torn or foreign registry file is ignored; three
// replicas restarted one after another lose no session.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

struct Setup : TwoTenantDir {
  Setup() : TwoTenantDir("restart") {}
};

// One replica, started again with the same flags (and the same cgroup, as a restarted service
// keeps its unit's) each time; its stderr goes to `log`.
struct Replica {
  std::string name;
  std::filesystem::path state, log;
  std::vector<std::string> extra;
  std::unique_ptr<GatewayProcess> gw;

  Replica(const Setup& s, std::string replica, std::vector<std::string> more = {})
      : name(std::move(replica)),
        state(s.dir / ("state-" + name)),
        log(s.dir / ("log-" + name)),
        extra(std::move(more)) {
    args = {"--token-file", s.tokens.string(), "--state-dir",
            state.string(), "--replica-name",  name};
    args.insert(args.end(), extra.begin(), extra.end());
  }
  void start() {
    gw = std::make_unique<GatewayProcess>(
        args, std::vector<std::string>{"SANDGATE_TEST_CGROUP=restart-" + name}, false,
        std::vector<std::string>{EXEC_WITH_BINARY, "--stderr", log.string(), "--"});
  }
  GatewayProcess& operator*() { return *gw; }
  GatewayProcess* operator->() { return gw.get(); }
  std::string logged() const {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The registry file as the test reads it (it runs as the gateway's user).
  json saved() const {
    std::ifstream in(state / "sessions.json");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str(), nullptr, false);
  }
  std::string saved_sandbox(const std::string& id) const {
    json doc = saved();
    if (!doc.is_object() || !doc.contains("sessions")) return "";
    for (const auto& s : doc["sessions"])
      if (s.value("id", "") == id) return s.value("sandbox", "");
    return "";
  }

 private:
  std::vector<std::string> args;
};

json answer(const HttpReply& r) {
  std::string body = r.body;
  auto data = body.rfind("data: ");
  if (data != std::string::npos) body = body.substr(data + 6, body.find('\n', data) - data - 6);
  return json::parse(body);
}

json execute_msg(const std::string& code, int id) {
  return tool_call_message(id, "execute", execute_arguments(code, "python"));
}

json execute(GatewayProcess& gw, const std::string& session, const std::string& token,
             const std::string& code, int id) {
  auto r = gw.post(execute_msg(code, id), session, token);
  REQUIRE(r.status == 200);
  return answer(r)["result"];
}

std::string resumed(const json& result) {
  return result["structuredContent"].value("resumed", "");
}

int mode_of(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

const char* kWrite = "open('/work/keep.txt', 'w').write('kept')\nprint(sum(range(10**6)))";
const char* kRead = "import os\nprint(sorted(os.listdir('/work')))";

}  // namespace

TEST_CASE("a session survives SIGTERM and a restart with its files, tenant and spend",
          "[integration][restart]") {
  Setup s;
  Replica r(s, "r1");
  r.start();
  std::string a = r->initialize("tok-a");
  std::string idle = r->initialize("tok-a");  // never ran anything: nothing to resume
  // Enough CPU to show in the spend (which results give to the micro-dollar).
  auto first = execute(*r, a, "tok-a", kWrite + std::string("\nprint(sum(range(10**7)))"), 1);
  REQUIRE(first["isError"] == false);
  double spent = first["structuredContent"]["spend_usd"];
  CHECK(spent > 0);
  REQUIRE(r->stop(SIGTERM) == 0);

  // What is on disk: private, and no token in it.
  CHECK(mode_of(r.state) == 0700);
  CHECK(mode_of(r.state / "sessions.json") == 0600);
  json saved = r.saved();
  REQUIRE(saved.is_object());
  CHECK(saved["replica"] == "r1");
  CHECK(r.saved_sandbox(a) == "hibernated");
  CHECK(r.saved_sandbox(idle) == "none");
  std::string raw = saved.dump();
  CHECK(raw.find("tok-a") == std::string::npos);
  CHECK(raw.find(sandgate::auth::to_hex(sandgate::auth::sha256("tok-a"))) == std::string::npos);

  r.start();
  // Another tenant cannot use it, as before the restart.
  CHECK(r->post(execute_msg(kRead, 2), a, "tok-b").status == 404);
  auto next =
      execute(*r, a, "tok-a", kRead + std::string("\nprint(open('/work/keep.txt').read())"), 3);
  REQUIRE(next["isError"] == false);
  CHECK(next["structuredContent"]["stdout"] == "['keep.txt']\nkept\n");
  CHECK_THAT(resumed(next), Catch::Contains("files in /work are kept"));
  // The spend goes on from where it was.
  CHECK(next["structuredContent"]["spend_usd"].get<double>() >= spent);
  // Said once.
  CHECK(resumed(execute(*r, a, "tok-a", "print(1)", 4)).empty());
  auto fresh = execute(*r, idle, "tok-a", kRead, 5);
  CHECK(fresh["structuredContent"]["stdout"] == "[]\n");
  CHECK(resumed(fresh).empty());
  CHECK(r.logged().find("saved_sessions_ignored") == std::string::npos);
}

TEST_CASE(
    "after SIGKILL the registry is kept: hibernated files come back, live ones are lost "
    "and the session says so",
    "[integration][restart]") {
  Setup s;
  Replica r(s, "r2", {"--sandbox-hibernate-after", "1"});
  r.start();
  std::string h = r->initialize("tok-a");
  REQUIRE(execute(*r, h, "tok-a", kWrite, 1)["isError"] == false);
  REQUIRE(eventually([&] { return r.saved_sandbox(h) == "hibernated"; }));
  // A session whose sandbox is live (a call runs) when the gateway is killed.
  std::string l = r->initialize("tok-a");
  std::thread busy([&] {
    try {
      r->post(execute_msg("open('/work/lost.txt', 'w').write('x')\nimport time\ntime.sleep(60)", 9),
              l, "tok-a");
    } catch (...) {
      // The gateway is killed under it.
    }
  });
  bool live_saved = eventually([&] { return r.saved_sandbox(l) == "live"; });
  ::kill(r->pid(), SIGKILL);
  busy.join();
  REQUIRE(live_saved);
  CHECK(r->stop(SIGKILL) == 128 + SIGKILL);

  r.start();
  auto back = execute(*r, h, "tok-a", kRead, 2);
  CHECK(back["structuredContent"]["stdout"] == "['keep.txt']\n");
  CHECK_THAT(resumed(back), Catch::Contains("files in /work are kept"));
  auto lost = execute(*r, l, "tok-a", kRead, 3);
  REQUIRE(lost["isError"] == false);
  CHECK(lost["structuredContent"]["stdout"] == "[]\n");
  CHECK_THAT(resumed(lost), Catch::Contains("with an empty /work") &&
                                Catch::Contains("stopped while its sandbox was live"));
  CHECK(resumed(execute(*r, l, "tok-a", "print(1)", 4)).empty());
}

TEST_CASE("a session deleted and a handle ended just before a SIGKILL stay gone after the restart",
          "[integration][restart]") {
  Setup s;
  Replica r(s, "r6");
  r.start();
  std::string deleted = r->initialize("tok-a");
  std::string kept = r->initialize("tok-a");
  std::string handle = r->call_stateless("execute", {{"code", "true"}, {"language", "bash"}},
                                         "tok-a")["structuredContent"]["sandbox_id"];
  // The timer's checkpoint (every 5 s here) has saved all three before they go.
  REQUIRE(eventually([&] {
    return !r.saved_sandbox(deleted).empty() && !r.saved_sandbox(kept).empty() &&
           !r.saved_sandbox(handle).empty();
  }));
  // Each in turn is the last before the kill: its own saving is what keeps it gone.
  auto remove_session = [&] {
    REQUIRE(
        r->request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(deleted, "tok-a"))
            .status == 200);
  };
  auto end_handle = [&] {
    REQUIRE(r->call_stateless("end_sandbox", {{"sandbox_id", handle}}, "tok-a")["isError"] ==
            false);
  };
  const bool delete_last = GENERATE(true, false);
  if (delete_last) {
    end_handle();
    remove_session();
  } else {
    remove_session();
    end_handle();
  }
  // At once, long before the timer's next checkpoint: the answers above came after the saving.
  ::kill(r->pid(), SIGKILL);
  CHECK(r->stop(SIGKILL) == 128 + SIGKILL);
  CHECK(r.saved_sandbox(deleted).empty());
  CHECK(r.saved_sandbox(handle).empty());

  r.start();
  CHECK(r->post(execute_msg(kRead, 1), deleted, "tok-a").status == 404);
  auto ended = r->call_stateless(
      "execute", {{"code", "true"}, {"language", "bash"}, {"sandbox_id", handle}}, "tok-a");
  CHECK(ended["isError"] == true);
  CHECK(execute(*r, kept, "tok-a", kRead, 2)["isError"] == false);
}

TEST_CASE("a torn, garbage or foreign registry file is ignored with a warning",
          "[integration][restart]") {
  Setup s;
  // A real file from replica r3, to be torn and to be shown to another replica.
  Replica writer(s, "r3");
  writer.start();
  std::string a = writer->initialize("tok-a");
  REQUIRE(execute(*writer, a, "tok-a", kWrite, 1)["isError"] == false);
  REQUIRE(writer->stop(SIGTERM) == 0);
  std::ifstream in(writer.state / "sessions.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string real = text.str();
  REQUIRE(real.find(a) != std::string::npos);

  struct Variant {
    const char* what;
    std::string replica, content;
  };
  for (const auto& v : {Variant{"torn", "r3", real.substr(0, real.size() / 2)},
                        Variant{"garbage", "r3", std::string("\x00\xff{[garbage", 11)},
                        Variant{"foreign", "r4", real}}) {
    INFO(v.what);
    Replica r(s, v.replica);
    if (v.replica != "r3") {
      std::filesystem::create_directories(r.state);
      ::chmod(r.state.c_str(), 0700);
      for (const auto& e : std::filesystem::directory_iterator(writer.state))
        std::filesystem::copy_file(e.path(), r.state / e.path().filename(),
                                   std::filesystem::copy_options::overwrite_existing);
    }
    { std::ofstream(r.state / "sessions.json", std::ios::trunc) << v.content; }
    ::chmod((r.state / "sessions.json").c_str(), 0600);
    std::filesystem::remove(r.log);
    r.start();
    CHECK(r.logged().find("saved_sessions_ignored") != std::string::npos);
    // Nothing of it is served: not the session, not its archive.
    CHECK(r->post(execute_msg(kRead, 2), a, "tok-a").status == 404);
    std::size_t archives = 0;
    for (const auto& e : std::filesystem::directory_iterator(r.state))
      archives += e.path().extension() == ".sgz";
    CHECK(archives == 0);
    // And the gateway serves.
    std::string b = r->initialize("tok-a");
    CHECK(execute(*r, b, "tok-a", kRead, 3)["structuredContent"]["stdout"] == "[]\n");
    REQUIRE(r->stop(SIGTERM) == 0);
  }
}

TEST_CASE("three replicas restarted one after another lose no session", "[integration][restart]") {
  Setup s;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<std::string> sessions;
  for (const char* name : {"ra", "rb", "rc"}) {
    replicas.push_back(std::make_unique<Replica>(s, name));
    replicas.back()->start();
    auto& gw = **replicas.back();
    sessions.push_back(gw.initialize("tok-a"));
    std::string code = "open('/work/on.txt', 'w').write('" + std::string(name) + "')";
    REQUIRE(execute(gw, sessions.back(), "tok-a", code, 1)["isError"] == false);
  }
  // Rolling: each replica in turn stops (SIGTERM) and starts again while the others serve.
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    REQUIRE((*replicas[i])->stop(SIGTERM) == 0);
    replicas[i]->start();
    for (std::size_t j = 0; j < replicas.size(); ++j) {
      INFO("replica " << replicas[j]->name << " after restarting " << replicas[i]->name);
      auto r = execute(**replicas[j], sessions[j], "tok-a", "print(open('/work/on.txt').read())",
                       static_cast<int>(10 + i));
      REQUIRE(r["isError"] == false);
      CHECK(r["structuredContent"]["stdout"] == replicas[j]->name + "\n");
    }
  }
}

TEST_CASE("while its replica restarts, a session's requests elsewhere get 503 and Retry-After",
          "[integration][restart][replicas]") {
  // Replicas that keep their sessions (a --state-dir each): an unreachable owner is taken for a
  // restarting one, so the client is told to retry, not to start over (404 would lose the
  // session the owner is about to serve again).
  Setup s;
  int pa = free_port(), pb = free_port();
  std::string peers =
      "ra=http://127.0.0.1:" + std::to_string(pa) + ",rb=http://127.0.0.1:" + std::to_string(pb);
  Replica a(s, "ra", {"--listen", "127.0.0.1:" + std::to_string(pa), "--peers", peers});
  Replica b(s, "rb", {"--listen", "127.0.0.1:" + std::to_string(pb), "--peers", peers});
  a.start();
  b.start();
  std::string id = b->initialize("tok-a");
  REQUIRE(id.rfind("rb.", 0) == 0);
  REQUIRE(execute(*a, id, "tok-a", "open('/work/kept.txt', 'w').write('kept')", 1)["isError"] ==
          false);

  REQUIRE(b->stop(SIGTERM) == 0);
  auto while_down = a->post(execute_msg("print('too early')", 2), id, "tok-a");
  CHECK(while_down.status == 503);
  CHECK(while_down.headers["retry-after"] == "3");
  CHECK(while_down.body.find("retry in a few seconds") != std::string::npos);

  b.start();
  auto after = execute(*a, id, "tok-a", "print(open('/work/kept.txt').read())", 3);
  CHECK(after["isError"] == false);
  CHECK(after["structuredContent"]["stdout"] == "kept\n");
}
