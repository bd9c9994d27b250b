// A tenant's terms (tenant/tenant_terms): the `key=value` options of a tokens-file line (read
// here through auth::TokenStore::parse, as the gateway reads them), the gateway's defaults under
// them, the egress its relays enforce, and errors that never repeat what the file says.
#include "tenant/tenant_terms.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "auth/token_store.hpp"

using namespace sandgate::auth;

TEST_CASE("a tenant's share of the call slots comes from the tokens file", "[unit][auth]") {
  std::string d = to_hex(sha256("x")), e = to_hex(sha256("y"));
  Tenant defaults;
  defaults.max_concurrent_calls = 8;
  auto store = TokenStore::parse(d + " t max_concurrent_calls=3\n" + e + " u\n", defaults);
  CHECK(store.find("x")->max_concurrent_calls == 3u);
  CHECK(store.find("y")->max_concurrent_calls == 8u);  // the gateway's default
  // 0 would never run a call.
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_concurrent_calls=0\n"),
                    Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_concurrent_calls=2x\n"),
                    Catch::Contains("bad option"));
}

TEST_CASE("a tenant's share of live sandboxes comes from the tokens file", "[unit][auth]") {
  std::string d = to_hex(sha256("x")), e = to_hex(sha256("y"));
  auto store = TokenStore::parse(d + " t max_sandboxes=4 max_concurrent_calls=2\n" + e + " u\n");
  CHECK(store.find("x")->max_sandboxes == 4u);
  CHECK(store.find("x")->max_concurrent_calls == 2u);
  CHECK(store.find("y")->max_sandboxes == 0u);  // no share of its own: the default
  // 0 would refuse every call that needs a sandbox.
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sandboxes=0\n"), Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sandboxes=-1\n"), Catch::Contains("bad option"));
}

TEST_CASE("a tenant's egress allow-list and caps come from the tokens file", "[unit][auth]") {
  std::string d = to_hex(sha256("x")), e = to_hex(sha256("y"));
  auto store = TokenStore::parse(d +
                                 " t egress=pypi.org,files.pythonhosted.org,mirror.internal:8443 "
                                 "egress_connections=4 egress_mb_per_call=10 "
                                 "egress_mb_per_sandbox=100\n" +
                                 e + " u\n");
  auto t = store.find("x");
  REQUIRE(t->has_egress());
  CHECK(t->egress_allowed->to_text() == "pypi.org,files.pythonhosted.org,mirror.internal:8443");
  CHECK(t->egress_allowed->allows("mirror.internal", 8443, 443));
  CHECK_FALSE(t->egress_allowed->allows("mirror.internal", 443, 443));
  CHECK(t->egress_connections == 4u);
  CHECK(t->egress_bytes_per_call == 10ull << 20);
  CHECK(t->egress_bytes_per_sandbox == 100ull << 20);
  // What its sandboxes' relays enforce, resolved from the same terms.
  auto relayed = t->egress();
  REQUIRE(relayed);
  CHECK(relayed->max_connections == 4u);
  CHECK(relayed->max_bytes_per_call == 10ull << 20);
  // Without egress= a tenant has none: no proxy for its sandboxes.
  CHECK_FALSE(store.find("y")->has_egress());
  CHECK_FALSE(store.find("y")->egress());
  for (const char* bad : {" t egress=", " t egress=a,,b", " t egress=host:0", " t egress=*",
                          " t egress_connections=0", " t egress_mb_per_call=x"})
    CHECK_THROWS_WITH(TokenStore::parse(d + bad + "\n"), Catch::Contains("line 1"));
  // The entry's words are not repeated (one pasted by mistake could be a secret).
  try {
    TokenStore::parse(d + " t egress=ok.example,sk_live_0123456789:99999\n");
    FAIL("parsed");
  } catch (const std::runtime_error& err) {
    std::string what = err.what();
    CHECK(what.find("egress entry 2") != std::string::npos);
    CHECK(what.find("sk_live") == std::string::npos);
  }
}

TEST_CASE("a tokens file error never repeats what the file says", "[unit][auth]") {
  // An operator pasting a token where an option goes must not find it in the logs.
  std::string d = to_hex(sha256("x"));
  try {
    TokenStore::parse(d + " t sk-live-0123456789\n");
    FAIL("parsed");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    CHECK(what.find("line 1") != std::string::npos);
    CHECK(what.find("sk-live") == std::string::npos);
  }
  try {
    TokenStore::parse(d + " t max_sessions=sk-live-0123456789\n");
    FAIL("parsed");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("sk-live") == std::string::npos);
  }
}

TEST_CASE("a tenant's environments come from its line, the first its default",
          "[unit][auth][environments]") {
  std::string d = to_hex(sha256("x")), e = to_hex(sha256("y"));
  auto store = TokenStore::parse(d + " t environments=analysis,base,gpu-2\n" + e + " u\n");
  CHECK(store.find("x")->environments == std::vector<std::string>{"analysis", "base", "gpu-2"});
  CHECK(store.find("y")->environments.empty());  // base only
  for (std::string bad : {"environments=", "environments=a,,b", "environments=Upper",
                          "environments=-lead", "environments=a/b", "environments=a,a"}) {
    INFO(bad);
    // The error names the option, never what was written.
    CHECK_THROWS_WITH(TokenStore::parse(d + " t " + bad + "\n"), Catch::Contains("environment "));
    CHECK_THROWS_WITH(TokenStore::parse(d + " t " + bad + "\n"),
                      !Catch::Contains("Upper") && !Catch::Contains("a/b"));
  }
}
