// What an OAuth access token costs a warm call, next to a tokens-file token: one gateway that
// accepts both (a stand-in issuer on loopback serves its keys), two sessions, warm bash `true`
// calls interleaved between them, who goes first alternating. Writes auth.md and auth.json.
//
//   auth_bench --sandgate PATH --issuer-script PATH [--calls N] [--out DIR]
//
// The JWT's key is fetched before timing starts (the warm-up's first call), so this measures
// the steady state the issue asks about: a token already verified is remembered by its
// SHA-256, so each later request costs a digest and a lookup, not a signature check.
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench/common/measure.hpp"
#include "tests/support/gateway_launch.hpp"
#include "tests/support/jwt_signing.hpp"
#include "tests/support/mcp_client.hpp"
#include "tests/support/server_process.hpp"

namespace asio = boost::asio;
namespace bench = sandgate::bench;
namespace test = sandgate::test;
using nlohmann::json;

namespace {

constexpr const char* kResource = "https://bench.test/mcp";
constexpr const char* kStaticToken = "auth-bench-static-token-0123456789";

struct Options {
  std::string sandgate;
  std::string issuer_script;
  int calls = 2000;
  std::filesystem::path out = "bench/results";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--sandgate")
      o.sandgate = value();
    else if (arg == "--issuer-script")
      o.issuer_script = value();
    else if (arg == "--calls")
      o.calls = std::stoi(value());
    else if (arg == "--out")
      o.out = value();
    else
      throw std::invalid_argument("unknown option " + arg);
  }
  if (o.sandgate.empty() || o.issuer_script.empty())
    throw std::invalid_argument("--sandgate and --issuer-script are required");
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

struct Timings {
  std::vector<double> static_ms, jwt_ms;
  int errors = 0;
};

asio::awaitable<Timings> interleave(test::McpClient& by_static, test::McpClient& by_jwt,
                                    int calls) {
  Timings t;
  std::string static_session = co_await by_static.initialize();
  std::string jwt_session = co_await by_jwt.initialize();
  for (int i = 0; i < 20; ++i) {  // both sandboxes started, the interpreters warm
    co_await by_static.execute(static_session, "bash", "true");
    co_await by_jwt.execute(jwt_session, "bash", "true");
  }
  for (int i = 0; i < calls; ++i)
    for (int turn = 0; turn < 2; ++turn) {
      bool jwt = (i + turn) % 2 == 1;
      auto start = bench::Clock::now();
      try {
        if (jwt)
          co_await by_jwt.execute(jwt_session, "bash", "true");
        else
          co_await by_static.execute(static_session, "bash", "true");
        (jwt ? t.jwt_ms : t.static_ms).push_back(bench::ms_since(start));
      } catch (const std::exception&) {
        ++t.errors;
      }
    }
  co_return t;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  std::filesystem::create_directories(o.out);
  auto dir = std::filesystem::temp_directory_path() /
             ("sandgate-auth-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / ".well-known");
  struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() { std::filesystem::remove_all(dir); }
  } remove_dir{dir};

  test::ServerProcess issuer("issuer", {"/usr/bin/python3", o.issuer_script, dir.string()},
                             {"PATH=/usr/bin:/bin"});
  std::string issuer_url = "http://127.0.0.1:" + std::to_string(issuer.port());
  auto key = test::rsa_key("bench");
  write_file(dir / ".well-known/oauth-authorization-server",
             json{{"issuer", issuer_url}, {"jwks_uri", issuer_url + "/jwks.json"}}.dump());
  write_file(dir / "jwks.json", test::jwk_set_of({&key}).dump());
  long now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::string jwt = test::signed_token(
      "RS256", key,
      {{"iss", issuer_url}, {"sub", "bench"}, {"aud", kResource}, {"exp", now + 86400}});

  test::ServerProcess gateway(
      "sandgate",
      test::sandgate_command(o.sandgate, {"--oauth-issuer", issuer_url, "--resource-url", kResource,
                                          "--max-concurrent-calls", "4"}),
      {"PATH=/usr/bin:/bin", std::string("SANDGATE_TOKEN=") + kStaticToken},
      test::LaunchOptions{.ready_path = "/readyz"});

  asio::io_context io;
  test::McpClient by_static(io.get_executor(), gateway.endpoint(), kStaticToken);
  test::McpClient by_jwt(io.get_executor(), gateway.endpoint(), jwt);
  auto done = asio::co_spawn(io, interleave(by_static, by_jwt, o.calls), asio::use_future);
  io.run();
  Timings t = done.get();

  double s50 = percentile(t.static_ms, 0.5), j50 = percentile(t.jwt_ms, 0.5);
  double s90 = percentile(t.static_ms, 0.9), j90 = percentile(t.jwt_ms, 0.9);
  json out = {{"machine", bench::machine()},
              {"calls_each", o.calls},
              {"errors", t.errors},
              {"static", {{"p50_ms", s50}, {"p90_ms", s90}}},
              {"jwt", {{"p50_ms", j50}, {"p90_ms", j90}}},
              {"jwt_over_static_p50", j50 / s50}};
  char row[256];
  std::snprintf(row, sizeof row,
                "| warm bash `true`, p50 ms | %.3f | %.3f | %.3f |\n"
                "| warm bash `true`, p90 ms | %.3f | %.3f | %.3f |\n",
                s50, j50, j50 / s50, s90, j90, j90 / s90);
  std::string md = "## OAuth access token vs tokens-file token (`bench/auth_bench`)\n\n" +
                   bench::machine() + "; " + std::to_string(o.calls) +
                   " calls each, interleaved, one gateway, two warm sessions.\n\n"
                   "| what | tokens-file token | JWT (RS256, key cached) | JWT / static |\n"
                   "|---|---|---|---|\n" +
                   row;
  write_file(o.out / "auth.json", out.dump(2) + "\n");
  write_file(o.out / "auth.md", md);
  std::cout << md;
  return t.errors == 0 && !t.static_ms.empty() && !t.jwt_ms.empty() ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "auth_bench: " << e.what() << "\n";
  return 1;
}
