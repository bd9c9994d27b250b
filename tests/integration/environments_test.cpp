// Environments on the real binary (issue #43): an operator's definitions built from a real
// local package index (tests/support/package_index.py: a wheel and an npm tarball) in real
// sandboxes, then mounted read-only into the sandboxes of the tenants that name them.
//
// The gateway runs in a mount namespace of its own whose /etc/hosts gives the index its name
// (package_index_server.hpp), as the egress tests do: a build reaches the index through the
// gateway's egress proxy, with the environment's egress list.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "gateway_process.hpp"
#include "package_index_server.hpp"
#include "temp_file.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

constexpr auto kBuildsMayTake = std::chrono::minutes(10);

// A bash line writing the test CA where the build's tools are told to find it.
std::string write_ca(const std::string& ca) {
  return "cat > /tmp/ca.pem <<'SANDGATE_CA'\n" + ca + "SANDGATE_CA\n";
}

// The build of "probe": stock pip and npm install the index's package into the layer (the
// build's environment points them there), and the proxy is asked for a host the environment's
// list leaves out: its answer is kept in the layer for the test to read.
std::string probe_setup(const PackageIndex& index) {
  std::string port = std::to_string(index.port);
  return write_ca(index.ca) + "set -e\n" +
         "pip install --cert /tmp/ca.pem --index-url https://index.sandgate.test:" + port +
         "/simple/ sandgate-probe\n" +
         "npm_config_cafile=/tmp/ca.pem npm install -g --registry https://index.sandgate.test:" +
         port + "/ sandgate-probe\n" +
         "mkdir -p /env/probe\n"
         "python3 - > /env/probe/egress.txt <<'PY'\n"
         "import socket\n"
         "s = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
         "s.sendall(b'CONNECT other.sandgate.test:" +
         port + " HTTP/1.1\\r\\nHost: other.sandgate.test\\r\\n\\r\\n')\n" +
         "print(s.recv(200).split(b'\\r\\n')[0].decode())\n"
         "PY\n";
}

json definitions(const PackageIndex& index, const std::string& version = "v1") {
  std::string port = std::to_string(index.port);
  return {
      {"probe",
       {{"setup", probe_setup(index)},
        {"verify", "python3 -c 'import sandgate_probe' && node -e \"require('sandgate-probe')\""},
        {"egress", {"index.sandgate.test:" + port, "127.0.0.2:" + port}},
        {"preload", {"sandgate_probe"}},
        {"description", "the test index's probe package"}}},
      {"broken",
       {{"setup", "mkdir -p /env/python && echo made > /env/python/marker.txt"},
        {"verify", "exit 3"}}},
      {"versioned",
       {{"setup", "mkdir -p /env/data && echo " + version + " > /env/data/version"},
        {"verify", "grep -q " + version + " /env/data/version"},
        {"description", "data " + version}}}};
}

struct EnvironmentWorld {
  PackageIndex index;
  TempFile hosts{"environments-hosts"};
  TempFile tokens{"environments-tokens"};
  TempFile file{"environments.json"};
  TempFile log{"environments-gateway.log"};
  std::filesystem::path state = std::filesystem::temp_directory_path() /
                                ("sandgate-environments-state-" + std::to_string(::getpid()));
  std::optional<GatewayProcess> gw;

  EnvironmentWorld() {
    std::filesystem::remove_all(state);
    hosts.write(kHosts, 0644);
    tokens.write(digest("alice-token") + " alice environments=probe\n" + digest("bob-token") +
                 " bob\n" + digest("carol-token") + " carol environments=broken,base\n" +
                 digest("dave-token") + " dave environments=versioned\n");
    file.write(definitions(index).dump(2), 0644);
    start();
  }
  ~EnvironmentWorld() {
    gw.reset();
    std::filesystem::remove_all(state);
  }
  void start() {
    auto wrapper = hosts_wrapper(hosts.path.string());
    wrapper.insert(wrapper.begin(), {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
    gw.emplace(std::vector<std::string>{"--token-file", tokens.path.string(), "--environments",
                                        file.path.string(), "--state-dir", state.string(),
                                        "--log-level", "debug"},
               std::vector<std::string>{}, false, wrapper, kBuildsMayTake);
  }
  // `sandgate environments --json` for this gateway's file and store: name -> entry.
  std::map<std::string, json> listed() {
    auto run = run_sandgate("environments --json --environments " + file.path.string() +
                            " --state-dir " + state.string());
    INFO(run.out);
    REQUIRE(run.status == 0);
    std::map<std::string, json> out;
    for (const auto& entry : json::parse(run.out)) out[entry["name"]] = entry;
    return out;
  }
};

struct Client {
  Client(GatewayProcess& gateway, std::string bearer) : gw(gateway), token(std::move(bearer)) {
    session = gw.initialize(token);
    REQUIRE(!session.empty());
  }
  // The CallToolResult of an execute call, in `environment` when one is named.
  json run(const std::string& code, const std::string& language = "python",
           const std::string& environment = "", bool fresh = false) {
    json arguments = execute_arguments(code, language, 60);
    if (!environment.empty()) arguments["environment"] = environment;
    if (fresh) arguments["fresh"] = true;
    auto reply = gw.post(tool_call_message(++id, "execute", arguments), session, token);
    REQUIRE(reply.status == 200);
    return reply.json_body()["result"];
  }
  // DELETE: the session and its sandbox end.
  void end() {
    gw.request(boost::beast::http::verb::delete_, "/mcp", "",
               GatewayProcess::mcp_headers(session, token));
  }
  GatewayProcess& gw;
  std::string token;
  std::string session;
  int id = 1;
};

std::string stdout_of(const json& result) {
  return result.value("structuredContent", json::object()).value("stdout", "");
}

bool is_error(const json& result) {
  return result.value("isError", false);
}

}  // namespace

TEST_CASE(
    "an environment built from a real index gives its tenant the packages in every runtime, "
    "read-only, with no egress of its own, and others cannot use it",
    // [egress]: its build runs stock pip and npm through the build's proxy (the pure cgroup v2
    // guest carries neither: tests/vm/jobs/suites-as-unit.sh leaves [egress] out).
    "[integration][environments][egress]") {
  if (!can_run_with_own_hosts()) return;
  EnvironmentWorld world;
  auto& gw = *world.gw;

  // /readyz said 200: every environment is built or failed.
  auto listed = world.listed();
  INFO(json(listed).dump());  // a failed build's reason, should one fail
  CHECK(listed["probe"]["state"] == "ready");
  CHECK(listed["probe"]["size_bytes"].get<std::uint64_t>() > 0);
  CHECK(listed["broken"]["state"] == "failed");
  CHECK(listed["broken"]["reason"].get<std::string>().find("verify exited with status 3") !=
        std::string::npos);
  // A failed build stores nothing: the layers are probe's and versioned's, each with its record.
  int layers = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(world.state / "environments" / "layers"))
    layers += entry.is_directory();
  CHECK(layers == 2);
  CHECK(metric(gw, "sandgate_environment_builds_total{outcome=\"ready\"}") == 2);
  CHECK(metric(gw, "sandgate_environment_builds_total{outcome=\"failed\"}") == 1);

  Client alice(gw, "alice-token");
  // The model is told which environments its tenant has and what each holds.
  auto tools = gw.post({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "tools/list"}}, alice.session,
                       "alice-token");
  std::string description = tools.json_body()["result"]["tools"][0]["description"];
  CHECK(description.find("probe: the test index's probe package") != std::string::npos);

  auto persistent = alice.run("import sandgate_probe\nprint(sandgate_probe.VALUE)");
  INFO(persistent.dump());
  CHECK(stdout_of(persistent).find("installed from the test index") != std::string::npos);
  auto fresh = alice.run("import sandgate_probe\nprint(sandgate_probe.VALUE)", "python", "", true);
  INFO(fresh.dump());
  CHECK(stdout_of(fresh).find("installed from the test index") != std::string::npos);
  auto node = alice.run("console.log(require('sandgate-probe'))", "javascript");
  INFO(node.dump());
  CHECK(stdout_of(node).find("installed from the test registry") != std::string::npos);

  // Read-only from inside, nosuid and nodev, no set-id bits; and the build's own proxy refused
  // the host its list leaves out.
  auto layer = alice.run(
      "touch /env/x 2>&1 | grep -c 'Read-only file system'\n"
      "find /env -perm /6000 | wc -l\n"
      "grep ' /env ' /proc/self/mountinfo | grep -c 'ro,nosuid,nodev'\n"
      "cat /env/probe/egress.txt\n",
      "bash");
  INFO(layer.dump());
  CHECK(stdout_of(layer).rfind("1\n0\n1\nHTTP/1.1 403", 0) == 0);
  // No egress of its own: the tenant has none, so its sandbox may not open an internet socket.
  auto no_egress = alice.run(
      "import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
      "    print('opened')\nexcept OSError as e:\n    print('refused', e.errno)\n");
  CHECK(stdout_of(no_egress).find("refused") != std::string::npos);
  // Its tenant may not use base.
  auto base = alice.run("print(1)", "python", "base");
  CHECK(is_error(base));
  CHECK(tool_text(base).find("its environments: probe") != std::string::npos);

  Client bob(gw, "bob-token");
  auto missing = bob.run(
      "try:\n    import sandgate_probe\n    print('found')\nexcept ImportError:\n"
      "    print('no such module')\n");
  CHECK(stdout_of(missing).find("no such module") != std::string::npos);
  auto not_his = bob.run("print(1)", "python", "probe");
  CHECK(is_error(not_his));
  CHECK(tool_text(not_his).find("not one this caller may use") != std::string::npos);

  Client carol(gw, "carol-token");
  auto failed = carol.run("print(1)");
  CHECK(is_error(failed));
  CHECK(tool_text(failed).find("failed to build") != std::string::npos);
  auto in_base = carol.run("print('in base')", "python", "base");
  CHECK(stdout_of(in_base).find("in base") != std::string::npos);
  // A session keeps its environment.
  auto switched = carol.run("print(1)", "python", "broken");
  CHECK(is_error(switched));
  CHECK(tool_text(switched).find("keeps one environment") != std::string::npos);
  auto bad_name = carol.run("print(1)", "python", "Not A Name");
  CHECK(is_error(bad_name));
  CHECK(tool_text(bad_name).find("Not A Name") == std::string::npos);

  // The build's output is the operator's: never in the gateway's log.
  gw.stop(SIGTERM);
  std::string log = world.log.read();
  CHECK(log.find("environment_ready") != std::string::npos);
  CHECK(log.find("Successfully installed") == std::string::npos);
}

TEST_CASE(
    "a changed definition reloaded builds a new layer while a running session keeps its own, "
    "and the old layer goes once nothing uses it",
    "[integration][environments]") {
  if (!can_run_with_own_hosts()) return;
  EnvironmentWorld world;
  auto& gw = *world.gw;
  const std::string old_hash = world.listed()["versioned"]["hash"];

  Client first(gw, "dave-token");
  CHECK(stdout_of(first.run("cat /env/data/version", "bash")) == "v1\n");

  world.file.write(definitions(world.index, "v2").dump(2), 0644);
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  std::string new_hash;
  for (int i = 0; i < 600 && new_hash.empty(); ++i) {
    auto entry = world.listed()["versioned"];
    if (entry["state"] == "ready" && entry["hash"] != old_hash)
      new_hash = entry["hash"];
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE(!new_hash.empty());
  // A new session gets the new layer (the listing reads the store; the gateway takes the
  // build's end a moment later, so a session made in between may still get the old one).
  bool rebuilt = false;
  for (int i = 0; i < 100 && !rebuilt; ++i) {
    Client second(gw, "dave-token");
    rebuilt = stdout_of(second.run("cat /env/data/version", "bash")) == "v2\n";
    if (!rebuilt) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(rebuilt);
  // The first session's sandbox keeps the layer it was made with.
  CHECK(stdout_of(first.run("cat /env/data/version", "bash")) == "v1\n");
  auto layers = world.state / "environments" / "layers";
  CHECK(std::filesystem::exists(layers / old_hash));

  // Once its sandbox ends, nothing uses the old layer: it is removed.
  REQUIRE(gw.request(boost::beast::http::verb::delete_, "/mcp", "",
                     GatewayProcess::mcp_headers(first.session, "dave-token"))
              .status == 200);
  bool removed = false;
  for (int i = 0; i < 120 && !removed; ++i) {
    removed = !std::filesystem::exists(layers / old_hash);
    if (!removed) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  CHECK(removed);
  CHECK(std::filesystem::exists(layers / new_hash));
}

TEST_CASE("a session keeps its environment through a restart, and the layer is not built again",
          "[integration][environments][restart]") {
  if (!can_run_with_own_hosts()) return;
  EnvironmentWorld world;
  std::string session;
  {
    Client alice(*world.gw, "alice-token");
    session = alice.session;
    auto first = alice.run(
        "open('/work/kept.txt', 'w').write('kept')\nimport sandgate_probe\n"
        "print(sandgate_probe.VALUE)");
    CHECK(stdout_of(first).find("installed from the test index") != std::string::npos);
    REQUIRE(world.gw->stop(SIGTERM) == 0);
  }
  std::string first_log = world.log.read();
  world.start();
  // The layer was found in the store: probe was not built again (the failed one is retried at
  // each start).
  auto built_probe = [](const std::string& log) {
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
      if (line.find("environment_build_started") != std::string::npos &&
          line.find("\"probe\"") != std::string::npos)
        return true;
    return false;
  };
  CHECK(!built_probe(world.log.read()));
  Client alice(*world.gw, "alice-token");
  alice.session = session;
  auto after = alice.run(
      "import sandgate_probe\nprint(sandgate_probe.VALUE, open('/work/kept.txt').read())");
  INFO(after.dump());
  CHECK(stdout_of(after).find("installed from the test index kept") != std::string::npos);
  // Still the session's environment: another is refused.
  auto other = alice.run("print(1)", "python", "base");
  CHECK(is_error(other));
  CHECK(built_probe(first_log));
}

TEST_CASE("a new session in an environment starts from its own ready sandbox, its preload imported",
          "[integration][environments][pool]") {
  if (!can_run_with_own_hosts()) return;
  EnvironmentWorld world;
  // probe's pool: none ready until its first session (min 0), then one more per recent new
  // session, up to 2. The first session's sandbox is built on demand: nothing imported yet.
  Client first(*world.gw, "alice-token");
  auto cold = first.run("import sys\nprint('sandgate_probe' in sys.modules)");
  CHECK(stdout_of(cold) == "False\n");
  first.end();
  // A later one is handed a ready sandbox of the environment (built in the background after the
  // first take), whose interpreter imported the preload before it was handed out.
  bool warm = false;
  for (int i = 0; i < 120 && !warm; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Client next(*world.gw, "alice-token");
    auto result = next.run("import sys\nprint('sandgate_probe' in sys.modules)");
    warm = stdout_of(result) == "True\n";
    next.end();
  }
  CHECK(warm);
  CHECK(metric(*world.gw,
               "sandgate_environment_pool_takes_total{environment=\"probe\",result=\"hit\"}") >= 1);
  // Bob's sandboxes (base) never get one of probe's.
  Client bob(*world.gw, "bob-token");
  CHECK(stdout_of(bob.run("import sys\nprint('sandgate_probe' in sys.modules)")) == "False\n");
}

TEST_CASE("environments built ahead into a directory are used without building",
          "[integration][environments]") {
  if (!can_run_with_own_hosts()) return;
  TempFile file("environments-ahead.json");
  TempFile tokens("environments-ahead-tokens");
  TempFile log("environments-ahead.log");
  auto base = std::filesystem::temp_directory_path() /
              ("sandgate-environments-ahead-" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{base};
  json only = {{"versioned",
                {{"setup", "mkdir -p /env/data && echo ahead > /env/data/version"},
                 {"verify", "grep -q ahead /env/data/version"}}}};
  file.write(only.dump(), 0644);
  tokens.write(digest("dave-token") + " dave environments=versioned\n");

  // As an image's build stage would: every environment built into the directory, exit 0.
  // Its sandboxes use this test's own host ids, as its gateways do (tests run side by side).
  std::string ids;
  if (auto own = own_sandbox_ids()) ids = " --sandbox-uid-base " + std::to_string(own->first);
  auto built = run_sandgate("environments build --environments " + file.path.string() + " --into " +
                            (base / "image").string() + ids);
  INFO(built.out);
  REQUIRE(built.status == 0);
  CHECK(built.out.find("ready") != std::string::npos);

  GatewayProcess gw({"--token-file", tokens.path.string(), "--environments", file.path.string(),
                     "--environments-built", (base / "image").string(), "--state-dir",
                     (base / "state").string(), "--log-level", "debug"},
                    {}, false, {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
  Client dave(gw, "dave-token");
  CHECK(stdout_of(dave.run("cat /env/data/version", "bash")) == "ahead\n");
  CHECK(log.read().find("environment_build_started") == std::string::npos);
  // The listing says where the layer is: in the directory built ahead, not the store.
  auto listed = run_sandgate("environments --json --environments " + file.path.string() +
                             " --environments-built " + (base / "image").string() +
                             " --state-dir " + (base / "state").string());
  REQUIRE(listed.status == 0);
  auto entry = json::parse(listed.out)[0];
  CHECK(entry["state"] == "ready");
  CHECK(entry["layer"].get<std::string>().find((base / "image").string()) == 0);
}

TEST_CASE("a tenant naming an environment the gateway does not define refuses the start",
          "[integration][environments]") {
  TempFile tokens{"environments-unknown-tokens"};
  TempFile file{"environments-unknown.json"};
  auto state = std::filesystem::temp_directory_path() /
               ("sandgate-environments-unknown-" + std::to_string(::getpid()));
  struct RemoveAll {
    std::filesystem::path path;
    ~RemoveAll() { std::filesystem::remove_all(path); }
  } remove_state{state};
  tokens.write(digest("alice-token") + " alice environments=analysis,base\n");
  file.write(R"({"analyses": {"setup": "true", "verify": "true"}})", 0644);
  auto with_file =
      run_sandgate("--listen 127.0.0.1:0 --pool-size 0 --token-file " + tokens.path.string() +
                   " --environments " + file.path.string() + " --state-dir " + state.string());
  INFO(with_file.out);
  CHECK(with_file.status == 2);
  CHECK(with_file.out.find("tenant 'alice' names environment 'analysis', which the environments "
                           "file does not define") != std::string::npos);
  auto without_file =
      run_sandgate("--listen 127.0.0.1:0 --pool-size 0 --token-file " + tokens.path.string());
  INFO(without_file.out);
  CHECK(without_file.status == 2);
  CHECK(without_file.out.find("names environment 'analysis', which no --environments file "
                              "defines") != std::string::npos);
}

TEST_CASE("a setup writing past max_size_mb is stopped while it runs, and stores nothing",
          "[integration][environments]") {
  TempFile tokens{"environments-flood-tokens"};
  TempFile file{"environments-flood.json"};
  auto state = std::filesystem::temp_directory_path() /
               ("sandgate-environments-flood-" + std::to_string(::getpid()));
  struct RemoveAll {
    std::filesystem::path path;
    ~RemoveAll() { std::filesystem::remove_all(path); }
  } remove_state{state};
  tokens.write(digest("alice-token") + " alice environments=flood\n");
  // Without a bound while it runs, this setup fills the disk until its timeout (5 minutes).
  file.write(json{{"flood",
                   {{"setup", "while :; do head -c 1048576 /dev/zero >> /env/flood.bin; done"},
                    {"verify", "true"},
                    {"max_size_mb", 8},
                    {"build_timeout_s", 300}}}}
                 .dump(),
             0644);
  // /readyz answers 200 once every environment is built or failed.
  GatewayProcess gw({"--token-file", tokens.path.string(), "--environments", file.path.string(),
                     "--state-dir", state.string(), "--pool-size", "0"},
                    {}, false, {}, kBuildsMayTake);
  auto run = run_sandgate("environments --json --environments " + file.path.string() +
                          " --state-dir " + state.string());
  INFO(run.out);
  REQUIRE(run.status == 0);
  auto listed = json::parse(run.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["state"] == "failed");
  CHECK(listed[0]["reason"].get<std::string>().find(
            "the setup wrote more than its max_size_mb (8 MiB) into the layer") !=
        std::string::npos);
  // Nothing stored, and the build's directory is gone with what it wrote.
  auto store = state / "environments";
  CHECK(std::filesystem::is_empty(store / "building"));
  CHECK(std::filesystem::is_empty(store / "layers"));
}
