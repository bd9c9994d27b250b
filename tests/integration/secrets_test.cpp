// Secrets the sandbox never holds (issue #44), on the real binary with real sandboxes: a local
// HTTPS API (tests/support/secret_api.py, a test CA, certificates for a name and for an IP
// literal) that answers 200 only to the right key; stock clients in the sandbox (Python urllib
// and http.client, curl, Node's https module; Node's fetch from 22.21/24 — Node 20's ignores the
// proxy) reach it without the key in their code, through the gateway's egress proxy, which adds
// the key; a tenant without the secret, another host, a redirect to another host, a sandbox's own
// header of that name, an upstream certificate for another name or from an untrusted CA; and the
// key nowhere in the sandbox nor in the log. The operator's `sandgate connections` lists exactly
// a session's or a tenant's connections, refusals with their reason, from memory (lost at a
// restart).
//
// As in egress_test.cpp, the gateway runs in a mount namespace of its own whose /etc/hosts
// gives the test's names their address (127.0.0.2).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "admin_peer.hpp"
#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "package_index_server.hpp"
#include "temp_file.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// A value no test string holds: the key the API wants, found nowhere it must not be.
std::string random_key() {
  std::random_device device;
  std::string key = "sgk-";
  for (int i = 0; i < 24; ++i) key += "abcdefghijklmnopqrstuvwxyz0123456789"[device() % 36];
  return key;
}

class SecretApi {
 public:
  explicit SecretApi(const std::string& key_file)
      : dir_(std::filesystem::temp_directory_path() /
             ("sandgate-secret-api-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    std::string json_file = (dir_ / "api.json").string();
    server_.emplace(
        "secret api",
        std::vector<std::string>{"/usr/bin/python3", SECRET_API_SCRIPT, "--dir", dir_.string(),
                                 "--key-file", key_file, "--json-file", json_file},
        std::vector<std::string>{"PATH=/usr/bin:/bin"}, LaunchOptions{});
    std::ifstream in(json_file);
    json announced = json::parse(in);
    port = announced["port"].get<int>();
    wrong_port = announced["wrong_port"].get<int>();
    untrusted_port = announced["untrusted_port"].get<int>();
    plain_port = announced["plain_port"].get<int>();
    ca_file = announced["ca"].get<std::string>();
    std::ifstream ca_in(ca_file);
    ca = std::string((std::istreambuf_iterator<char>(ca_in)), {});
  }
  ~SecretApi() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  int port = 0, wrong_port = 0, untrusted_port = 0, plain_port = 0;
  std::string ca_file, ca;

 private:
  std::filesystem::path dir_;
  std::optional<ServerProcess> server_;
};

std::string stdout_of(const json& result) {
  return result.value("structuredContent", json::object()).value("stdout", "");
}

struct SecretsWorld {
  std::string key = random_key();
  TempFile key_file{"secret-key"};
  std::optional<SecretApi> api;
  TempFile hosts{"secrets-hosts"};
  TempFile secrets{"secrets-file"};
  TempFile tokens{"secrets-tokens"};
  TempFile log{"secrets-gateway.log"};
  std::filesystem::path state_dir;
  std::string secrets_text;
  std::vector<std::string> args, wrapper;
  std::unique_ptr<GatewayProcess> gw;

  // `more`: flags after the world's own.
  explicit SecretsWorld(std::vector<std::string> more = {}) {
    key_file.write(key + "\n", 0600);
    api.emplace(key_file.path.string());
    state_dir = std::filesystem::temp_directory_path() /
                ("sandgate-secrets-state-" + std::to_string(::getpid()));
    std::filesystem::create_directories(state_dir);
    hosts.write("127.0.0.1 localhost\n127.0.0.2 api.sandgate.test other.sandgate.test\n", 0644);
    const std::string p = std::to_string(api->port), plain = std::to_string(api->plain_port),
                      wrong = std::to_string(api->wrong_port),
                      untrusted = std::to_string(api->untrusted_port);
    const std::string file = " header=X-Api-Key file=" + key_file.path.string() + "\n";
    secrets_text =
        "# the test API's key, by name and by address\n"
        "api host=api.sandgate.test:" +
        p + file + "api-ip host=127.0.0.2:" + p + file +
        "api-plain host=api.sandgate.test:" + plain + " plain=yes" + file +
        "api-wrong host=api.sandgate.test:" + wrong + file +
        "api-untrusted host=api.sandgate.test:" + untrusted + file;
    secrets.write(secrets_text, 0600);
    tokens.write(
        // The secrets, and other.sandgate.test (the same server, no secret) on the list; the
        // loopback literals its names resolve to for the ports no secret names by address.
        digest("alice-token") + " alice egress=other.sandgate.test:" + p + ",127.0.0.2:" + plain +
        ",127.0.0.2:" + wrong + ",127.0.0.2:" + untrusted +
        " secrets=api,api-ip,api-plain,api-wrong,api-untrusted\n" +
        // The same hosts on its list, and no secret.
        digest("bob-token") + " bob egress=api.sandgate.test:" + p + ",127.0.0.2:" + p +
        ",api.sandgate.test:" + plain + ",127.0.0.2:" + plain + "\n" +
        // A secret and no egress= at all: the secret's host is reachable by itself.
        digest("carol-token") + " carol secrets=api-ip\n");
    args = {"--token-file",     tokens.path.string(),
            "--secrets-file",   secrets.path.string(),
            "--egress-ca-file", api->ca_file,
            "--state-dir",      state_dir.string(),
            "--log-level",      "debug"};
    args.insert(args.end(), more.begin(), more.end());
    wrapper = hosts_wrapper(hosts.path.string());
    wrapper.insert(wrapper.begin(), {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
    gw = std::make_unique<GatewayProcess>(args, std::vector<std::string>{}, false, wrapper);
  }
  // Stops the gateway with SIGTERM (its sessions saved) and starts it again with the same flags.
  void restart() {
    REQUIRE(gw->stop(SIGTERM) == 0);
    gw.reset();
    gw = std::make_unique<GatewayProcess>(args, std::vector<std::string>{}, false, wrapper);
  }
  ~SecretsWorld() {
    gw.reset();
    std::filesystem::remove_all(state_dir);
  }
};

struct Client {
  Client(GatewayProcess& gateway, std::string bearer) : gw(gateway), token(std::move(bearer)) {
    session = gw.initialize(token);
    REQUIRE(!session.empty());
  }
  json run(const std::string& code, const std::string& language = "python", int timeout_s = 90) {
    return gw.execute(session, code, language, timeout_s, ++id, token);
  }
  GatewayProcess& gw;
  std::string token;
  std::string session;
  int id = 1;
};

// Python the sandbox runs: stock urllib, the sandbox's environment alone for the proxy and the
// trust; answers printed as "label status key=verdict count=N".
const std::string kGet = R"PY(
import json, ssl, urllib.request, urllib.error, http.client
def get(label, url, headers={}, context=None):
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    except Exception as e:
        print(label, "failed", str(e))
        return
    try:
        answer = json.loads(body)
        print(label, status, "key=" + answer["key"], "count=" + str(answer["count"]))
    except ValueError:
        print(label, status, body[:200])
)PY";

std::string line_of(const std::string& out, const std::string& label) {
  auto at = out.find(label + " ");
  if (at == std::string::npos) return "(no line " + label + ")";
  return out.substr(at, out.find('\n', at) - at);
}

}  // namespace

namespace {

// `sandgate connections --state-dir D ARGS --json`, parsed; fails the test on an error.
json connections_json(const SecretsWorld& world, const std::string& args) {
  auto run =
      run_sandgate("connections --state-dir " + world.state_dir.string() + " " + args + " --json");
  INFO(run.out);
  REQUIRE(run.status == 0);
  return json::parse(run.out);
}

// What identifies a connection in a listing or a call's network report: host, port, outcome,
// secret (the bytes of a report taken before its connection ended may be behind).
std::multiset<std::string> connection_keys(const json& connections) {
  std::multiset<std::string> out;
  for (const auto& c : connections)
    out.insert(c["host"].get<std::string>() + ":" + std::to_string(c["port"].get<int>()) + " " +
               c["outcome"].get<std::string>() + " " + c.value("secret", "-"));
  return out;
}

std::set<std::string> sessions_in(const json& connections) {
  std::set<std::string> out;
  for (const auto& c : connections) out.insert(c["session"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE(
    "a tenant holding a secret reaches its API over HTTPS and HTTP with stock clients, the "
    "key added by the proxy and never in the sandbox",
    "[integration][egress][secrets]") {
  if (!can_run_with_own_hosts()) return;
  SecretsWorld world;
  auto& gw = *world.gw;
  const std::string p = std::to_string(world.api->port);
  const std::string plain = std::to_string(world.api->plain_port);

  Client alice(gw, "alice-token");
  alice.run("cat > /work/ca.pem <<'EOF'\n" + world.api->ca + "EOF\n", "bash", 30);
  auto result = alice.run(
      kGet + "get('name', 'https://api.sandgate.test:" + p + "/whoami')\n" +
          "get('literal', 'https://127.0.0.2:" + p + "/whoami')\n" +
          "get('replaced', 'https://api.sandgate.test:" + p +
          "/whoami', {'X-Api-Key': 'made-up-by-the-sandbox'})\n" +
          "get('plain', 'http://api.sandgate.test:" + plain + "/whoami')\n" +
          "get('downgrade', 'http://api.sandgate.test:" + p + "/whoami')\n" +
          "get('plain-replaced', 'http://api.sandgate.test:" + plain +
          "/whoami', {'X-Api-Key': 'made-up-by-the-sandbox'})\n" +
          // The same server by another name: no secret, so an end-to-end tunnel (the test CA).
          "get('other', 'https://other.sandgate.test:" + p +
          "/whoami', {}, ssl.create_default_context(cafile='/work/ca.pem'))\n" +
          // A redirect the client follows to the other name: it must not carry the key there.
          "both = ssl.create_default_context()\nboth.load_verify_locations('/work/ca.pem')\n" +
          "get('redirected', 'https://api.sandgate.test:" + p + "/redirect', {}, both)\n" +
          "get('wrong-name', 'https://api.sandgate.test:" + std::to_string(world.api->wrong_port) +
          "/whoami')\n" + "get('untrusted', 'https://api.sandgate.test:" +
          std::to_string(world.api->untrusted_port) + "/whoami')\n" +
          // One kept-alive connection: each request gets the key, a chunked answer is framed, and
          // a request for another Host on it is refused.
          "c = http.client.HTTPSConnection('127.0.0.1', 3128, timeout=30)\n"
          "c.set_tunnel('api.sandgate.test', " +
          p +
          ")\n"
          "for i, path in enumerate(['/one', '/chunked', '/three']):\n"
          "    c.request('GET', path, headers={'X-Api-Key': 'made-up'} if i else {})\n"
          "    r = c.getresponse(); a = json.loads(r.read())\n"
          "    print('kept' + str(i), r.status, 'key=' + a['key'], 'count=' + str(a['count']))\n"
          "c.request('GET', '/four', headers={'Host': 'other.sandgate.test:" +
          p +
          "'})\n"
          "r = c.getresponse(); print('other-host', r.status, r.reason)\n",
      "python", 120);
  INFO(result.dump());
  const std::string out = stdout_of(result);
  CHECK(line_of(out, "name") == "name 200 key=right count=1");
  CHECK(line_of(out, "literal") == "literal 200 key=right count=1");
  CHECK(line_of(out, "replaced") == "replaced 200 key=right count=1");
  CHECK(line_of(out, "plain") == "plain 200 key=right count=1");
  CHECK(line_of(out, "plain-replaced") == "plain-replaced 200 key=right count=1");
  CHECK(line_of(out, "other") == "other 401 key=none count=0");
  // The HTTPS secret's host by plain HTTP: refused, the key never sent in the clear.
  CHECK(line_of(out, "downgrade").rfind("downgrade 403 ", 0) == 0);
  CHECK(line_of(out, "downgrade")
            .find("api.sandgate.test:" + p +
                  " carries a secret for HTTPS only; plain HTTP to it is not proxied") !=
        std::string::npos);
  CHECK(line_of(out, "redirected") == "redirected 401 key=none count=0");
  CHECK(line_of(out, "wrong-name")
            .find("502 api.sandgate.test:" + std::to_string(world.api->wrong_port) +
                  "'s certificate is refused: hostname mismatch") != std::string::npos);
  CHECK(line_of(out, "untrusted").find("certificate is refused: unable to get local issuer") !=
        std::string::npos);
  CHECK(line_of(out, "kept0") == "kept0 200 key=right count=1");
  CHECK(line_of(out, "kept1") == "kept1 200 key=right count=1");
  CHECK(line_of(out, "kept2") == "kept2 200 key=right count=1");
  CHECK(line_of(out, "other-host").find("other-host 421 a request for another host") == 0);
  // The call's result names what it reached and what it was refused, and the secret applied.
  const json network = result["structuredContent"].value("network", json::object());
  bool saw_secret = false, saw_refusal = false, saw_other = false;
  for (const auto& c : network.value("connections", json::array())) {
    if (c["host"] == "api.sandgate.test" && c["port"] == world.api->port &&
        c["outcome"] == "relayed" && c.value("secret", "") == "api" && c["bytes_down"] > 0)
      saw_secret = true;
    if (c["port"] == world.api->wrong_port && c["outcome"] == "refused" &&
        c.value("reason", "").find("certificate is refused: hostname mismatch") !=
            std::string::npos)
      saw_refusal = true;
    if (c["host"] == "other.sandgate.test" && !c.contains("secret")) saw_other = true;
  }
  CHECK(saw_secret);
  CHECK(saw_refusal);
  CHECK(saw_other);
  CHECK(tool_text(result).find("Network: ") != std::string::npos);
  CHECK(tool_text(result).find("certificate is refused") != std::string::npos);
  CHECK(result.dump().find(world.key) == std::string::npos);

  // curl, as installed on the host (the sandbox's /usr is the host's).
  if (std::filesystem::exists("/usr/bin/curl")) {
    auto curl = alice.run("curl -sS --max-time 30 https://api.sandgate.test:" + p +
                              "/whoami; echo\n"
                              "curl -sS --max-time 30 -H 'X-Api-Key: made-up' https://127.0.0.2:" +
                              p + "/whoami; echo\n",
                          "bash", 90);
    INFO(curl.dump());
    std::string text = stdout_of(curl);
    CHECK(text.find("\"key\": \"right\", \"count\": 1, \"host\": \"api.sandgate.test:" + p) !=
          std::string::npos);
    CHECK(text.find("\"key\": \"right\", \"count\": 1, \"host\": \"127.0.0.2:" + p) !=
          std::string::npos);
  } else {
    WARN("curl is not installed: its part is not run");
  }

  // The key is nowhere the sandbox can read: its environment, its processes' environments,
  // every readable file but the host's /usr, the trust bundle (no key of the CA's either). The
  // needle is assembled at run time: the code itself must not hold it.
  // A line of the gateway CA's certificate (kept in the state dir): the sandbox's bundle has it.
  std::string ca_line;
  {
    std::ifstream ca_in(world.state_dir / "egress-ca.pem");
    std::getline(ca_in, ca_line);
    std::getline(ca_in, ca_line);
  }
  REQUIRE(ca_line.size() > 20);
  const std::string half = world.key.substr(0, world.key.size() / 2);
  const std::string rest = world.key.substr(world.key.size() / 2);
  const std::string search_code = R"PY(
import os
needle = (HALF + REST).encode()
found, files = [], 0
if needle in repr(dict(os.environ)).encode(): found.append('environ')
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            if needle in open(f'/proc/{pid}/environ', 'rb').read(): found.append(pid)
        except OSError: pass
for d, dirs, names in os.walk('/'):
    if d == '/': dirs[:] = [x for x in dirs if x not in ('proc', 'sys', 'dev', 'usr')]
    for n in names:
        path = os.path.join(d, n)
        if not os.path.isfile(path): continue
        try:
            data = open(path, 'rb').read(1 << 24)
            files += 1
            if needle in data: found.append(path)
        except OSError: pass
bundle = open('/sandgate/ca/bundle.pem').read()
print('found', found, 'files', files > 10, 'ca', CA_LINE in bundle, 'key', 'PRIVATE' in bundle)
)PY";
  auto search = alice.run(
      "HALF, REST, CA_LINE = '" + half + "', '" + rest + "', '" + ca_line + "'\n" + search_code,
      "python", 120);
  INFO(search.dump());
  CHECK(stdout_of(search) == "found [] files True ca True key False\n");

  // A tenant with the same hosts on its list and no secret: the API says 401, by name and
  // over plain HTTP; its TLS goes end to end (the test CA).
  Client bob(gw, "bob-token");
  bob.run("cat > /work/ca.pem <<'EOF'\n" + world.api->ca + "EOF\n", "bash", 30);
  auto bobs = bob.run(kGet + "ctx = ssl.create_default_context(cafile='/work/ca.pem')\n" +
                          "get('name', 'https://api.sandgate.test:" + p + "/whoami', {}, ctx)\n" +
                          "get('plain', 'http://api.sandgate.test:" + plain + "/whoami')\n",
                      "python", 90);
  INFO(bobs.dump());
  CHECK(line_of(stdout_of(bobs), "name") == "name 401 key=none count=0");
  CHECK(line_of(stdout_of(bobs), "plain") == "plain 401 key=none count=0");

  // A secret alone (no egress=) makes its host reachable, and nothing else.
  Client carol(gw, "carol-token");
  auto carols = carol.run(kGet + "get('literal', 'https://127.0.0.2:" + p + "/whoami')\n" +
                              "get('name', 'https://api.sandgate.test:" + p + "/whoami')\n",
                          "python", 90);
  INFO(carols.dump());
  CHECK(line_of(stdout_of(carols), "literal") == "literal 200 key=right count=1");
  CHECK(line_of(stdout_of(carols), "name").find("403") != std::string::npos);

  // The CA's key stays in the state dir, 0600; its certificate is there for operators.
  struct stat st {};
  REQUIRE(::stat((world.state_dir / "egress-ca.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // The log names the secret applied, never its value.
  REQUIRE(gw.stop(SIGTERM) == 0);
  std::string logged = world.log.read();
  INFO(logged.substr(0, 4000));
  CHECK(logged.find("\"secret\":\"api\"") != std::string::npos);
  CHECK(logged.find(world.key) == std::string::npos);
  CHECK(logged.find(half) == std::string::npos);
}

TEST_CASE(
    "the connections kept for the operator are lost at a restart, and a restored session's are "
    "kept again",
    "[integration][egress][secrets][admin][restart]") {
  if (!can_run_with_own_hosts()) return;
  SecretsWorld world({"--replica-name", "r1"});
  const std::string fetch =
      kGet + "get('name', 'https://api.sandgate.test:" + std::to_string(world.api->port) +
      "/whoami')\n";
  Client alice(*world.gw, "alice-token");
  REQUIRE(line_of(stdout_of(alice.run(fetch)), "name") == "name 200 key=right count=1");
  // "r1.<hex>": the log prefix is the first characters after the replica's name.
  REQUIRE(alice.session.rfind("r1.", 0) == 0);
  const std::string prefix = alice.session.substr(3, 8);
  REQUIRE(eventually([&] { return connections_json(world, "--session " + prefix).size() == 1; }));

  world.restart();
  // In memory only: the new process lists nothing (the log lines are the durable record).
  CHECK(connections_json(world, "").empty());
  // The session came back (its sandbox hibernated and resumed); its new connection is kept.
  // (The new process listens elsewhere: asked through it, not through `alice`'s.)
  auto resumed = world.gw->execute(alice.session, fetch, "python", 90, 10, "alice-token");
  INFO(resumed.dump());
  REQUIRE(line_of(stdout_of(resumed), "name") == "name 200 key=right count=1");
  json after;
  REQUIRE(eventually([&] {
    after = connections_json(world, "--session " + prefix);
    return after.size() == 1;
  }));
  CHECK(after[0]["tenant"] == "alice");
  CHECK(after[0]["secret"] == "api");
  CHECK(after[0]["outcome"] == "relayed");
}

TEST_CASE(
    "stock Node reaches a host carrying a secret through the proxy with the gateway CA, and Node "
    "20's "
    "own fetch does not use the proxy",
    "[integration][egress][secrets]") {
  if (!can_run_with_own_hosts()) return;
  if (!std::filesystem::exists("/usr/bin/node")) {
    skip_test("node", "/usr/bin/node is not installed");
    return;
  }
  SecretsWorld world;
  auto& gw = *world.gw;
  const std::string p = std::to_string(world.api->port);
  Client alice(gw, "alice-token");
  // Node's own fetch; then Node's https module through a CONNECT tunnel its http module opens to
  // the proxy the sandbox's HTTPS_PROXY names (no package: what stock Node 20 can do), trusting
  // the gateway CA through NODE_EXTRA_CA_CERTS.
  const std::string code = R"JS(
const http = require('http'), https = require('https'), tls = require('tls');
const host = 'api.sandgate.test', port = PORT;
const say = (label, status, body) => {
  try { const a = JSON.parse(body); console.log(label, status, 'key=' + a.key, 'count=' + a.count); }
  catch (e) { console.log(label, status, body.slice(0, 200)); }
};
(async () => {
  console.log('node', process.versions.node);
  try {
    const r = await fetch(`https://${host}:${port}/whoami`);
    say('fetch', r.status, await r.text());
  } catch (e) {
    console.log('fetch failed', (e.cause && e.cause.code) || e.message);
  }
  await new Promise((done) => {
    const proxy = new URL(process.env.HTTPS_PROXY);
    const connect = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT',
                                  path: `${host}:${port}`});
    connect.on('connect', (answer, socket) => {
      if (answer.statusCode !== 200) { console.log('https', answer.statusCode); return done(); }
      const get = https.request({host, port, path: '/whoami',
                                 createConnection: () => tls.connect({socket, servername: host})},
                                (r) => {
        let body = '';
        r.on('data', (d) => body += d);
        r.on('end', () => { say('https', r.statusCode, body); done(); });
      });
      get.on('error', (e) => { console.log('https failed', e.message); done(); });
      get.end();
    });
    connect.on('error', (e) => { console.log('https failed', e.message); done(); });
    connect.end();
  });
})();
)JS";
  std::string js = code;
  js.replace(js.find("PORT"), 4, p);
  auto result = alice.run(js, "javascript", 90);
  INFO(result.dump());
  const std::string out = stdout_of(result);
  CHECK(line_of(out, "https") == "https 200 key=right count=1");
  // The version decides what fetch does: it follows HTTPS_PROXY (NODE_USE_ENV_PROXY, set in
  // every egress sandbox) from Node 22.21 and 24 on; Node 20's ignores it and connects by
  // itself, which the sandbox's empty network refuses.
  const std::string version = line_of(out, "node").substr(5);
  const int major = std::atoi(version.c_str());
  const int minor = std::atoi(version.substr(version.find('.') + 1).c_str());
  const json connections =
      result["structuredContent"].value("network", json::object()).value("connections", json());
  if (major >= 24 || (major == 22 && minor >= 21)) {
    CHECK(line_of(out, "fetch") == "fetch 200 key=right count=1");
    CHECK(connections.size() == 2);
  } else {
    const std::string failed = line_of(out, "fetch");
    INFO(failed);
    // No name is resolved in the sandbox (ENOTFOUND, EAI_AGAIN) or, where its /etc/hosts names
    // the host, its loopback has no such server (ECONNREFUSED): never the API, never the proxy.
    CHECK((failed == "fetch failed ENOTFOUND" || failed == "fetch failed EAI_AGAIN" ||
           failed == "fetch failed ECONNREFUSED"));
    CHECK(connections.size() == 1);
  }
  CHECK(result.dump().find(world.key) == std::string::npos);
}

TEST_CASE(
    "SIGHUP reloads the secrets: a file that cannot be used keeps them, a rotated value reaches "
    "new sessions",
    "[integration][egress][secrets]") {
  if (!can_run_with_own_hosts()) return;
  SecretsWorld world;
  auto& gw = *world.gw;
  const std::string fetch =
      kGet + "get('name', 'https://api.sandgate.test:" + std::to_string(world.api->port) +
      "/whoami')\n";
  auto status_of = [&](Client& client) { return line_of(stdout_of(client.run(fetch)), "name"); };
  // Waits for the log to hold `event` `times` times (a reload is logged once it is done).
  auto logged = [&](const std::string& event, std::size_t times) {
    for (int i = 0; i < 200; ++i) {
      std::string log = world.log.read();
      std::size_t count = 0;
      for (auto at = log.find(event); at != std::string::npos; at = log.find(event, at + 1))
        ++count;
      if (count >= times) return log;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::string("(not logged: ") + event + ")";
  };
  Client before(gw, "alice-token");
  CHECK(status_of(before) == "name 200 key=right count=1");

  // A file that cannot be used: the secrets in force stay, and a new session still gets them.
  world.secrets.write("api host=api.sandgate.test header=Host file=/nowhere\n", 0600);
  ::kill(gw.pid(), SIGHUP);
  std::string log = logged("secrets_reload_failed", 1);
  CHECK(log.find("secrets file line 1: header= names a header the proxy writes itself") !=
        std::string::npos);
  Client kept(gw, "alice-token");
  CHECK(status_of(kept) == "name 200 key=right count=1");

  // The key rotated at the API (its file holds the new value): until the gateway reloads, new
  // sessions send the old one.
  const std::string rotated = random_key();
  world.key_file.write(rotated + "\n", 0600);
  Client stale(gw, "alice-token");
  CHECK(status_of(stale) == "name 401 key=wrong count=1");
  world.secrets.write(world.secrets_text, 0600);
  ::kill(gw.pid(), SIGHUP);
  log = logged("tokens_reloaded", 2);
  CHECK(log.find("secrets_reloaded") != std::string::npos);
  Client fresh(gw, "alice-token");
  CHECK(status_of(fresh) == "name 200 key=right count=1");
  // A session keeps the value it was created with (operations.md, "Secrets").
  CHECK(status_of(before) == "name 401 key=wrong count=1");

  REQUIRE(gw.stop(SIGTERM) == 0);
  log = world.log.read();
  CHECK(log.find(world.key) == std::string::npos);
  CHECK(log.find(rotated) == std::string::npos);
}

TEST_CASE(
    "sandgate connections lists exactly a session's or a tenant's egress connections, refusals "
    "with their reason, never a secret's value",
    "[integration][egress][secrets][admin]") {
  if (!can_run_with_own_hosts()) return;
  SecretsWorld world;
  auto& gw = *world.gw;
  const std::string p = std::to_string(world.api->port);

  // Alice's first session: the secret's host (terminated), the same server by a name without a
  // secret (a tunnel), and a host not on her list (refused).
  Client alice(gw, "alice-token");
  alice.run("cat > /work/ca.pem <<'EOF'\n" + world.api->ca + "EOF\n", "bash", 30);
  auto reached =
      alice.run(kGet + "get('name', 'https://api.sandgate.test:" + p + "/whoami')\n" +
                    "get('other', 'https://other.sandgate.test:" + p +
                    "/whoami', {}, ssl.create_default_context(cafile='/work/ca.pem'))\n" +
                    "get('refused', 'https://nowhere.sandgate.test:" + p + "/whoami')\n",
                "python", 90);
  INFO(reached.dump());
  REQUIRE(line_of(stdout_of(reached), "name") == "name 200 key=right count=1");
  const json reported =
      reached["structuredContent"].value("network", json::object()).value("connections", json());
  REQUIRE(reported.size() == 3);
  // Alice's second session and Bob's: one connection each.
  Client alice2(gw, "alice-token");
  REQUIRE(line_of(stdout_of(alice2.run(kGet + "get('name', 'https://api.sandgate.test:" + p +
                                       "/whoami')\n")),
                  "name") == "name 200 key=right count=1");
  Client bob(gw, "bob-token");
  bob.run("cat > /work/ca.pem <<'EOF'\n" + world.api->ca + "EOF\n", "bash", 30);
  REQUIRE(line_of(stdout_of(bob.run(kGet + "get('name', 'https://api.sandgate.test:" + p +
                                    "/whoami', {}, ssl.create_default_context(cafile="
                                    "'/work/ca.pem'))\n")),
                  "name") == "name 401 key=none count=0");

  const std::string first = alice.session.substr(0, 8), second = alice2.session.substr(0, 8),
                    bobs = bob.session.substr(0, 8);
  // A connection is recorded when the relay sees it end, a moment after the call answered.
  json of_first;
  REQUIRE(eventually([&] {
    of_first = connections_json(world, "--session " + first);
    return of_first.size() == reported.size();
  }));
  // Exactly what the call's report showed the model, and only that session's.
  CHECK(connection_keys(of_first) == connection_keys(reported));
  CHECK(sessions_in(of_first) == std::set<std::string>{first});
  for (const auto& c : of_first) {
    CHECK(c["tenant"] == "alice");
    // Through the termination, the method of the last request on the connection.
    CHECK(c["method"] == (c["host"] == "api.sandgate.test" ? "GET" : "CONNECT"));
    CHECK(c["time"].get<std::string>().size() == 24);  // 2025-05-01T12:00:03.250Z
    if (c["host"] == "api.sandgate.test") {
      CHECK(c["secret"] == "api");
      CHECK(c["bytes_up"] > 0);
      CHECK(c["bytes_down"] > 0);
    }
    if (c["host"] == "nowhere.sandgate.test") {
      CHECK(c["outcome"] == "refused");
      CHECK(c["reason"] ==
            "nowhere.sandgate.test:" + p + " is not on this tenant's egress allow-list");
    }
  }
  // The whole id names the session as its prefix does.
  CHECK(connections_json(world, "--session " + alice.session).size() == of_first.size());

  // By tenant: both of Alice's sessions, none of Bob's; and Bob's alone.
  json of_alice;
  REQUIRE(eventually([&] {
    of_alice = connections_json(world, "--tenant alice");
    return of_alice.size() == reported.size() + 1;
  }));
  CHECK(sessions_in(of_alice) == std::set<std::string>{first, second});
  json of_bob;
  REQUIRE(eventually([&] {
    of_bob = connections_json(world, "--tenant bob");
    return of_bob.size() == 1;
  }));
  CHECK(sessions_in(of_bob) == std::set<std::string>{bobs});
  CHECK(of_bob[0]["host"] == "api.sandgate.test");
  CHECK(of_bob[0]["outcome"] == "relayed");
  CHECK_FALSE(of_bob[0].contains("secret"));
  // Bob's tenant and Alice's session: nothing.
  CHECK(connections_json(world, "--tenant bob --session " + first).empty());
  CHECK(connections_json(world, "--tenant carol").empty());
  // Every tenant's.
  CHECK(connections_json(world, "").size() == of_alice.size() + of_bob.size());

  // The table: a header, the refusal's reason, the secret's name; never its value.
  auto table = run_sandgate("connections --state-dir " + world.state_dir.string() +
                            " --tenant alice --since 1h");
  INFO(table.out);
  CHECK(table.status == 0);
  CHECK(table.out.find("HOST:PORT") != std::string::npos);
  CHECK(table.out.find("nowhere.sandgate.test:" + p + " is not on this tenant's egress") !=
        std::string::npos);
  CHECK(table.out.find(" api ") != std::string::npos);
  CHECK(table.out.find(std::to_string(of_alice.size()) + " connections") != std::string::npos);
  CHECK(table.out.find(world.key) == std::string::npos);
  CHECK(connections_json(world, "").dump().find(world.key) == std::string::npos);
  // A period shorter than the time since they ended lists none.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  CHECK(connections_json(world, "--since 1s").empty());
  CHECK(connections_json(world, "--since 1d").size() == of_alice.size() + of_bob.size());

  auto bad = run_sandgate("connections --state-dir " + world.state_dir.string() + " --since 10x");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--since takes a duration such as 30s, 10m, 2h or 1d") != std::string::npos);

  // Another uid is refused by the gateway, past the file system too (as for `sessions`).
  if (::geteuid() == 0) {
    const std::string socket = (world.state_dir / "admin.sock").string();
    const char* request = "{\"op\":\"connections\"}\n";
    CHECK(ask_as(65534, socket, false, request) == 10);
    CHECK(ask_as(65534, socket, true, request) == 11);
    CHECK(ask_as(::geteuid(), socket, false, request) == 12);
  } else {
    WARN("not root: the refusal of another uid is not tried (admin_test.cpp needs root too)");
  }
}

TEST_CASE("a secrets file that cannot be used stops the start with its line and why",
          "[integration][secrets]") {
  TempFile value("bad-secret-value");
  value.write("the-value\n", 0600);
  TempFile secrets("bad-secrets");
  TempFile tokens("bad-secrets-tokens");
  tokens.write(digest("t") + " alice secrets=nope\n");
  secrets.write("ok host=api.example header=X-Key file=" + value.path.string() +
                    "\nbad host=api.example header=Host file=" + value.path.string() + "\n",
                0600);
  auto run = run_sandgate("--token-file " + tokens.path.string() + " --secrets-file " +
                          secrets.path.string());
  CHECK(run.status == 2);
  CHECK(run.out.find("secrets file line 2: header= names a header the proxy writes itself") !=
        std::string::npos);
  // Readable by others: refused.
  secrets.write("ok host=api.example header=X-Key file=" + value.path.string() + "\n", 0644);
  run = run_sandgate("--token-file " + tokens.path.string() + " --secrets-file " +
                     secrets.path.string());
  CHECK(run.status == 2);
  CHECK(run.out.find("may be read or written by its group or others") != std::string::npos);
  // A tenant naming a secret the file does not define: refused by position.
  secrets.write("ok host=api.example header=X-Key file=" + value.path.string() + "\n", 0600);
  run = run_sandgate("--token-file " + tokens.path.string() + " --secrets-file " +
                     secrets.path.string());
  CHECK(run.status == 2);
  CHECK(run.out.find("option 1: secret 1 is not in --secrets-file") != std::string::npos);
  CHECK(run.out.find("the-value") == std::string::npos);
}
