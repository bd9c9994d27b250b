// Hibernation on the real binary: an idle session's sandbox is packed into the state
// directory and its processes end; the next call restores /work and says so once; DELETE
// removes the archive; another tenant never reaches it.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "bench/common/measure.hpp"
#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

struct Setup : TwoTenantDir {
  Setup() : TwoTenantDir("hib") {}
  std::vector<std::filesystem::path> archives() const {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    // Archives only: an explicit --state-dir also holds the saved registry (sessions.json).
    for (const auto& e : std::filesystem::directory_iterator(state, ec))
      if (e.path().extension() == ".sgz") out.push_back(e.path());
    return out;
  }
};

json answer(const HttpReply& r) {
  std::string body = r.body;
  auto data = body.rfind("data: ");
  if (data != std::string::npos) body = body.substr(data + 6, body.find('\n', data) - data - 6);
  return json::parse(body);
}

json execute(GatewayProcess& gw, const std::string& session, const std::string& token,
             const std::string& code, int id) {
  auto r =
      gw.post(tool_call_message(id, "execute", execute_arguments(code, "python")), session, token);
  REQUIRE(r.status == 200);
  return answer(r)["result"];
}

// Polls /metrics (the sweep runs every half second here) until `name` reaches `value`.
bool wait_for_metric(GatewayProcess& gw, const std::string& name, long value) {
  for (int i = 0; i < 1200; ++i) {  // 60 s: packing 450 MiB is slow on a loaded machine
    auto v = metric(gw, name);
    if (v >= 0 && v >= value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool mentions_resumed(const json& result) {
  return result.dump().find("resumed from hibernation") != std::string::npos;
}

}  // namespace

TEST_CASE("an idle sandbox hibernates, and its session resumes with its files, told once",
          "[integration][hibernate]") {
  Setup s;
  // 3 s: the sandbox is still there to be seen when the first call returns on a loaded machine.
  GatewayProcess gw({"--token-file", s.tokens.string(), "--sandbox-hibernate-after", "3",
                     "--state-dir", s.state.string()},
                    {});
  std::string a = gw.initialize("tok-a");
  auto first = execute(gw, a, "tok-a",
                       "x = 41\nopen('/work/keep.txt', 'w').write('kept')\n"
                       "open('/work/blob.bin', 'wb').write(bytes(range(256)) * 40)\nprint('ok')",
                       1);
  REQUIRE(first["isError"] == false);
  CHECK_FALSE(mentions_resumed(first));
  REQUIRE(children_of(gw.pid()).size() >= 1);

  REQUIRE(wait_for_metric(gw, "sandgate_hibernations_total{reason=\"idle\"}", 1));
  CHECK(metric(gw, "sandgate_sandboxes") == 0);
  CHECK(metric(gw, "sandgate_sandboxes_hibernated") == 1);
  CHECK(metric(gw, "sandgate_state_bytes") > 0);
  CHECK(children_of(gw.pid()).empty());  // no supervisor, so no process of that sandbox
  auto files = s.archives();
  REQUIRE(files.size() == 1);
  struct stat st {};
  REQUIRE(::lstat(files[0].c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 0777) == 0400);  // read-only: handed to the resuming sandbox as is
  CHECK(files[0].filename().string().find(a) == std::string::npos);  // named by a hash
  struct stat dir {};
  REQUIRE(::stat(s.state.c_str(), &dir) == 0);
  CHECK((dir.st_mode & 0777) == 0700);

  // Another tenant: a session of its own sees none of it, and cannot use this session's id.
  std::string b = gw.initialize("tok-b");
  auto theirs = execute(
      gw, b, "tok-b", "import os\nprint(os.path.exists('/work/keep.txt'), os.listdir('/work'))", 2);
  CHECK(theirs["structuredContent"]["stdout"] == "False []\n");
  CHECK_FALSE(mentions_resumed(theirs));
  json msg = tool_call_message(3, "execute", {{"code", "print(open('/work/keep.txt').read())"}});
  CHECK(gw.post(msg, a, "tok-b").status == 404);

  long hibernations = metric(gw, "sandgate_hibernations_total{reason=\"idle\"}");
  auto resumed = execute(gw, a, "tok-a",
                         "import hashlib\nprint(open('/work/keep.txt').read(), 'x' in globals(), "
                         "hashlib.md5(open('/work/blob.bin','rb').read()).hexdigest() == "
                         "hashlib.md5(bytes(range(256)) * 40).hexdigest())",
                         4);
  REQUIRE(resumed["isError"] == false);
  CHECK(resumed["structuredContent"]["stdout"] == "kept False True\n");
  CHECK(resumed["content"][0]["text"] ==
        "The sandbox was resumed from hibernation: files in /work are kept; processes and "
        "interpreter variables were not.");
  CHECK(resumed["structuredContent"]["resumed"] == resumed["content"][0]["text"]);
  CHECK(metric(gw, "sandgate_resumes_total") == 1);

  // Once: the next call says nothing more (unless the sandbox hibernated again in between).
  auto again = execute(gw, a, "tok-a", "print(open('/work/keep.txt').read())", 5);
  CHECK(again["structuredContent"]["stdout"] == "kept\n");
  if (metric(gw, "sandgate_hibernations_total{reason=\"idle\"}") == hibernations) {
    CHECK_FALSE(mentions_resumed(again));
  }

  // DELETE removes the archive of a hibernated session (the resume removed the first one: the
  // archive is there again once a has hibernated again).
  REQUIRE(eventually([&] { return std::filesystem::exists(files[0]); }));
  CHECK(
      gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(a, "tok-a")).status ==
      200);
  CHECK_FALSE(std::filesystem::exists(files[0]));
  // b's session may have hibernated too: only a's archive is gone.
  for (const auto& f : s.archives()) CHECK(f.filename() != files[0].filename());
  CHECK(gw.stop() == 0);
}

TEST_CASE("hibernation off keeps sandboxes live", "[integration][hibernate]") {
  Setup s;
  GatewayProcess gw({"--token-file", s.tokens.string(), "--sandbox-hibernate-after", "0",
                     "--state-dir", s.state.string()},
                    {});
  std::string a = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", "print(1)", 1)["isError"] == false);
  // Two passes of the idle sweep after the call (the first could have begun before it): a
  // gateway that read 0 as "at once" would have hibernated the sandbox in either.
  const auto sweeps = metric(gw, "sandgate_idle_sweeps_total");
  REQUIRE(sweeps >= 0);
  REQUIRE(wait_for_metric(gw, "sandgate_idle_sweeps_total", sweeps + 2));
  CHECK(metric(gw, "sandgate_sandboxes") == 1);
  CHECK(metric(gw, "sandgate_hibernations_total{reason=\"idle\"}") == 0);
  // The state directory holds the usage ledger, never an archive.
  CHECK(s.archives().empty());
  CHECK(std::filesystem::exists(s.state / "ledger.sqlite"));
}

TEST_CASE("end_sandbox on a hibernated sandbox deletes its archive", "[integration][hibernate]") {
  Setup s;
  GatewayProcess gw({"--token-file", s.tokens.string(), "--sandbox-hibernate-after", "1",
                     "--state-dir", s.state.string()},
                    {});
  std::string a = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", "open('/work/keep.txt', 'w').write('kept')", 1)["isError"] ==
          false);
  REQUIRE(wait_for_metric(gw, "sandgate_hibernations_total{reason=\"idle\"}", 1));
  REQUIRE(s.archives().size() == 1);
  json end = tool_call_message(2, "end_sandbox", json::object());
  CHECK(answer(gw.post(end, a, "tok-a"))["result"]["isError"] == false);
  CHECK(s.archives().empty());
  auto next = execute(gw, a, "tok-a", "import os\nprint(os.path.exists('/work/keep.txt'))", 3);
  CHECK(next["structuredContent"]["stdout"] == "False\n");
  CHECK_FALSE(mentions_resumed(next));
}

TEST_CASE("past --state-max-mb the oldest archive goes, and its session is told",
          "[integration][hibernate]") {
  Setup s;
  GatewayProcess gw({"--token-file", s.tokens.string(), "--sandbox-hibernate-after", "1",
                     "--state-dir", s.state.string(), "--state-max-mb", "1"},
                    {});
  const char* fill = "import os\nopen('/work/r.bin', 'wb').write(os.urandom(700 * 1024))";
  std::string a = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", fill, 1)["isError"] == false);
  REQUIRE(wait_for_metric(gw, "sandgate_hibernations_total{reason=\"idle\"}", 1));
  std::string b = gw.initialize("tok-a");
  REQUIRE(execute(gw, b, "tok-a", fill, 2)["isError"] == false);
  REQUIRE(wait_for_metric(gw, "sandgate_hibernations_total{reason=\"idle\"}", 2));
  CHECK(metric(gw, "sandgate_state_archives_dropped_total") == 1);
  CHECK(s.archives().size() == 1);
  auto first = execute(gw, a, "tok-a", "import os\nprint(os.listdir('/work'))", 3);
  CHECK(first["structuredContent"]["stdout"] == "[]\n");
  CHECK_THAT(first["structuredContent"]["resumed"].get<std::string>(),
             Catch::Contains("with an empty /work") && Catch::Contains("dropped"));
  auto second = execute(gw, b, "tok-a", "import os\nprint(os.listdir('/work'))", 4);
  CHECK(second["structuredContent"]["stdout"] == "['r.bin']\n");
  CHECK(second["structuredContent"]["resumed"].get<std::string>().find("files in /work are kept") !=
        std::string::npos);
}

TEST_CASE("one tenant's hibernations never push out the archive of a tenant holding less",
          "[integration][hibernate][tenants]") {
  Setup s;
  GatewayProcess gw({"--token-file", s.tokens.string(), "--sandbox-hibernate-after", "1",
                     "--state-dir", s.state.string(), "--state-max-mb", "1"},
                    {});
  const char* fill = "import os\nopen('/work/r.bin', 'wb').write(os.urandom(700 * 1024))";
  // Tenant b's sandbox hibernates first: its archive is the oldest.
  std::string b = gw.initialize("tok-b");
  REQUIRE(execute(gw, b, "tok-b", fill, 1)["isError"] == false);
  REQUIRE(wait_for_metric(gw, "sandgate_hibernations_total{reason=\"idle\"}", 1));
  // Tenant a's would not fit beside it: it is not written (a's sandbox stays live), and b's
  // stays. Four sweeps after a's call (two seconds at hibernate-after 1) it has been tried.
  std::string a = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", fill, 2)["isError"] == false);
  const auto sweeps = metric(gw, "sandgate_idle_sweeps_total");
  REQUIRE(wait_for_metric(gw, "sandgate_idle_sweeps_total", sweeps + 4));
  CHECK(metric(gw, "sandgate_hibernations_total{reason=\"idle\"}") == 1);
  CHECK(metric(gw, "sandgate_state_archives_dropped_total") == 0);
  CHECK(s.archives().size() == 1);
  auto theirs = execute(gw, b, "tok-b", "import os\nprint(os.listdir('/work'))", 3);
  CHECK(theirs["structuredContent"]["stdout"] == "['r.bin']\n");
  CHECK(theirs["structuredContent"]["resumed"].get<std::string>().find("files in /work are kept") !=
        std::string::npos);
  auto mine = execute(gw, a, "tok-a", "import os\nprint(os.listdir('/work'))", 4);
  CHECK(mine["structuredContent"]["stdout"] == "['r.bin']\n");
  CHECK_FALSE(mine["structuredContent"].contains("resumed"));
}

TEST_CASE("a 450 MiB /work hibernates and resumes without passing through the gateway's memory",
          "[integration][hibernate]") {
  Setup s;
  // /work (tmpfs) and the packed archive (a memfd) both count against the sandbox's memory.
  GatewayProcess gw(
      {"--token-file", s.tokens.string(), "--state-dir", s.state.string(), "--work-mb", "512",
       "--memory-mb", "1536", "--state-max-mb", "1024", "--sandbox-hibernate-after", "1",
       "--session-idle-timeout", "600", "--timeout-max", "300"},
      {});
  std::string a = gw.initialize("tok-a");
  const std::string digest =
      "import hashlib\nh = hashlib.sha256()\nwith open('/work/big','rb') as f:\n"
      "  for block in iter(lambda: f.read(1 << 20), b''): h.update(block)\n"
      "print(h.hexdigest()[:16])";
  auto made = execute(gw, a, "tok-a",
                      "import os\nwith open('/work/big','wb') as f:\n"
                      "  for _ in range(450): f.write(os.urandom(1 << 20))\n" +
                          digest,
                      1);
  REQUIRE(made["isError"] == false);
  std::string written = made["structuredContent"]["stdout"];
  REQUIRE(written.size() == 17);

  // The gateway's peak resident memory, from here: packing 450 MiB of incompressible data
  // must not raise it by the archive's size (it moves memfd → file inside the kernel).
  const long bound_kib = 64 << 10;
  long before = sandgate::bench::proc_status_kib(gw.pid(), "VmRSS");
  sandgate::bench::reset_peak_rss(gw.pid());
  REQUIRE(wait_for_metric(gw, "sandgate_sandboxes_hibernated", 1));
  CHECK(metric(gw, "sandgate_state_bytes") > (440l << 20));
  long packing = sandgate::bench::proc_status_kib(gw.pid(), "VmHWM") - before;
  CHECK(packing < bound_kib);

  // Resuming hands the stored file to the sandbox as a descriptor: no copy in the gateway.
  before = sandgate::bench::proc_status_kib(gw.pid(), "VmRSS");
  sandgate::bench::reset_peak_rss(gw.pid());
  auto back = execute(gw, a, "tok-a", digest, 2);
  REQUIRE(back["isError"] == false);
  CHECK(back["structuredContent"]["stdout"] == written);
  CHECK(mentions_resumed(back));
  long resuming = sandgate::bench::proc_status_kib(gw.pid(), "VmHWM") - before;
  CHECK(resuming < bound_kib);
  INFO("peak growth KiB: packing " << packing << ", resuming " << resuming);
  CHECK(s.archives().empty());
}
