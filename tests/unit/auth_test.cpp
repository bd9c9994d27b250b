#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "auth/authenticate.hpp"
#include "auth/token_file.hpp"

using namespace sandgate::auth;

TEST_CASE("a tokens file maps token digests to tenants", "[unit][auth]") {
  std::string acme = to_hex(sha256("acme-token"));
  std::string beta = to_hex(sha256("beta-token"));
  auto store = TokenStore::parse("# tenants\n" + acme +
                                 " acme max_sessions=5 spend_cap_usd=2.5\n\n" + beta + " beta\n");
  REQUIRE(store.size() == 2);
  auto a = store.find("acme-token");
  REQUIRE(a);
  CHECK(a->name == "acme");
  CHECK(a->max_sessions == 5u);
  CHECK(a->spend_cap_usd == Approx(2.5));
  CHECK(store.find("beta-token")->name == "beta");
  CHECK(store.find("acme-token ") == nullptr);
  CHECK(store.find("") == nullptr);
  CHECK(store.find(acme) == nullptr);  // the digest itself is not a token
}

TEST_CASE("a bad tokens file names the line", "[unit][auth]") {
  CHECK_THROWS_WITH(TokenStore::parse("nothex tenant\n"), Catch::Contains("line 1"));
  std::string d = to_hex(sha256("x"));
  CHECK_THROWS_WITH(TokenStore::parse("\n" + d + "\n"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sessions=-1\n"), Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t colour=blue\n"), Catch::Contains("bad option"));
  CHECK_THROWS(TokenStore::parse("# only comments\n"));
  // Found by reading the parser for the fuzz target: values that used to be accepted silently.
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sessions=4294967296\n"),
                    Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t spend_cap_usd=inf\n"), Catch::Contains("bad option"));
  // Issue #41: a name the saved registry would drop is refused where it is made.
  CHECK_THROWS_WITH(TokenStore::parse(d + " " + std::string(257, 't') + "\n"),
                    Catch::Contains("longer than 256 bytes"));
  CHECK(
      TokenStore::parse(d + " " + std::string(256, 't') + "\n").find_tenant(std::string(256, 't')));
  CHECK_THROWS_WITH(TokenStore::parse(d + " a\n" + d + " b\n"),
                    Catch::Contains("line 2") && Catch::Contains("already listed"));
}

TEST_CASE("tokens come from Authorization: Bearer or X-MCP-AUTH", "[unit][auth]") {
  auto store = TokenStore::single("s3cret");
  CHECK(authenticate(store, "Bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(store, "bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(store, "", "s3cret").status == AuthStatus::ok);
  CHECK(authenticate(store, "", "").status == AuthStatus::missing);
  CHECK(authenticate(store, "Bearer wrong", "").status == AuthStatus::invalid);
  CHECK(authenticate(store, "Basic czNjcmV0", "").status == AuthStatus::invalid);
  CHECK(authenticate(store, "Bearer S3CRET", "").status == AuthStatus::invalid);
  // Auth off: everyone is "anonymous", with the gateway's defaults.
  Tenant defaults;
  defaults.max_sessions = 7;
  auto open = TokenStore::anyone(defaults);
  auto anyone = authenticate(open, "", "");
  CHECK(anyone.status == AuthStatus::ok);
  CHECK(anyone.tenant->name == "anonymous");
  CHECK(anyone.tenant->max_sessions == 7u);
  CHECK(open.find_tenant("anonymous") == anyone.tenant);
}

TEST_CASE("no wrong token is accepted over many tries", "[unit][auth]") {
  const std::string real = "s3cret-Token_0123456789abcdef";
  auto store = TokenStore::single(real);
  std::mt19937 random(7);
  int accepted = 0;
  auto check = [&](const std::string& t) { accepted += store.find(t) ? 1 : 0; };
  // Near misses: every prefix, every one-character change, case changes, padding.
  for (std::size_t n = 0; n < real.size(); ++n) check(real.substr(0, n));
  for (std::size_t i = 0; i < real.size(); ++i)
    for (int delta : {1, -1, 32}) {
      std::string t = real;
      t[i] = static_cast<char>(t[i] ^ delta);
      if (t != real) check(t);
    }
  check(real + " ");
  check(" " + real);
  check(real + real);
  check(to_hex(sha256(real)));
  // And 100,000 random tokens of every length up to 128 bytes, any byte values.
  for (int i = 0; i < 100000; ++i) {
    std::string t(std::uniform_int_distribution<int>(0, 128)(random), '\0');
    for (auto& c : t) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
    if (t != real) check(t);
  }
  CHECK(accepted == 0);
  CHECK(store.find(real) != nullptr);
}

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

TEST_CASE("replacing the tokens keeps tenants already handed out", "[unit][auth]") {
  auto store = TokenStore::parse(to_hex(sha256("old")) + " before max_sessions=1\n");
  auto held = store.find("old");
  REQUIRE(held);
  store.replace(TokenStore::parse(to_hex(sha256("new")) + " after\n"));
  CHECK(store.find("old") == nullptr);
  REQUIRE(store.find("new"));
  CHECK(store.find("new")->name == "after");
  // A request authenticated before the swap still has its tenant, intact.
  CHECK(held->name == "before");
  CHECK(held->max_sessions == 1u);
  CHECK(store.size() == 1);
}

TEST_CASE("lookups and replacements may run on different threads", "[unit][auth]") {
  // Run under ThreadSanitizer (scripts/test.sh tsan) this proves the swap is race-free; here it
  // proves that every lookup sees one whole table or the other.
  auto store = TokenStore::parse(to_hex(sha256("a")) + " one\n");
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!stop) {
      auto a = store.find("a"), b = store.find("b");
      if (a && a->name != "one") ++torn;
      if (b && b->name != "two") ++torn;
    }
  });
  for (int i = 0; i < 2000; ++i)
    store.replace(
        TokenStore::parse(to_hex(sha256(i % 2 ? "a" : "b")) + (i % 2 ? " one\n" : " two\n")));
  stop = true;
  reader.join();
  CHECK(torn == 0);
}

TEST_CASE("a tokens file others may write is refused, one others may read is a warning",
          "[unit][auth]") {
  const std::filesystem::path p = "/etc/sandgate/tokens";
  CHECK(judge_token_file_mode(p, S_IFREG | 0600, false).refusal.empty());
  CHECK(judge_token_file_mode(p, S_IFREG | 0600, false).warning.empty());
  CHECK(judge_token_file_mode(p, S_IFREG | 0400, false).warning.empty());
  auto readable = judge_token_file_mode(p, S_IFREG | 0644, false);
  CHECK(readable.refusal.empty());
  CHECK_THAT(readable.warning, Catch::Contains("readable by group or others") &&
                                   Catch::Contains("0644") && Catch::Contains("chmod 600"));
  CHECK_FALSE(judge_token_file_mode(p, S_IFREG | 0640, false).warning.empty());
  CHECK_THAT(judge_token_file_mode(p, S_IFREG | 0620, false).refusal,
             Catch::Contains("writable by group or others"));
  CHECK_FALSE(judge_token_file_mode(p, S_IFREG | 0602, false).refusal.empty());
  // A read-only mount (a Kubernetes Secret) cannot be written, whatever its mode says.
  auto secret = judge_token_file_mode(p, S_IFREG | 0666, true);
  CHECK(secret.refusal.empty());
  CHECK_FALSE(secret.warning.empty());
  CHECK_FALSE(judge_token_file_mode(p, S_IFIFO | 0600, false).refusal.empty());
}

TEST_CASE("the tokens file's mode is judged on the file that is read", "[unit][auth]") {
  auto path =
      std::filesystem::temp_directory_path() / ("sandgate-auth-test-" + std::to_string(::getpid()));
  {
    std::ofstream f(path);
    f << to_hex(sha256("tok")) << " t\n";
  }
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto ok = load_token_file(path);
  CHECK(ok.warning.empty());
  CHECK(ok.store.find("tok"));
  ::chmod(path.c_str(), 0644);
  CHECK_FALSE(load_token_file(path).warning.empty());
  ::chmod(path.c_str(), 0664);
  CHECK_THROWS_WITH(load_token_file(path), Catch::Contains("writable by group or others"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(load_token_file(path), Catch::Contains("cannot read"));
}
