// Egress on the real binary (issue #30): a real HTTPS package index on the host's loopback
// (tests/support/package_index.py, with a test CA), stock pip and npm in the sandbox going
// through the gateway's proxy, and every refusal: no egress, a host or port not on the list, an
// IP literal, names that resolve to loopback, private or metadata addresses, a ClientHello naming
// another server, the connection cap (another tenant unaffected) and the byte cap.
//
// The gateway runs in a mount namespace of its own whose /etc/hosts (bind-mounted) gives the
// test's names their addresses: it resolves names itself, with the system's resolver, as it
// would in production. The index listens on 127.0.0.2 — not 127.0.0.1, which the sandbox's
// NO_PROXY sends to its own loopback.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "package_index_server.hpp"
#include "temp_file.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// Python the sandbox's persistent interpreter keeps: a raw client of its proxy, to see exactly
// what the proxy answers (status lines, a ClientHello refused) without a library's retries.
const std::string kProbe = R"PY(
import socket, ssl
PROXY = ("127.0.0.1", 3128)

def head_of(s):
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return "error " + type(e).__name__, data
    return data.split(b"\r\n", 1)[0].decode(errors="replace"), data

def tunnel(target):
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return s, head_of(s)[0]

def connect_status(target):
    s, status = tunnel(target)
    s.close()
    return status

def https_get(target, path, server_name):
    s, status = tunnel(target)
    if " 200 " not in status:
        return status
    context = ssl.create_default_context(cafile="/work/ca.pem")
    try:
        t = context.wrap_socket(s, server_hostname=server_name)
        t.sendall(f"GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
        return "tunnel " + head_of(t)[0]
    except (ssl.SSLError, OSError) as e:
        return "tls failed " + type(e).__name__

def tunnel_plain_http(target, path):
    s, status = tunnel(target)
    if " 200 " not in status:
        return status
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return "tunnel " + head_of(s)[0]

def raw_status(data):
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(data)
    status = head_of(s)[0]
    s.close()
    return status

def raw_reply(data):
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(data)
    reply = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        reply += chunk
    s.close()
    return reply.decode(errors="replace")

def plain_get(url):
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(f"GET {url} HTTP/1.1\r\nHost: ignored\r\n\r\n".encode())
    status, data = head_of(s)
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    try:
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            body += chunk
    except OSError:
        pass
    s.close()
    return status, len(body)
print("probe ready")
)PY";

// A bash line writing the test CA to /work/ca.pem.
std::string write_ca(const std::string& ca) {
  return "cat > /work/ca.pem <<'SANDGATE_CA'\n" + ca + "SANDGATE_CA\n";
}

std::string stdout_of(const json& result) {
  return result.value("structuredContent", json::object()).value("stdout", "");
}

struct EgressGateway {
  PackageIndex index;
  TempFile hosts{"egress-hosts"};
  TempFile tokens{"egress-tokens"};
  TempFile log{"egress-gateway.log"};  // the gateway's stderr: its log
  std::optional<GatewayProcess> gw;

  explicit EgressGateway(std::vector<std::string> extra = {}) {
    hosts.write(kHosts, 0644);
    std::string https = std::to_string(index.port), plain = std::to_string(index.plain_port);
    tokens.write(
        // Allowed the index by name, the literal its name resolves to (loopback: allowed only
        // because listed), and its plain-HTTP port; at most 3 connections at once.
        digest("alice-token") + " alice egress=index.sandgate.test:" + https +
        ",127.0.0.2:" + https + ",127.0.0.2:" + plain + ",other.sandgate.test:" + https +
        " egress_connections=3\n" +
        // Names that resolve to addresses it may not reach, and one not named by any literal.
        digest("bob-token") + " bob egress=metadata.sandgate.test:80,private.sandgate.test," +
        "other.sandgate.test:" + https + ",*.sandgate.test:" + plain + "\n" +
        digest("carol-token") + " carol\n" +
        // 1 MiB per call.
        digest("dave-token") + " dave egress=127.0.0.2:" + plain + " egress_mb_per_call=1\n" +
        digest("erin-token") + " erin egress=127.0.0.2:" + plain + "\n" +
        // 1 MiB over the sandbox's life, 100 per call.
        digest("frank-token") + " frank egress=127.0.0.2:" + plain +
        " egress_mb_per_sandbox=1 egress_mb_per_call=100\n");
    // At debug, the log holds every event there is to scan for what it must never hold.
    std::vector<std::string> args = {"--token-file", tokens.path.string(), "--egress-price-gib",
                                     "100",          "--log-level",        "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto wrapper = hosts_wrapper(hosts.path.string());
    wrapper.insert(wrapper.begin(), {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
    gw.emplace(args, std::vector<std::string>{}, false, wrapper);
  }
};

// The operator's corporate proxy (tests/support/connect_proxy.py): the request lines it was
// asked, in order.
class ConnectProxy {
 public:
  ConnectProxy() : log_("connect-proxy-log") {
    log_.write("");
    server_.emplace(
        "connect proxy",
        std::vector<std::string>{"/usr/bin/python3", CONNECT_PROXY_SCRIPT, log_.path.string()},
        std::vector<std::string>{"PATH=/usr/bin:/bin"}, LaunchOptions{});
  }
  int port() const { return server_->port(); }
  std::string requests() const { return log_.read(); }

 private:
  TempFile log_;
  std::optional<ServerProcess> server_;
};

// One tenant's session, calling execute with its token.
struct Client {
  Client(GatewayProcess& gateway, std::string bearer) : gw(gateway), token(std::move(bearer)) {
    session = gw.initialize(token);
    REQUIRE(!session.empty());
  }
  json run(const std::string& code, const std::string& language = "python", int timeout_s = 60) {
    return gw.execute(session, code, language, timeout_s, ++id, token);
  }
  GatewayProcess& gw;
  std::string token;
  std::string session;
  int id = 1;
};

// A session for `token` whose interpreter holds the probe, with the CA in /work.
Client probing_session(GatewayProcess& gw, const std::string& token, const std::string& ca) {
  Client client(gw, token);
  client.run(write_ca(ca), "bash", 30);
  auto probe = client.run(kProbe, "python", 30);
  INFO(probe.dump());
  REQUIRE(stdout_of(probe).find("probe ready") != std::string::npos);
  return client;
}

}  // namespace

TEST_CASE(
    "a tenant allowed an index installs from it with stock pip and npm, and the packages "
    "stay through hibernation",
    "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  EgressGateway world({"--sandbox-hibernate-after", "3"});
  auto& gw = *world.gw;
  Client session(gw, "alice-token");
  const std::string https = std::to_string(world.index.port);

  // The persistent interpreter starts before the install: the user site it did not have at
  // its start must reach its sys.path.
  CHECK(stdout_of(session.run("print('started')", "python", 30)).find("started") !=
        std::string::npos);
  // Stock pip and npm, told of the proxy by the sandbox's environment only; the test CA by the
  // variables each tool reads.
  std::string install =
      write_ca(world.index.ca) + "export REQUESTS_CA_BUNDLE=/work/ca.pem\n" +
      "pip install --index-url https://index.sandgate.test:" + https +
      "/simple/ sandgate-probe 2>&1 | tail -2\n" +
      "npm_config_cafile=/work/ca.pem npm install --registry https://index.sandgate.test:" + https +
      "/ sandgate-probe 2>&1 | tail -2\n";
  auto installed = session.run(install, "bash", 240);
  INFO(installed.dump());
  CHECK(stdout_of(installed).find("Successfully installed sandgate-probe-1.0") !=
        std::string::npos);

  auto python_import =
      session.run("import sandgate_probe\nprint(sandgate_probe.VALUE)", "python", 30);
  INFO(python_import.dump());
  CHECK(stdout_of(python_import).find("installed from the test index") != std::string::npos);
  auto node_require = session.run("console.log(require('sandgate-probe'))", "javascript", 30);
  INFO(node_require.dump());
  CHECK(stdout_of(node_require).find("installed from the test registry") != std::string::npos);

  // Hibernated (its processes gone, /work packed), then resumed by the next call: the packages
  // are files in /work.
  bool hibernated = false;
  for (int i = 0; i < 1200 && !hibernated; ++i) {
    hibernated = metric(gw, "sandgate_hibernations_total{reason=\"idle\"}") >= 1;
    if (!hibernated) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(hibernated);
  auto after = session.run(
      "python3 -c 'import sandgate_probe; print(sandgate_probe.VALUE)'\n"
      "node -e \"console.log(require('sandgate-probe'))\"",
      "bash", 60);
  INFO(after.dump());
  CHECK(tool_text(after).find("resumed from hibernation") != std::string::npos);
  CHECK(stdout_of(after).find("installed from the test index") != std::string::npos);
  CHECK(stdout_of(after).find("installed from the test registry") != std::string::npos);
}

TEST_CASE(
    "egress refuses what the tenant's list does not allow, with a reason, and a tenant "
    "without egress has no way out",
    "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  EgressGateway world;
  auto& gw = *world.gw;
  const std::string https = std::to_string(world.index.port);
  const std::string plain = std::to_string(world.index.plain_port);

  Client alice = probing_session(gw, "alice-token", world.index.ca);
  auto probe = [&](Client& client, const std::string& expression) {
    auto result = client.run("print(" + expression + ")", "python", 60);
    INFO(result.dump());
    return stdout_of(result);
  };

  // Allowed: the name (the ClientHello names it) and the literal (no SNI needed for an
  // address), and plain HTTP by absolute URL.
  CHECK(probe(alice,
              "https_get('index.sandgate.test:" + https + "', '/simple/', 'index.sandgate.test')")
            .find("tunnel HTTP/1.1 200") != std::string::npos);
  CHECK(probe(alice, "plain_get('http://127.0.0.2:" + plain + "/big?bytes=1000')")
            .find("200 OK', 1000)") != std::string::npos);

  // A host not on the list; an IP literal not on it; the listed host on another port (and on
  // 443, which an entry with a port does not allow).
  auto not_listed = probe(alice, "connect_status('pypi.org:443')");
  CHECK(not_listed.find("403 pypi.org:443 is not on this tenant's egress allow-list") !=
        std::string::npos);
  CHECK(probe(alice, "connect_status('1.1.1.1:443')").find("403 1.1.1.1:443 is not on") !=
        std::string::npos);
  CHECK(probe(alice,
              "connect_status('index.sandgate.test:" + std::to_string(world.index.port + 1) + "')")
            .find("403 ") != std::string::npos);
  CHECK(probe(alice, "connect_status('index.sandgate.test:443')").find("403 ") !=
        std::string::npos);
  // An https URL in a plain request, and a malformed request: 400s that say why.
  CHECK(probe(alice, "plain_get('https://index.sandgate.test:" + https + "/')")
            .find("400 an https URL must be fetched through CONNECT") != std::string::npos);

  // A body framed by anything but Content-Length (a far side could read a second request in it).
  CHECK(probe(alice, "raw_status(b'POST http://127.0.0.2:" + plain +
                         "/ HTTP/1.1\\r\\nHost: x\\r\\nTransfer-Encoding: gzip\\r\\n"
                         "Content-Length: 5\\r\\n\\r\\nhello')")
            .find("HTTP/1.1 400 ") != std::string::npos);
  // Issue #41: a Connection header naming Content-Length dropped the length but relayed the
  // body, which the far side read as a second request of the sandbox's choosing.
  CHECK(probe(alice, "raw_status(b'POST http://127.0.0.2:" + plain +
                         "/ HTTP/1.1\\r\\nHost: x\\r\\nConnection: Content-Length\\r\\n"
                         "Content-Length: 50\\r\\n\\r\\nGET /smuggled HTTP/1.1\\r\\n"
                         "Host: internal.example\\r\\n\\r\\n')")
            .find("HTTP/1.1 400 a Connection header naming") != std::string::npos);
  // A body over Beast's default limit (1 MiB) is relayed whole: it is bounded by the byte caps.
  // Its path, a header and the body carry markers the log must never hold (checked below).
  CHECK(probe(alice, "raw_reply(b'POST http://127.0.0.2:" + plain +
                         "/upload-sandgate-path-marker HTTP/1.1\\r\\nHost: x\\r\\n"
                         "X-Note: sandgate-header-marker\\r\\nContent-Length: 3145728"
                         "\\r\\n\\r\\n' + b'sandgate-body-marker' + b'u' * 3145708)")
            .find("received 3145728 bytes for POST /upload-sandgate-path-marker") !=
        std::string::npos);

  // A ClientHello naming another server than the CONNECT's (both listed, the certificate valid
  // for both): the tunnel is closed before a byte reaches the index.
  CHECK(probe(alice,
              "https_get('index.sandgate.test:" + https + "', '/simple/', 'other.sandgate.test')")
            .find("tls failed") != std::string::npos);
  // A tunnel that does not start with a ClientHello: plain HTTP through CONNECT to the index's
  // plain port (which would answer it) is closed unanswered.
  auto plain_in_tunnel =
      probe(alice, "tunnel_plain_http('127.0.0.2:" + plain + "', '/big?bytes=10')");
  CHECK(plain_in_tunnel.rfind("tunnel", 0) == 0);
  CHECK(plain_in_tunnel.find("200 OK") == std::string::npos);

  // Names that resolve to addresses no literal entry names: metadata (link-local), private,
  // loopback — listed by name, refused by what they resolve to.
  Client bob = probing_session(gw, "bob-token", world.index.ca);
  CHECK(probe(bob, "plain_get('http://metadata.sandgate.test/latest/meta-data/')")
            .find("403 metadata.sandgate.test resolves to a link-local address") !=
        std::string::npos);
  CHECK(probe(bob, "connect_status('private.sandgate.test:443')")
            .find("403 private.sandgate.test resolves to a private address") != std::string::npos);
  CHECK(probe(bob, "connect_status('other.sandgate.test:" + https + "')")
            .find("403 other.sandgate.test resolves to a loopback address") != std::string::npos);
  // A wildcard entry covers names below it, and still only where they resolve to.
  CHECK(probe(bob, "plain_get('http://index.sandgate.test:" + plain + "/big?bytes=10')")
            .find("403 index.sandgate.test resolves to a loopback address") != std::string::npos);

  // No egress: no proxy in the environment, no TCP socket at all, nothing listening.
  Client carol(gw, "carol-token");
  auto none = carol.run(
      "import os, socket\n"
      "print('proxy' in ' '.join(os.environ).lower())\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', 3128), timeout=5)\n"
      "    print('connected')\n"
      "except OSError as e:\n"
      "    print('refused', e.errno)\n",
      "python", 30);
  INFO(none.dump());
  CHECK(stdout_of(none) == "False\nrefused 97\n");  // EAFNOSUPPORT: seccomp, as before #30

  // /metrics counts the connections by how they ended, and the bytes relayed.
  CHECK(metric(gw, "sandgate_egress_connections_total{outcome=\"relayed\"}") >= 2);
  CHECK(metric(gw, "sandgate_egress_connections_total{outcome=\"refused\"}") >= 10);
  CHECK(metric(gw, "sandgate_egress_bytes_total{direction=\"down\"}") > 1000);

  // Issue #41: the log holds each connection's metadata, never a byte of what it carried.
  REQUIRE(gw.stop(SIGTERM) == 0);
  std::string logged = world.log.read();
  INFO(logged);
  REQUIRE(logged.find("egress_connection") != std::string::npos);
  for (const char* marker : {"sandgate-path-marker", "sandgate-header-marker",
                             "sandgate-body-marker", "internal.example", "/smuggled"}) {
    INFO(marker);
    CHECK(logged.find(marker) == std::string::npos);
  }
}

TEST_CASE(
    "the connection cap holds for a flood, answered at once, and another tenant's egress "
    "is unaffected",
    "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  EgressGateway world;
  auto& gw = *world.gw;
  const std::string https = std::to_string(world.index.port);
  const std::string plain = std::to_string(world.index.plain_port);
  Client alice = probing_session(gw, "alice-token", world.index.ca);

  // 3 tunnels held open (alice's cap), then 20 more asked for: each is told at once.
  auto flood = alice.run("held = [tunnel('127.0.0.2:" + https +
                             "') for _ in range(3)]\n"
                             "print([status for _, status in held])\n"
                             "more = [connect_status('127.0.0.2:" +
                             https +
                             "') for _ in range(20)]\n"
                             "print(sorted(set(more)))\n",
                         "python", 120);
  INFO(flood.dump());
  std::string out = stdout_of(flood);
  CHECK(out.find("['HTTP/1.1 200 Connection established', 'HTTP/1.1 200 Connection established', "
                 "'HTTP/1.1 200 Connection established']") != std::string::npos);
  CHECK(out.find("['HTTP/1.1 429 this sandbox already has its 3 egress connections open']") !=
        std::string::npos);

  // Meanwhile another tenant's sandbox fetches through its own proxy.
  Client erin(gw, "erin-token");
  auto other = erin.run(
      "python3 - <<'EOF'\n"
      "import urllib.request\n"
      "print(len(urllib.request.urlopen('http://127.0.0.2:" +
          plain + "/big?bytes=200000', timeout=30).read()))\nEOF\n",
      "bash", 60);
  INFO(other.dump());
  CHECK(stdout_of(other) == "200000\n");

  // alice's held tunnels closed: she may connect again.
  auto again = alice.run(
      "for s, _ in held: s.close()\n"
      "import time\n"
      "for _ in range(100):\n"
      "    status = connect_status('127.0.0.2:" +
          https +
          "')\n"
          "    if ' 200 ' in status: break\n"
          "    time.sleep(0.1)\n"
          "print(status)\n",
      "python", 60);
  INFO(again.dump());
  CHECK(stdout_of(again).find("HTTP/1.1 200") != std::string::npos);
}

// Issue #41: the gateway-wide cap had no per-tenant share, so one tenant's held connections
// left every other tenant's closed unanswered.
TEST_CASE(
    "a tenant holding its share of the gateway's egress connections is told so with a 429, "
    "and another tenant's connections still go through",
    "[integration][egress][tenants]") {
  if (!can_run_with_own_hosts()) return;
  // 3 connections for the whole gateway: a tenant's share is 1 (half, at least 1), below
  // alice's per-sandbox cap of 3.
  EgressGateway world({"--egress-max-connections", "3"});
  auto& gw = *world.gw;
  const std::string https = std::to_string(world.index.port);
  const std::string plain = std::to_string(world.index.plain_port);
  Client alice = probing_session(gw, "alice-token", world.index.ca);

  auto held = alice.run("held = [tunnel('127.0.0.2:" + https +
                            "') for _ in range(3)]\n"
                            "print('|'.join(status for _, status in held))\n",
                        "python", 120);
  INFO(held.dump());
  CHECK(stdout_of(held) ==
        "HTTP/1.1 200 Connection established|HTTP/1.1 429 this tenant already has its share of "
        "the gateway's egress connections (1) open|HTTP/1.1 429 this tenant already has its "
        "share of the gateway's egress connections (1) open\n");

  // erin's sandbox, meanwhile, fetches through its own proxy: answered, not closed.
  Client erin(gw, "erin-token");
  auto other = erin.run(
      "python3 - <<'EOF'\n"
      "import urllib.request\n"
      "print(len(urllib.request.urlopen('http://127.0.0.2:" +
          plain + "/big?bytes=200000', timeout=30).read()))\nEOF\n",
      "bash", 60);
  INFO(other.dump());
  CHECK(stdout_of(other) == "200000\n");
  // Counted when the refused connection is closed: after the client's last bytes are read (at
  // most 2 s; alice's probe keeps its sockets open).
  double refused = 0;
  for (int i = 0; i < 100 && refused < 2; ++i) {
    refused = metric(gw, "sandgate_egress_connections_total{outcome=\"refused\"}");
    if (refused < 2) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(refused >= 2);
}

TEST_CASE(
    "the byte cap per call closes a download and refuses more until the next call, and "
    "relayed bytes are charged",
    "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  EgressGateway world;
  auto& gw = *world.gw;
  const std::string plain = std::to_string(world.index.plain_port);
  Client dave(gw, "dave-token");
  REQUIRE(stdout_of(dave.run(kProbe, "python", 30)).find("probe ready") != std::string::npos);
  auto spend_of = [](const json& result) {
    return result.value("structuredContent", json::object()).value("spend_usd", 0.0);
  };
  auto before = dave.run("print('nothing relayed yet')", "python", 30);

  // 3 MiB asked for, 1 MiB allowed per call: the download stops short, and the call's next
  // request is refused with the reason.
  auto capped = dave.run("status, got = plain_get('http://127.0.0.2:" + plain +
                             "/big?bytes=3145728')\n"
                             "print(status, got < 3145728)\n"
                             "print(plain_get('http://127.0.0.2:" +
                             plain + "/big?bytes=10')[0])\n",
                         "python", 60);
  INFO(capped.dump());
  std::string out = stdout_of(capped);
  CHECK(out.find("HTTP/1.1 200 OK True") != std::string::npos);
  CHECK(out.find("403 this call's egress byte cap (1 MiB) is used up") != std::string::npos);
  // The MiB it relayed costs 100 USD/GiB here: about 0.1 USD, far above the call's CPU.
  CHECK(spend_of(capped) - spend_of(before) > 0.05);

  // The next call may download again.
  auto next =
      dave.run("print(plain_get('http://127.0.0.2:" + plain + "/big?bytes=1000'))", "python", 60);
  INFO(next.dump());
  CHECK(stdout_of(next).find("200 OK', 1000)") != std::string::npos);
}

TEST_CASE("the byte cap per sandbox holds across calls", "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  EgressGateway world;
  auto& gw = *world.gw;
  const std::string plain = std::to_string(world.index.plain_port);
  Client frank(gw, "frank-token");
  REQUIRE(stdout_of(frank.run(kProbe, "python", 30)).find("probe ready") != std::string::npos);
  const std::string fetch = "print(plain_get('http://127.0.0.2:" + plain + "/big?bytes=700000'))";
  // 700 kB: within the sandbox's 1 MiB.
  CHECK(stdout_of(frank.run(fetch)).find("200 OK', 700000)") != std::string::npos);
  // Another call, another 700 kB: the sandbox's cap closes it short.
  auto second = stdout_of(frank.run(fetch));
  CHECK(second.find("200 OK', 700000)") == std::string::npos);
  // And every later call is refused: the cap is the sandbox's, not the call's.
  CHECK(stdout_of(frank.run(fetch)).find("403 this sandbox's egress byte cap (1 MiB) is used up") !=
        std::string::npos);
}

TEST_CASE("with an upstream proxy, allowed requests go through it and refused ones never reach it",
          "[integration][egress]") {
  if (!can_run_with_own_hosts()) return;
  ConnectProxy corporate;
  EgressGateway world({"--egress-upstream-proxy", "127.0.0.1:" + std::to_string(corporate.port())});
  auto& gw = *world.gw;
  const std::string https = std::to_string(world.index.port);
  const std::string plain = std::to_string(world.index.plain_port);
  Client alice = probing_session(gw, "alice-token", world.index.ca);
  // A tunnel to the literal (the upstream resolves names: the test's names are the gateway's
  // only), TLS to the index through both proxies.
  auto tunnel =
      stdout_of(alice.run("print(https_get('127.0.0.2:" + https + "', '/simple/', '127.0.0.2'))"));
  CHECK(tunnel.find("tunnel HTTP/1.1 200") != std::string::npos);
  auto plain_get =
      stdout_of(alice.run("print(plain_get('http://127.0.0.2:" + plain + "/big?bytes=1234'))"));
  CHECK(plain_get.find("200 OK', 1234)") != std::string::npos);
  // Refused by the tenant's list before anything is asked of the upstream.
  CHECK(stdout_of(alice.run("print(connect_status('pypi.org:443'))")).find("403 ") !=
        std::string::npos);
  std::string asked = corporate.requests();
  INFO(asked);
  CHECK(asked.find("CONNECT 127.0.0.2:" + https + " HTTP/1.1\n") != std::string::npos);
  CHECK(asked.find("GET http://127.0.0.2:" + plain + "/big?bytes=1234 HTTP/1.1\n") !=
        std::string::npos);
  CHECK(asked.find("pypi.org") == std::string::npos);
}
