// The OAuth resource server on the real binary: a stand-in authorization server on loopback
// (tests/support/test_issuer.py serving metadata and a key set this test writes), access tokens
// signed here, and what the gateway answers each of them — the metadata document, the Bearer
// challenges, every hostile token of issue #27, key rotation, an issuer that is slow, huge or
// down, OAuth tenants' limits from the policy file, and tokens-file clients beside them; and an
// issuer over real TLS (a CA the test makes): keys only from a certificate the gateway trusts,
// for the issuer's own host, and never from another origin a redirect names.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "common/base64.hpp"
#include "gateway_process.hpp"
#include "temp_file.hpp"
#include "tests/support/jwt_signing.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

constexpr const char* kResource = "https://sandgate.test/mcp";
constexpr const char* kMetadataUrl =
    "https://sandgate.test/.well-known/oauth-protected-resource/mcp";
constexpr const char* kScope = "sandgate:execute";

// A throwaway CA of the test's own (tests/support/test_tls.py): nothing trusts it unless the
// gateway is handed its file with --oauth-ca-file.
class TestCa {
 public:
  explicit TestCa(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() /
             ("sandgate-ca-" + std::to_string(::getpid()) + "-" + name)) {
    std::string command =
        std::string("/usr/bin/python3 ") + TEST_TLS_SCRIPT + " make-ca " + dir_.string();
    REQUIRE(std::system(command.c_str()) == 0);
  }
  ~TestCa() { std::filesystem::remove_all(dir_); }
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  std::string dir() const { return dir_.string(); }
  std::string ca_file() const { return (dir_ / "ca.pem").string(); }

 private:
  std::filesystem::path dir_;
};

// An issuer over https: its certificate, signed by `ca`, is for exactly `names` (addresses or
// DNS names), and its URL names it as `host` (the server listens on 127.0.0.1 either way). The
// gateway checks the certificate against the URL's host, so a test leaves that out of `names`
// to present a certificate for another host.
struct IssuerTls {
  const TestCa* ca = nullptr;
  std::vector<std::string> names = {"127.0.0.1"};
  std::string host = "127.0.0.1";
};

// An authorization server that serves what the test writes into its folder.
class TestIssuer {
 public:
  explicit TestIssuer(std::optional<IssuerTls> tls = std::nullopt)
      : dir_(std::filesystem::temp_directory_path() /
             ("sandgate-issuer-" + std::to_string(::getpid()) + "-" +
              std::to_string(++instances_))) {
    std::filesystem::create_directories(dir_ / ".well-known");
    std::vector<std::string> argv = {"/usr/bin/python3", TEST_ISSUER_SCRIPT, dir_.string()};
    if (tls) {
      argv.insert(argv.end(), {"--tls", tls->ca->dir()});
      for (const auto& name : tls->names) argv.insert(argv.end(), {"--name", name});
    }
    server_.emplace("issuer", argv, std::vector<std::string>{"PATH=/usr/bin:/bin"},
                    LaunchOptions{});
    url_ = (tls ? "https://" + tls->host : std::string("http://127.0.0.1")) + ":" +
           std::to_string(server_->port());
    write(".well-known/oauth-authorization-server",
          json{{"issuer", url_}, {"jwks_uri", url_ + "/jwks.json"}}.dump());
  }
  ~TestIssuer() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  const std::string& url() const { return url_; }
  void publish(const json& jwks, const std::string& name = "jwks.json") {
    write(name, jwks.dump());
  }
  void publish_text(const std::string& text) { write("jwks.json", text); }
  void set_delay(double seconds) { write("_delay", std::to_string(seconds)); }
  // A GET of `path` answers 302 Found to `location`.
  void redirect(const std::string& path, const std::string& location) {
    redirects_[path] = location;
    write("_redirects.json", redirects_.dump());
  }
  void stop() { server_.reset(); }
  // How many times the key set was asked for.
  int key_set_fetches() const { return requests_to("/jwks.json"); }
  int requests_to(const std::string& path) const {
    std::ifstream log(dir_ / "_requests");
    int count = 0;
    for (std::string line; std::getline(log, line);) count += line == path;
    return count;
  }
  // Introspection (POST /introspect): the Authorization a client must send, and the answers.
  void expect_client_auth(const std::string& header) { write("_client_auth", header); }
  void answer_introspection(const json& answers) { write("_introspection.json", answers.dump()); }
  // A token of this issuer: valid for an hour, for this resource, with the scope.
  json claims(const std::string& sub) const {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return {{"iss", url_}, {"sub", sub},        {"aud", kResource},
            {"iat", now},  {"exp", now + 3600}, {"scope", std::string("openid ") + kScope}};
  }

 private:
  // Written whole, then renamed: the server never serves half a file.
  void write(const std::string& name, const std::string& text) {
    auto target = dir_ / name;
    auto partial = dir_ / ("_partial-" + std::to_string(++writes_));
    {
      std::ofstream f(partial, std::ios::trunc);
      f << text;
    }
    std::filesystem::rename(partial, target);
  }

  static inline int instances_ = 0;
  std::filesystem::path dir_;
  std::optional<ServerProcess> server_;
  std::string url_;
  int writes_ = 0;
  json redirects_ = json::object();
};

std::vector<std::string> gateway_args(const TestIssuer& issuer,
                                      std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--oauth-issuer", issuer.url(),     "--resource-url",
                                   kResource,        "--oauth-scopes", kScope};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

HttpReply initialize_with(GatewayProcess& gw, const std::string& token) {
  return gw.post(initialize_message(0, "oauth-test"), {}, token);
}

// The refusal's WWW-Authenticate, and its error (empty when it names none).
std::string challenge(const HttpReply& r) {
  auto it = r.headers.find("www-authenticate");
  return it == r.headers.end() ? std::string() : it->second;
}

// The issuer's keys could not be fetched: not the token's fault, so no invalid_token (a client
// would drop a token that may be good) but 503 and a time to come back.
void check_keys_unavailable(const HttpReply& r) {
  CHECK(r.status == 503);
  CHECK(r.headers.count("retry-after") == 1);
  CHECK(challenge(r).empty());
}

void check_invalid_token(const HttpReply& r) {
  CHECK(r.status == 401);
  CHECK(challenge(r).rfind("Bearer ", 0) == 0);
  CHECK(challenge(r).find("error=\"invalid_token\"") != std::string::npos);
  CHECK(challenge(r).find(std::string("resource_metadata=\"") + kMetadataUrl + "\"") !=
        std::string::npos);
}

}  // namespace

TEST_CASE("the gateway publishes its protected resource metadata, readable from any origin",
          "[integration][oauth]") {
  TestIssuer issuer;
  GatewayProcess gw(gateway_args(issuer, {"--resource-documentation", "https://docs.example/"}));
  for (std::string path :
       {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
    INFO(path);
    auto r = gw.request(http::verb::get, path);
    REQUIRE(r.status == 200);
    CHECK(r.headers["access-control-allow-origin"] == "*");
    auto doc = r.json_body();
    CHECK(doc["resource"] == kResource);
    CHECK(doc["authorization_servers"] == json::array({issuer.url()}));
    CHECK(doc["scopes_supported"] == json::array({kScope}));
    CHECK(doc["bearer_methods_supported"] == json::array({"header"}));
    CHECK(doc["resource_name"] == "sandgate");
    CHECK(doc["resource_documentation"] == "https://docs.example/");
    auto preflight =
        gw.request(http::verb::options, path, {},
                   {{"Origin", "https://claude.ai"}, {"Access-Control-Request-Method", "GET"}});
    CHECK(preflight.status == 204);
    CHECK(preflight.headers["access-control-allow-origin"] == "*");
  }
}

TEST_CASE("a request without credentials is pointed to the metadata and the scope",
          "[integration][oauth]") {
  TestIssuer issuer;
  GatewayProcess gw(gateway_args(issuer), {});
  auto r = gw.request(
      http::verb::post, "/mcp", initialize_message(0, "x").dump(),
      {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}});
  CHECK(r.status == 401);
  CHECK(challenge(r) ==
        std::string("Bearer resource_metadata=\"") + kMetadataUrl + "\", scope=\"" + kScope + "\"");
  CHECK(r.json_body()["error"]["code"] == -32001);
}

TEST_CASE("an access token of the issuer runs execute, and its session is its tenant's alone",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  // A tokens-file client keeps working beside the OAuth ones.
  GatewayProcess gw(gateway_args(issuer), {"SANDGATE_TOKEN=static-token"});
  std::string alice = signed_token("RS256", key, issuer.claims("alice"));
  std::string bob = signed_token("RS256", key, issuer.claims("bob"));

  std::string session = gw.initialize(alice);
  auto r = gw.post(tool_call_message(1, "execute", execute_arguments("echo $((6*7))", "bash", 30)),
                   session, alice);
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["result"]["content"][0]["text"].get<std::string>().find("42") !=
        std::string::npos);
  // Another tenant's token does not reach alice's session.
  auto stolen =
      gw.post(tool_call_message(2, "execute", execute_arguments("true", "bash", 30)), session, bob);
  CHECK(stolen.status == 404);
  std::string static_session = gw.initialize("static-token");
  CHECK_FALSE(static_session.empty());
  CHECK(metric(gw, "sandgate_auth_total{kind=\"jwt\",outcome=\"ok\"}") >= 2);
  CHECK(metric(gw, "sandgate_auth_total{kind=\"static\",outcome=\"ok\"}") >= 1);
  CHECK(metric(gw, "sandgate_jwks_refreshes_total{outcome=\"ok\"}") >= 1);
}

TEST_CASE("every hostile token gets 401 invalid_token, a narrow one 403 insufficient_scope",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  auto ec = ec_key("e1");
  issuer.publish(jwk_set_of({&key, &ec}));
  GatewayProcess gw(gateway_args(issuer));
  auto claims = issuer.claims("mallory");
  auto with = [&](const char* name, json value) {
    json c = claims;
    c[name] = std::move(value);
    return c;
  };
  const long now = claims["iat"].get<long>();
  // The good token works first: the refusals below are the tokens', not the setup's.
  REQUIRE(initialize_with(gw, signed_token("RS256", key, claims)).status == 200);

  SECTION("expired") {
    check_invalid_token(initialize_with(gw, signed_token("RS256", key, with("exp", now - 600))));
  }
  SECTION("not yet valid") {
    check_invalid_token(initialize_with(gw, signed_token("RS256", key, with("nbf", now + 3600))));
  }
  SECTION("another issuer") {
    check_invalid_token(
        initialize_with(gw, signed_token("RS256", key, with("iss", "https://evil.example"))));
  }
  SECTION("another audience, and another resource of the same issuer") {
    check_invalid_token(
        initialize_with(gw, signed_token("RS256", key, with("aud", "https://other.example/"))));
    check_invalid_token(initialize_with(
        gw, signed_token("RS256", key, with("aud", "https://sandgate.test/other"))));
  }
  SECTION("alg none") {
    std::string input = signing_input({{"alg", "none"}, {"kid", "k1"}}, claims);
    check_invalid_token(initialize_with(gw, input + "."));
  }
  SECTION("HS256 keyed with the public key") {
    std::string input = signing_input({{"alg", "HS256"}, {"kid", "k1"}}, claims);
    check_invalid_token(initialize_with(gw, input + ".c2lnbmF0dXJl"));
  }
  SECTION("a key of another type") {
    check_invalid_token(initialize_with(gw, signed_token("RS256", key, claims, {{"kid", "e1"}})));
  }
  SECTION("a tampered payload") {
    std::string good = signed_token("RS256", key, claims);
    std::string forged = signing_input({{"alg", "RS256"}, {"kid", "k1"}}, with("sub", "admin")) +
                         good.substr(good.rfind('.'));
    check_invalid_token(initialize_with(gw, forged));
  }
  SECTION("a token in the query string") {
    auto r = gw.request(
        http::verb::post, "/mcp?access_token=" + signed_token("RS256", key, claims),
        initialize_message(0, "x").dump(),
        {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}});
    CHECK(r.status == 400);
    CHECK(challenge(r).find("error=\"invalid_request\"") != std::string::npos);
  }
  SECTION("a token without the scope") {
    auto r = initialize_with(gw, signed_token("RS256", key, with("scope", "openid")));
    CHECK(r.status == 403);
    CHECK(challenge(r).find("error=\"insufficient_scope\"") != std::string::npos);
    CHECK(challenge(r).find(std::string("scope=\"") + kScope + "\"") != std::string::npos);
    CHECK(challenge(r).find(kMetadataUrl) != std::string::npos);
  }
  SECTION("a JWT in X-MCP-AUTH, which carries tokens-file tokens only") {
    auto r = gw.request(http::verb::post, "/mcp", initialize_message(0, "x").dump(),
                        {{"Content-Type", "application/json"},
                         {"Accept", "application/json, text/event-stream"},
                         {"X-MCP-AUTH", signed_token("RS256", key, claims)}});
    CHECK(r.status == 401);
  }
  CHECK(metric(gw, "sandgate_auth_failures_total") >= 1);
}

TEST_CASE("an unknown key is fetched for once, and for 10 s after it newer tokens are deferred",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  auto stranger = rsa_key("k-unknown");
  issuer.publish(jwk_set_of({&key}));
  GatewayProcess gw(gateway_args(issuer));
  REQUIRE(initialize_with(gw, signed_token("RS256", key, issuer.claims("a"))).status == 200);
  int before = issuer.key_set_fetches();
  // Asked once: the issuer does not publish it, so the token is bad.
  check_invalid_token(initialize_with(gw, signed_token("RS256", stranger, issuer.claims("a"))));
  // Within the next 10 s the keys are not fetched again, whoever sends how many unknown keys;
  // such a token is not called bad (it may be signed by a key published since) but deferred.
  for (int i = 0; i < 4; ++i)
    check_keys_unavailable(
        initialize_with(gw, signed_token("RS256", stranger, issuer.claims("a"))));
  // Unless the token was issued before that fetch began: its key, if the issuer ever published
  // it, was there to be found — refused, however often others send unknown keys.
  auto old_claims = issuer.claims("a");
  old_claims["iat"] = old_claims["iat"].get<long>() - 3600;
  check_invalid_token(initialize_with(gw, signed_token("RS256", stranger, old_claims)));
  CHECK(issuer.key_set_fetches() == before + 1);
}

TEST_CASE("the issuer rotates its keys: new tokens work without a restart, old ones still do",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto old_key = rsa_key("2026-11");
  auto new_key = ec_key("2026-12");
  issuer.publish(jwk_set_of({&old_key}));
  GatewayProcess gw(gateway_args(issuer));
  std::string old_token = signed_token("RS256", old_key, issuer.claims("carol"));
  std::string session = gw.initialize(old_token);

  issuer.publish(jwk_set_of({&old_key, &new_key}));
  std::string new_token = signed_token("ES256", new_key, issuer.claims("carol"));
  // The same tenant: the session made with the old token serves the new one.
  auto r = gw.post(tool_call_message(1, "execute", execute_arguments("echo rotated", "bash", 30)),
                   session, new_token);
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["result"]["isError"] == false);
  CHECK(gw.post(tool_call_message(2, "execute", execute_arguments("true", "bash", 30)), session,
                old_token)
            .status == 200);
}

TEST_CASE("an issuer that is slow, huge or down: known keys keep working, the rest is refused",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  auto later = rsa_key("k2");
  issuer.publish(jwk_set_of({&key}));
  GatewayProcess gw(gateway_args(issuer), {"SANDGATE_TOKEN=static-token"});
  REQUIRE(initialize_with(gw, signed_token("RS256", key, issuer.claims("dave"))).status == 200);

  SECTION("a set without the key, or with none: refused, and a withdrawn key no longer works") {
    issuer.publish(json{{"keys", json::array()}});
    check_invalid_token(initialize_with(gw, signed_token("RS256", later, issuer.claims("dave"))));
    // The set now lacks k1 too: a token of k1 not seen before is not accepted (deferred, as
    // the keys were fetched moments ago; refused for good at the next fetch).
    check_keys_unavailable(initialize_with(gw, signed_token("RS256", key, issuer.claims("judy"))));
  }
  SECTION("slow: the fetch gives up at its deadline, other clients are served meanwhile") {
    issuer.publish(jwk_set_of({&key, &later}));
    issuer.set_delay(30);
    auto waiting = std::async(std::launch::async, [&] {
      return initialize_with(gw, signed_token("RS256", later, issuer.claims("dave")));
    });
    CHECK(initialize_with(gw, "static-token").status == 200);
    CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("erin"))).status == 200);
    check_keys_unavailable(waiting.get());
    CHECK(metric(gw, "sandgate_jwks_refreshes_total{outcome=\"failed\"}") >= 1);
  }
  SECTION("huge: refused, and the keys known are kept") {
    issuer.publish_text("{\"keys\":[" + std::string(1 << 20, ' ') + "]}");
    check_keys_unavailable(
        initialize_with(gw, signed_token("RS256", later, issuer.claims("dave"))));
    CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("frank"))).status == 200);
  }
  SECTION("down: the keys known are kept") {
    issuer.stop();
    check_keys_unavailable(
        initialize_with(gw, signed_token("RS256", later, issuer.claims("dave"))));
    CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("grace"))).status == 200);
  }
}

TEST_CASE("OAuth tenants take their limits from the policy file", "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  TempFile policy("oauth-policy");
  std::string host_and_port = issuer.url().substr(std::string("http://").size());
  policy.write("# every tenant\n*  max_sessions=1\n" + host_and_port +
               "#vip max_sessions=3   # a named one\n");
  GatewayProcess gw(gateway_args(
      issuer, {"--oauth-policy-file", policy.path.string(), "--at-session-cap", "refuse"}));
  std::string plain = signed_token("RS256", key, issuer.claims("plain"));
  std::string vip = signed_token("RS256", key, issuer.claims("vip"));
  CHECK(initialize_with(gw, plain).status == 200);
  CHECK(initialize_with(gw, plain).status != 200);
  for (int i = 0; i < 3; ++i) CHECK(initialize_with(gw, vip).status == 200);
  CHECK(initialize_with(gw, vip).status != 200);
}

TEST_CASE("an OAuth tenant's session survives a restart and serves its subject's next token",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  auto state = std::filesystem::temp_directory_path() /
               ("sandgate-oauth-state-" + std::to_string(::getpid()));
  struct RemoveState {
    std::filesystem::path dir;
    ~RemoveState() { std::filesystem::remove_all(dir); }
  } remove_state{state};
  auto args = gateway_args(issuer, {"--state-dir", state.string(), "--replica-name", "oauth-a"});
  const std::vector<std::string> env = {"SANDGATE_TEST_CGROUP=oauth-restart"};
  std::string session;
  {
    GatewayProcess gw(args, env);
    std::string first = signed_token("RS256", key, issuer.claims("heidi"));
    session = gw.initialize(first);
    auto r = gw.post(
        tool_call_message(1, "execute", execute_arguments("echo kept > /work/f", "bash", 30)),
        session, first);
    REQUIRE(r.status == 200);
    REQUIRE(gw.stop(SIGTERM) == 0);
  }
  GatewayProcess gw(args, env);
  // A later token of the same subject (another iat, so other bytes) reaches the session.
  auto claims = issuer.claims("heidi");
  claims["iat"] = claims["iat"].get<long>() - 1;
  std::string next = signed_token("RS256", key, claims);
  auto r = gw.post(tool_call_message(2, "execute", execute_arguments("cat /work/f", "bash", 30)),
                   session, next);
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["result"]["content"][0]["text"].get<std::string>().find("kept") !=
        std::string::npos);
  std::string other = signed_token("RS256", key, issuer.claims("ivan"));
  CHECK(gw.post(tool_call_message(3, "execute", execute_arguments("true", "bash", 30)), session,
                other)
            .status == 404);
}

TEST_CASE("an opaque token is judged by introspection, whose answers stand for a minute",
          "[integration][oauth]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  TempFile secret("oauth-client-secret");
  secret.write("s3cret value\n");
  // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
  issuer.expect_client_auth("Basic " + sandgate::base64_encode("sandgate:s3cret%20value"));
  json active = issuer.claims("kim");
  active["active"] = true;
  json other_audience = active;
  other_audience["aud"] = "https://other.example/mcp";
  json narrow = active;
  narrow["scope"] = "openid";
  issuer.answer_introspection({{"opaque-good", active},
                               {"opaque-other-audience", other_audience},
                               {"opaque-narrow", narrow}});
  GatewayProcess gw(gateway_args(
      issuer, {"--oauth-introspection-url", issuer.url() + "/introspect", "--oauth-client-id",
               "sandgate", "--oauth-client-secret-file", secret.path.string()}));

  std::string session = gw.initialize("opaque-good");
  auto r = gw.post(tool_call_message(1, "execute", execute_arguments("echo opaque", "bash", 30)),
                   session, "opaque-good");
  REQUIRE(r.status == 200);
  CHECK(r.json_body()["result"]["isError"] == false);
  // Three requests (initialize, initialized, the call), one question.
  CHECK(issuer.requests_to("/introspect") == 1);
  CHECK(metric(gw, "sandgate_auth_total{kind=\"introspection\",outcome=\"ok\"}") >= 1);

  check_invalid_token(initialize_with(gw, "opaque-made-up"));
  check_invalid_token(initialize_with(gw, "opaque-made-up"));
  CHECK(issuer.requests_to("/introspect") == 2);  // an inactive answer stands too
  check_invalid_token(initialize_with(gw, "opaque-other-audience"));
  CHECK(initialize_with(gw, "opaque-narrow").status == 403);
  // A JWT is still checked with the issuer's keys, never sent to the introspection endpoint.
  CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("lee"))).status == 200);
  CHECK(issuer.requests_to("/introspect") == 4);
  // A refused answer stands as an inactive one does: asking again changes nothing.
  check_invalid_token(initialize_with(gw, "opaque-other-audience"));
  CHECK(initialize_with(gw, "opaque-narrow").status == 403);
  CHECK(issuer.requests_to("/introspect") == 4);

  // The authorization server refuses the gateway's credentials: not the token's fault.
  issuer.expect_client_auth("Basic bm90LXRoaXM=");
  auto refused = initialize_with(gw, "opaque-fresh");
  CHECK(refused.status == 503);
  CHECK(refused.headers.count("retry-after") == 1);
}

// Issue #41: with an issuer every OAuth subject is a tenant, so an OAuth gateway without a
// tokens file shares its call slots and sandboxes between them as a tokens-file gateway does.
TEST_CASE(
    "on an OAuth gateway without a tokens file, a tenant at its share of call slots "
    "does not keep another tenant waiting",
    "[integration][oauth][tenants]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  GatewayProcess gw(gateway_args(issuer, {"--max-concurrent-calls", "2", "--timeout-max", "900"}),
                    {});
  std::string alice = signed_token("RS256", key, issuer.claims("alice"));
  std::string bob = signed_token("RS256", key, issuer.claims("bob"));
  std::string a1 = gw.initialize(alice), a2 = gw.initialize(alice), b = gw.initialize(bob);
  const std::string long_call = "sleep 641";  // a name no other test's program has
  std::future<HttpReply> first, second, theirs;
  StopGatewayFirst stop_first{gw};
  first = std::async(std::launch::async,
                     [&] { return gw.call_execute(a1, long_call, "bash", 900, 1, alice); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));
  second = std::async(std::launch::async,
                      [&] { return gw.call_execute(a2, long_call, "bash", 900, 2, alice); });
  // alice's second call is in: running (as on today's gateway without shares) or waiting.
  REQUIRE(eventually([&] {
    return sandboxed_running(long_call) == 2 || metric(gw, "sandgate_calls_waiting") == 1;
  }));

  theirs = std::async(std::launch::async,
                      [&] { return gw.call_execute(b, "echo bob ran", "bash", 30, 3, bob); });
  REQUIRE(theirs.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  auto reply = theirs.get();
  REQUIRE(reply.status == 200);
  CHECK(reply.json_body()["result"]["structuredContent"]["stdout"] == "bob ran\n");
  // alice holds half the slots: her second call waits although one is free.
  CHECK(sandboxed_running(long_call) == 1);
  CHECK(metric(gw, "sandgate_calls_waiting") == 1);
  REQUIRE(gw.stop(SIGTERM) == 0);
}

TEST_CASE(
    "on an OAuth gateway without a tokens file, a tenant whose sandboxes are all busy "
    "leaves another tenant room for one",
    "[integration][oauth][tenants]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  issuer.publish(jwk_set_of({&key}));
  GatewayProcess gw(
      gateway_args(issuer, {"--max-sandboxes", "2", "--max-concurrent-calls", "8",
                            "--tenant-max-concurrent-calls", "8", "--timeout-max", "900"}),
      {});
  std::string alice = signed_token("RS256", key, issuer.claims("alice"));
  std::string bob = signed_token("RS256", key, issuer.claims("bob"));
  std::string a1 = gw.initialize(alice), a2 = gw.initialize(alice), b = gw.initialize(bob);
  const std::string long_call = "sleep 642";
  std::future<HttpReply> busy;
  StopGatewayFirst stop_first{gw};
  busy = std::async(std::launch::async,
                    [&] { return gw.call_execute(a1, long_call, "bash", 900, 1, alice); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));
  // alice's share is one of the two sandboxes: her second session is told so at once...
  auto refused = gw.execute(a2, "echo never", "bash", 30, 2, alice);
  CHECK(refused["isError"] == true);
  CHECK(refused.dump().find("its share of live sandboxes (1)") != std::string::npos);
  // ...and bob's first call gets the other one.
  auto ran = gw.execute(b, "echo bob ran", "bash", 30, 3, bob);
  CHECK(ran["isError"] == false);
  CHECK(ran["structuredContent"]["stdout"] == "bob ran\n");
  REQUIRE(gw.stop(SIGTERM) == 0);
}

// Issue #41: the log scan covered static tokens only. OAuth tokens (JWTs, whole or in part, and
// opaque ones), their claims and the introspection client's secret never reach the log either,
// whichever way they are judged.
TEST_CASE("the log never holds an OAuth token, its claims or the introspection secret",
          "[integration][oauth][logs]") {
  TestIssuer issuer;
  auto key = rsa_key("k1");
  auto stranger = rsa_key("k1");  // the same kid, another key: a forged signature
  issuer.publish(jwk_set_of({&key}));
  TempFile secret("oauth-log-secret");
  secret.write("sandgate-client-secret-marker\n");
  issuer.expect_client_auth("Basic " +
                            sandgate::base64_encode("sandgate:sandgate-client-secret-marker"));
  json active = issuer.claims("kim");
  active["active"] = true;
  active["email"] = "sandgate-introspected-claim-marker@example.com";
  issuer.answer_introspection({{"sandgate-opaque-good-marker", active}});
  TempFile log("oauth-privacy.log");
  GatewayProcess gw(
      gateway_args(issuer, {"--log-level", "debug", "--oauth-introspection-url",
                            issuer.url() + "/introspect", "--oauth-client-id", "sandgate",
                            "--oauth-client-secret-file", secret.path.string()}),
      {}, false, {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});

  json claims = issuer.claims("alice");
  claims["email"] = "sandgate-jwt-claim-marker@example.com";
  std::string good = signed_token("RS256", key, claims);
  std::string forged = signed_token("RS256", stranger, claims);
  json expired_claims = claims;
  expired_claims["exp"] = 1000;
  std::string expired = signed_token("RS256", key, expired_claims);
  std::string session = gw.initialize(good);
  CHECK(gw.execute(session, "echo ran", "bash", 30, 1, good)["isError"] == false);
  check_invalid_token(initialize_with(gw, forged));
  check_invalid_token(initialize_with(gw, expired));
  CHECK(initialize_with(gw, "sandgate-opaque-good-marker").status == 200);
  check_invalid_token(initialize_with(gw, "sandgate-opaque-made-up-marker"));
  REQUIRE(gw.stop(SIGTERM) == 0);

  std::string logged = log.read();
  INFO(logged);
  // The log holds the requests' metadata (so an empty log cannot pass).
  REQUIRE(logged.find("auth_failed") != std::string::npos);
  REQUIRE(logged.find("\"exit_code\"") != std::string::npos);
  std::vector<std::string> secrets = {
      "sandgate-client-secret-marker", "sandgate-introspected-claim-marker",
      "sandgate-jwt-claim-marker", "sandgate-opaque-good-marker", "sandgate-opaque-made-up-marker"};
  // Each JWT whole and each of its three parts (a header or a signature logged alone).
  for (const auto& token : {good, forged, expired}) {
    secrets.push_back(token);
    std::size_t start = 0;
    for (std::size_t dot = token.find('.'); start <= token.size();
         start = dot + 1, dot = token.find('.', start)) {
      std::string part = token.substr(start, dot == std::string::npos ? dot : dot - start);
      if (part.size() >= 16) secrets.push_back(part);
      if (dot == std::string::npos) break;
    }
  }
  for (const auto& s : secrets) {
    INFO(s);
    CHECK(logged.find(s) == std::string::npos);
  }
}

namespace {

// A gateway asking the test issuer's introspection endpoint, with `more` options.
struct IntrospectingGateway {
  explicit IntrospectingGateway(std::vector<std::string> more = {}) {
    issuer.publish(jwk_set_of({&key}));
    secret.write("s3cret\n");
    json active = issuer.claims("kim");
    active["active"] = true;
    issuer.answer_introspection({{"opaque-good", active}});
    std::vector<std::string> args = {"--oauth-introspection-url",  issuer.url() + "/introspect",
                                     "--oauth-client-id",          "sandgate",
                                     "--oauth-client-secret-file", secret.path.string()};
    args.insert(args.end(), more.begin(), more.end());
    gw.emplace(gateway_args(issuer, args));
  }
  TestIssuer issuer;
  SigningKey key = rsa_key("k1");
  TempFile secret{"oauth-client-secret"};
  std::optional<GatewayProcess> gw;
};

}  // namespace

TEST_CASE("an empty or malformed token is refused at once, never introspected",
          "[integration][oauth]") {
  IntrospectingGateway setup;
  GatewayProcess& gw = *setup.gw;

  // A wrong X-MCP-AUTH without Authorization: a tokens-file token that is not one (X-MCP-AUTH
  // never carries OAuth tokens), not an empty token to ask about.
  auto r = gw.request(http::verb::post, "/mcp", initialize_message(0, "x").dump(),
                      {{"Content-Type", "application/json"},
                       {"Accept", "application/json, text/event-stream"},
                       {"X-MCP-AUTH", "not-a-tokens-file-token"}});
  CHECK(r.status == 401);
  CHECK(r.headers.count("retry-after") == 0);
  // Not RFC 6750 b64tokens, or longer than any authorization server issues.
  for (const std::string& token :
       {std::string("two words"), std::string("quote\"d"), std::string("a=b"),
        std::string("semi;colon"), std::string("percent%41"), std::string(5000, 'a')}) {
    INFO(token.substr(0, 20));
    check_invalid_token(initialize_with(gw, token));
  }
  CHECK(setup.issuer.requests_to("/introspect") == 0);
  // A plausible one is still asked about.
  check_invalid_token(initialize_with(gw, "opaque-made-up_0123456789-._~+/=="));
  CHECK(setup.issuer.requests_to("/introspect") == 1);
}

TEST_CASE(
    "a flood of made-up tokens costs the introspection endpoint a bounded number of "
    "questions, and a known token is served meanwhile",
    "[integration][oauth]") {
  // One question per second, gateway-wide.
  IntrospectingGateway setup({"--oauth-introspection-rate", "1"});
  GatewayProcess& gw = *setup.gw;
  REQUIRE(gw.initialize("opaque-good").size() > 0);
  REQUIRE(setup.issuer.requests_to("/introspect") == 1);

  constexpr int kFlood = 40;
  std::vector<std::string> refused;
  int deferred = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kFlood; ++i) {
    std::string token = "made-up-" + std::to_string(i);
    auto r = initialize_with(gw, token);
    INFO("made-up token " << i);
    if (r.status == 401) {
      refused.push_back(token);
      check_invalid_token(r);
    } else {
      ++deferred;
      // Not the token's fault: the client keeps it and comes back, told when.
      CHECK(r.status == 503);
      REQUIRE(r.headers.count("retry-after") == 1);
      CHECK(std::stoi(r.headers.at("retry-after")) >= 1);
      CHECK(challenge(r).empty());
    }
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Each made-up token asked about was refused; none deferred cost a question. At one a second
  // (the bucket's one question used by opaque-good's), at most one more than the seconds the
  // flood took: 40 questions would have taken 39 s at least.
  int asked = setup.issuer.requests_to("/introspect") - 1;
  CHECK(asked == static_cast<int>(refused.size()));
  CHECK(asked <= 1 + static_cast<int>(elapsed));
  CHECK(deferred > 0);
  CHECK(metric(gw,
               "sandgate_auth_total{kind=\"introspection\",outcome=\"introspection_rate_"
               "limited\"}") >= deferred);

  // The cap holds questions back, never a token already known, nor a JWT (not introspected).
  CHECK(initialize_with(gw, "opaque-good").status == 200);
  CHECK(initialize_with(gw, signed_token("RS256", setup.key, setup.issuer.claims("lee"))).status ==
        200);
  // The made-up tokens asked about stand refused, without another question.
  for (const auto& token : refused) check_invalid_token(initialize_with(gw, token));
  CHECK(setup.issuer.requests_to("/introspect") == 1 + asked);
}

namespace {

constexpr const char* kMetadataPath = "/.well-known/oauth-authorization-server";

// A gateway whose log the test reads: a refusal must be the check's, not the issuer being
// down or a path the test got wrong, and the log names why each fetch of the keys failed.
struct LoggedGateway {
  explicit LoggedGateway(const std::vector<std::string>& args, const std::string& name)
      : log(name),
        gw(args, {"SANDGATE_TOKEN=test-token"}, false,
           {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"}) {}
  // Whether a fetch of the keys failed with exactly this problem.
  bool fetch_failed_with(const std::string& problem) const {
    std::istringstream lines(log.read());
    for (std::string line; std::getline(lines, line);) {
      auto entry = json::parse(line, nullptr, false);
      if (entry.is_object() && entry.value("event", "") == "oauth_keys_fetch_failed" &&
          entry.value("problem", "") == problem)
        return true;
    }
    return false;
  }
  TempFile log;
  GatewayProcess gw;
};

}  // namespace

TEST_CASE("an issuer over https whose certificate --oauth-ca-file trusts serves its keys",
          "[integration][oauth]") {
  TestCa ca("trusted");
  auto key = rsa_key("k1");
  // Both ways a certificate names the host the URL does: an address, and a DNS name.
  for (std::string host : {"127.0.0.1", "localhost"}) {
    INFO(host);
    TestIssuer issuer(IssuerTls{&ca, {host}, host});
    issuer.publish(jwk_set_of({&key}));
    GatewayProcess gw(gateway_args(issuer, {"--oauth-ca-file", ca.ca_file()}));
    CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("tls"))).status == 200);
    CHECK(issuer.key_set_fetches() >= 1);
  }
}

TEST_CASE("an issuer whose certificate no CA the gateway trusts signed gets no token accepted",
          "[integration][oauth]") {
  TestCa ca("issuer");
  TestCa other("other");
  auto key = rsa_key("k1");
  // An issuer, key and token like those the test above accepts: only the trust is missing.
  // Anyone who can answer for the issuer's address can present such a certificate, and would
  // then sign tokens for any tenant.
  TestIssuer issuer(IssuerTls{&ca});
  issuer.publish(jwk_set_of({&key}));
  std::vector<std::string> args;
  SECTION("the system's trust store (no --oauth-ca-file)") {
    args = gateway_args(issuer);
  }
  SECTION("--oauth-ca-file of another CA") {
    args = gateway_args(issuer, {"--oauth-ca-file", other.ca_file()});
  }
  LoggedGateway logged(args, "oauth-untrusted.log");
  check_keys_unavailable(
      initialize_with(logged.gw, signed_token("RS256", key, issuer.claims("x"))));
  // Refused in the handshake: not even the metadata was asked for.
  CHECK(issuer.requests_to(kMetadataPath) == 0);
  CHECK(logged.fetch_failed_with("metadata: TLS (certificate or handshake)"));
}

TEST_CASE("an issuer whose certificate, from a trusted CA, names another host is refused",
          "[integration][oauth]") {
  TestCa ca("trusted");
  auto key = rsa_key("k1");
  // A good certificate, for issuer.sandgate.test only; the URL names its server by address,
  // or by another DNS name.
  for (std::string host : {"127.0.0.1", "localhost"}) {
    INFO(host);
    TestIssuer issuer(IssuerTls{&ca, {"issuer.sandgate.test"}, host});
    issuer.publish(jwk_set_of({&key}));
    LoggedGateway logged(gateway_args(issuer, {"--oauth-ca-file", ca.ca_file()}),
                         "oauth-wrong-host.log");
    check_keys_unavailable(
        initialize_with(logged.gw, signed_token("RS256", key, issuer.claims("x"))));
    CHECK(issuer.requests_to(kMetadataPath) == 0);
    CHECK(logged.fetch_failed_with("metadata: TLS (certificate or handshake)"));
  }
}

TEST_CASE("a redirect of the key set is followed within the issuer's origin only",
          "[integration][oauth]") {
  TestCa ca("trusted");
  auto key = rsa_key("k1");
  TestIssuer issuer(IssuerTls{&ca});
  // Another origin (the same address, another port) with a certificate the gateway trusts,
  // serving the very key that signs the token: only its origin can be why it is refused.
  TestIssuer elsewhere(IssuerTls{&ca});
  elsewhere.publish(jwk_set_of({&key}));
  const auto args = gateway_args(issuer, {"--oauth-ca-file", ca.ca_file()});

  SECTION("to another origin: not followed, and no token is accepted") {
    issuer.redirect("/jwks.json", elsewhere.url() + "/jwks.json");
    LoggedGateway logged(args, "oauth-redirect.log");
    check_keys_unavailable(
        initialize_with(logged.gw, signed_token("RS256", key, issuer.claims("x"))));
    CHECK(issuer.key_set_fetches() >= 1);
    CHECK(elsewhere.key_set_fetches() == 0);
    CHECK(logged.fetch_failed_with("jwks: redirect to another origin"));
  }
  SECTION("within the issuer's origin: followed (the redirect itself is not what is refused)") {
    issuer.publish(jwk_set_of({&key}), "moved-jwks.json");
    issuer.redirect("/jwks.json", issuer.url() + "/moved-jwks.json");
    GatewayProcess gw(args);
    CHECK(initialize_with(gw, signed_token("RS256", key, issuer.claims("x"))).status == 200);
    CHECK(issuer.requests_to("/moved-jwks.json") >= 1);
  }
}
