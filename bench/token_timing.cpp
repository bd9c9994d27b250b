// Does the time of a token check say anything about the secret? A dudect-style statistical test
// (Reparaz, Balasch, Verbauwhede 2017): classes of wrong tokens are timed in random interleaved
// order, and Welch's t statistic compares each class with a reference class. |t| above 4.5 is
// evidence of a timing difference; below it, none was measurable with this many samples.
//
// What must not show: how much of a wrong token matches a real one (its prefix), and whether its
// length is near the real token's. What may show: the presented token's own length (hashing
// more bytes takes longer) — the attacker knows it already; it says nothing about any secret.
//
//   token_timing [samples per class] [output directory]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "auth/authenticate.hpp"
#include "auth/token_store.hpp"
#include "bench/common/measure.hpp"

using namespace sandgate;
using nlohmann::json;

namespace {

constexpr int kChecksPerSample = 32;  // one sample times this many checks (timer resolution)
constexpr double kThreshold = 4.5;

struct Class {
  std::string name;
  std::string group;                 // "prefix", "length" or "public"
  std::vector<std::string> headers;  // the Authorization values tried, cycled
  std::vector<double> ns;
};

std::string random_token(std::mt19937_64& random, std::size_t length, char avoid_first = 0) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string t(length, 'x');
  for (auto& c : t) c = alphabet[random() % 64];
  if (!t.empty() && t[0] == avoid_first) t[0] = t[0] == 'A' ? 'B' : 'A';
  return t;
}

// Welch's t statistic of two samples, after dropping the slowest 5% of each (interrupts,
// preemption: the tail says nothing about the code under test).
double welch_t(std::vector<double> a, std::vector<double> b) {
  auto trim = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    v.resize(v.size() * 95 / 100);
  };
  trim(a);
  trim(b);
  auto moments = [](const std::vector<double>& v) {
    double mean = 0, m2 = 0;
    for (double x : v) mean += x;
    mean /= v.size();
    for (double x : v) m2 += (x - mean) * (x - mean);
    return std::pair{mean, m2 / (v.size() - 1)};
  };
  auto [ma, va] = moments(a);
  auto [mb, vb] = moments(b);
  return (ma - mb) / std::sqrt(va / a.size() + vb / b.size());
}

double median(std::vector<double> v) {
  return bench::stats(std::move(v)).p50;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = argc > 1 ? std::atoi(argv[1]) : 200000;
  std::filesystem::path out_dir = argc > 2 ? argv[2] : "bench/results";
  std::mt19937_64 random(2026);

  // Ten tenants, as a tokens file would give; the secret is the fifth one's token.
  std::string file;
  std::vector<std::string> tokens;
  for (int i = 0; i < 10; ++i) {
    tokens.push_back(random_token(random, 43));  // 256 bits in base64url, like `openssl rand`
    file += auth::to_hex(auth::sha256(tokens.back())) + " tenant" + std::to_string(i) + "\n";
  }
  auto store = auth::TokenStore::parse(file);
  const std::string secret = tokens[4];
  const std::size_t length = secret.size();

  auto variants = [&](auto make) {
    std::vector<std::string> v;
    for (int i = 0; i < 64; ++i) v.push_back("Bearer " + make());
    return v;
  };
  auto with_prefix = [&](std::size_t n) {
    return [&, n] {
      std::string t = secret.substr(0, n) + random_token(random, length - n, secret[n]);
      return t;
    };
  };
  std::vector<Class> classes = {
      {"same length, no common prefix (reference)", "reference", variants(with_prefix(0)), {}},
      {"same length, first half matches", "prefix", variants(with_prefix(length / 2)), {}},
      {"same length, all but the last character match",
       "prefix",
       variants(with_prefix(length - 1)),
       {}},
      {"one shorter than the real token",
       "length",
       variants([&] { return random_token(random, length - 1, secret[0]); }),
       {}},
      {"one longer than the real token",
       "length",
       variants([&] { return random_token(random, length + 1, secret[0]); }),
       {}},
      {"1 byte", "public", variants([&] { return random_token(random, 1, secret[0]); }), {}},
      {"55 bytes (the most one SHA-256 block holds)",
       "public",
       variants([&] { return random_token(random, 55, secret[0]); }),
       {}},
      {"200 bytes (four SHA-256 blocks)",
       "public",
       variants([&] { return random_token(random, 200, secret[0]); }),
       {}},
  };

  // Warm up, then time classes in a random interleaved order.
  std::size_t sink = 0;
  for (int i = 0; i < 20000; ++i)
    sink += auth::authenticate(store, classes[i % classes.size()].headers[i % 64], {}).status ==
            auth::AuthStatus::ok;
  std::uniform_int_distribution<std::size_t> pick(0, classes.size() - 1);
  for (long i = 0; i < long(samples) * long(classes.size()); ++i) {
    auto& c = classes[pick(random)];
    const auto& header = c.headers[i % 64];
    auto start = bench::Clock::now();
    for (int k = 0; k < kChecksPerSample; ++k)
      sink += auth::authenticate(store, header, {}).status == auth::AuthStatus::ok;
    auto elapsed = std::chrono::duration<double, std::nano>(bench::Clock::now() - start).count();
    c.ns.push_back(elapsed / kChecksPerSample);
  }
  if (sink != 0) {
    std::cerr << "token_timing: a wrong token was accepted\n";
    return 1;
  }

  bool pass = true;
  json results = {{"machine", bench::machine()},           {"samples_per_class", samples},
                  {"checks_per_sample", kChecksPerSample}, {"tenants", 10},
                  {"threshold_abs_t", kThreshold},         {"classes", json::array()}};
  std::string md = "Machine: " + bench::machine() + "; " + std::to_string(samples) +
                   " samples per class (each the mean of " + std::to_string(kChecksPerSample) +
                   " checks), classes interleaved at random; 10 tenants; the real token is 43 "
                   "characters. Welch's t against the reference class; |t| > 4.5 would be a "
                   "measurable difference.\n\n| wrong token | group | median ns per check | t | "
                   "verdict |\n|---|---|---|---|---|\n";
  const auto& reference = classes[0];
  for (const auto& c : classes) {
    double t = &c == &reference ? 0.0 : welch_t(c.ns, reference.ns);
    bool must_not_differ = c.group == "prefix" || c.group == "length";
    bool differs = std::abs(t) > kThreshold;
    if (must_not_differ && differs) pass = false;
    std::string verdict = c.group == "reference" ? "–"
                          : c.group == "public"  ? (differs ? "differs (public: the presented "
                                                              "token's own length)"
                                                            : "no difference")
                          : differs              ? "DIFFERS"
                                                 : "no measurable difference";
    results["classes"].push_back({{"name", c.name},
                                  {"group", c.group},
                                  {"median_ns", median(c.ns)},
                                  {"t", t},
                                  {"differs", differs}});
    char row[512];
    std::snprintf(row, sizeof row, "| %s | %s | %.0f | %.2f | %s |\n", c.name.c_str(),
                  c.group.c_str(), median(c.ns), t, verdict.c_str());
    md += row;
  }
  results["pass"] = pass;
  md += std::string("\nVerdict: ") +
        (pass ? "no timing difference tied to the secret (prefix or length) was measurable."
              : "a timing difference tied to the secret was measured.") +
        "\n";
  std::filesystem::create_directories(out_dir);
  std::ofstream(out_dir / "token_timing.json") << results.dump(2) << "\n";
  std::ofstream(out_dir / "token_timing.md") << md;
  std::cout << md;
  return pass ? 0 : 1;
}
