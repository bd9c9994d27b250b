#include "server/gateway/config.hpp"

#include <catch2/catch.hpp>

#include "sandbox/file_util.hpp"

using namespace sandgate::server;

namespace {
ParseOutcome parse(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<char*> argv{const_cast<char*>("sandgate")};
  for (auto& a : args) argv.push_back(a.data());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  return parse_config(static_cast<int>(argv.size()), argv.data(), envp.data());
}
}  // namespace

TEST_CASE("configuration from flags and SANDGATE_* variables", "[unit][config]") {
  SECTION("the server refuses to start without a token") {
    auto r = parse({});
    CHECK_FALSE(r.config);
    CHECK(r.exit_code == 2);
    CHECK(r.message.find("no token") != std::string::npos);
  }
  SECTION("--no-auth is refused off loopback") {
    CHECK_FALSE(parse({"--no-auth", "--listen", "0.0.0.0:8080"}).config);
    CHECK(parse({"--no-auth"}).config);
  }
  SECTION("OAuth: an issuer alone is a credential, and its options hold together") {
    auto r = parse({"--oauth-issuer", "https://idp.example.com/realms/a", "--resource-url",
                    "https://sandgate.example.com/mcp", "--oauth-scopes", "sandgate:execute"},
                   {"SANDGATE_OAUTH_TENANT_CLAIM=org"});
    REQUIRE(r.config);
    CHECK(r.config->auth.oauth.issuers ==
          std::vector<std::string>{"https://idp.example.com/realms/a"});
    CHECK(r.config->auth.oauth.tenant_claim == "org");
    auto refused = [&](std::vector<std::string> args, const std::string& why) {
      INFO(why);
      auto out = parse(args, {"SANDGATE_TOKEN=t"});
      CHECK_FALSE(out.config);
      CHECK(out.message.find(why) != std::string::npos);
    };
    refused({"--oauth-issuer", "https://idp.example.com"}, "needs --resource-url");
    refused({"--resource-url", "https://s.example.com/mcp"}, "need --oauth-issuer");
    refused({"--oauth-issuer", "http://idp.example.com", "--resource-url", "https://s/mcp"},
            "only for a loopback host");
    refused({"--oauth-issuer", "https://idp.example.com,https://idp.example.com/", "--resource-url",
             "https://s.example.com/mcp"},
            "share names");
    refused({"--oauth-issuer", "https://idp.example.com", "--resource-url",
             "https://s.example.com/mcp", "--no-auth"},
            "exclude each other");
    refused({"--oauth-issuer", "https://idp.example.com", "--resource-url",
             "https://s.example.com/mcp", "--oauth-introspection-url", "https://idp.example.com/i"},
            "needs --oauth-client-id");
    refused({"--oauth-scopes", "a b"}, "printable ASCII without spaces");
    // Issue #41: every tenant name (issuer, '#', claim) fits the saved registry's bound.
    refused({"--oauth-issuer", "https://idp.example.com/" + std::string(220, 'r'), "--resource-url",
             "https://s.example.com/mcp"},
            "is too long");
    // The introspection cap: questions a second, never none (no opaque token could be judged).
    CHECK(parse({"--oauth-introspection-rate", "5"}, {"SANDGATE_TOKEN=t"})
              .config->auth.oauth.introspection_rate == 5);
    CHECK_FALSE(parse({"--oauth-introspection-rate", "0"}, {"SANDGATE_TOKEN=t"}).config);
  }
  SECTION("egress: the upstream proxy, the price and the default caps") {
    auto r = parse({"--egress-upstream-proxy", "proxy.corp.example:3128", "--egress-price-gib", "0",
                    "--egress-connections", "8", "--egress-mb-per-call", "64"},
                   {"SANDGATE_TOKEN=t", "SANDGATE_EGRESS_MB_PER_SANDBOX=512"});
    REQUIRE(r.config);
    REQUIRE(r.config->registry.egress_proxy.upstream);
    CHECK(r.config->registry.egress_proxy.upstream->host == "proxy.corp.example");
    CHECK(r.config->registry.egress_proxy.upstream->port == 3128);
    CHECK(r.config->host.prices.usd_per_egress_gib == 0);
    CHECK(r.config->tenants.egress_connections == 8u);
    CHECK(r.config->tenants.egress_bytes_per_call == 64ull << 20);
    CHECK(r.config->tenants.egress_bytes_per_sandbox == 512ull << 20);
    auto url = parse({"--egress-upstream-proxy", "http://[fd00::3]:8080/"}, {"SANDGATE_TOKEN=t"});
    REQUIRE(url.config);
    CHECK(url.config->registry.egress_proxy.upstream->host == "fd00::3");
    for (const char* bad : {"proxy.corp.example", "proxy:0", "user@proxy:3128", "fd00::3:8080"})
      CHECK_FALSE(parse({"--egress-upstream-proxy", bad}, {"SANDGATE_TOKEN=t"}).config);
    CHECK_FALSE(parse({"--egress-price-gib", "-1"}, {"SANDGATE_TOKEN=t"}).config);
    CHECK_FALSE(parse({"--egress-connections", "0"}, {"SANDGATE_TOKEN=t"}).config);
  }
  SECTION("the pool of ready sandboxes: on by default, its preload names checked") {
    auto r = parse({}, {"SANDGATE_TOKEN=t"});
    REQUIRE(r.config);
    CHECK(r.config->host.pool.size == 2);
    CHECK(r.config->host.pool.preload ==
          std::vector<std::string>{"numpy", "pandas", "matplotlib.pyplot"});
    auto off = parse({"--pool-size", "0", "--pool-preload", ""}, {"SANDGATE_TOKEN=t"});
    REQUIRE(off.config);
    CHECK(off.config->host.pool.size == 0);
    CHECK(off.config->host.pool.preload.empty());
    auto bad = parse({"--pool-preload", "numpy,os;import sys"}, {"SANDGATE_TOKEN=t"});
    CHECK_FALSE(bad.config);
    CHECK(bad.message.find("not a dotted Python module name") != std::string::npos);
    CHECK_FALSE(parse({"--pool-size", "65"}, {"SANDGATE_TOKEN=t"}).config);
  }
  SECTION("flags win over the environment") {
    auto r = parse({"--listen=127.0.0.1:9000", "--memory-mb", "256"},
                   {"SANDGATE_TOKEN=t", "SANDGATE_LISTEN=127.0.0.1:7000", "SANDGATE_CPUS=0.5"});
    REQUIRE(r.config);
    CHECK(r.config->http.listen_port == 9000);
    CHECK(r.config->host.limits.memory_bytes == 256ull << 20);
    CHECK(r.config->host.limits.cpus == Approx(0.5));
    CHECK(r.config->auth.token == "t");
  }
  SECTION("bad values are named") {
    auto r = parse({"--timeout-max", "abc"}, {"SANDGATE_TOKEN=t"});
    CHECK_FALSE(r.config);
    CHECK(r.message.find("--timeout-max") != std::string::npos);
    CHECK(parse({"--bogus"}, {"SANDGATE_TOKEN=t"}).message.find("unknown option") !=
          std::string::npos);
  }
  SECTION("--at-session-cap is evict unless told refuse, and nothing else") {
    auto by_default = parse({}, {"SANDGATE_TOKEN=t"});
    REQUIRE(by_default.config);
    CHECK(by_default.config->registry.at_session_cap == sandgate::session::AtSessionCap::evict);
    auto refuse = parse({}, {"SANDGATE_TOKEN=t", "SANDGATE_AT_SESSION_CAP=refuse"});
    REQUIRE(refuse.config);
    CHECK(refuse.config->registry.at_session_cap == sandgate::session::AtSessionCap::refuse);
    auto bad = parse({"--at-session-cap", "lru"}, {"SANDGATE_TOKEN=t"});
    CHECK_FALSE(bad.config);
    CHECK(bad.message.find("evict or refuse") != std::string::npos);
  }
  SECTION("--help lists every option with its variable") {
    auto r = parse({"--help"});
    CHECK(r.exit_code == 0);
    CHECK(r.message.find("SANDGATE_SPEND_CAP_USD") != std::string::npos);
    CHECK(r.message.find("--tls-cert") != std::string::npos);
  }
  SECTION("--sandbox-uid-base stays clear of real accounts on a host") {
    bool on_host =
        sandgate::sandbox::read_file("/proc/self/uid_map").value_or("").find("4294967295") !=
        std::string::npos;
    auto low = parse({"--sandbox-uid-base", "10000"}, {"SANDGATE_TOKEN=t"});
    if (on_host) {
      CHECK_FALSE(low.config);
      CHECK(low.message.find("--sandbox-uid-base") != std::string::npos);
      CHECK(low.message.find("below 100000") != std::string::npos);
    } else {
      CHECK(low.config);  // in a user namespace the ids are its own
    }
    CHECK(parse({"--sandbox-uid-base", "100000"}, {"SANDGATE_TOKEN=t"}).config);
  }
  SECTION("the body limit defaults to 2 MiB plus the stdin cap plus the files cap in base64") {
    auto r =
        parse({"--stdin-max-bytes", "1000", "--files-in-max-bytes", "3000"}, {"SANDGATE_TOKEN=t"});
    CHECK(effective_body_limit(*r.config) == (2u << 20) + 1000 + 4000);
  }
}

TEST_CASE("every default --help shows is the default the gateway runs with", "[config]") {
  // The help table writes defaults as text and the Config struct as values; setting each
  // option to its shown default must leave a default Config unchanged.
  CHECK(options_whose_shown_default_differs() == std::vector<std::string>{});
}
