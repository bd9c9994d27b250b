// LiveOutput on its own: how chunks become notifications (marks, UTF-8 cut between reads, the
// size bound and what it leaves out, increasing progress), with recorded events.
#include "server/tools/live_output.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <vector>

#include "common/utf8.hpp"

using namespace sandgate::server;
using sandgate::sandbox::OutputStream;

namespace {

struct Recorded final : CallEvents {
  std::vector<std::pair<double, std::string>> sent;
  bool wants_progress() const override { return true; }
  void progress(double progress, std::optional<double>, std::string message) override {
    sent.emplace_back(progress, std::move(message));
  }
  void log(std::string_view, nlohmann::json) override {}
  boost::asio::awaitable<nlohmann::json> ask_client(std::string, nlohmann::json) override {
    co_return nullptr;
  }
};

struct Fixture {
  boost::asio::io_context io;
  std::shared_ptr<Recorded> events = std::make_shared<Recorded>();
  std::shared_ptr<LiveOutput> live = std::make_shared<LiveOutput>(events, io.get_executor());
  // Runs the timer until `count` messages are out (or 5 s pass: then the caller's check fails).
  void run_until(std::size_t count) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (events->sent.size() < count && std::chrono::steady_clock::now() < deadline)
      io.run_for(std::chrono::milliseconds(20));
  }
};

}  // namespace

TEST_CASE("live output: stderr lines are marked, streams switch on a new line",
          "[unit][live_output]") {
  Fixture f;
  f.live->observe(OutputStream::out, "x");
  f.live->observe(OutputStream::err, "e1\ne2\n");
  f.live->observe(OutputStream::out, "y\n");
  f.live->observe(OutputStream::err, "half");
  f.live->finish();
  REQUIRE(f.events->sent.size() == 1);
  CHECK(f.events->sent[0].second == "x\n[stderr] e1\n[stderr] e2\ny\n[stderr] half");
  // Finished: later output and ticks are ignored.
  f.live->observe(OutputStream::out, "late\n");
  f.live->tick("running for 1 s");
  f.live->finish();
  f.io.run_for(std::chrono::milliseconds(100));
  CHECK(f.events->sent.size() == 1);
}

TEST_CASE("live output: a character cut between reads is whole, invalid bytes replaced",
          "[unit][live_output]") {
  Fixture f;
  f.live->observe(OutputStream::out, "a\xC3");
  f.live->observe(OutputStream::out,
                  "\xA9"
                  "b\xFF\n\xE2\x82");
  f.live->finish();
  REQUIRE(f.events->sent.size() == 1);
  // The last character never got its end: a replacement character.
  CHECK(f.events->sent[0].second ==
        "a\xC3\xA9"
        "b\xEF\xBF\xBD\n\xEF\xBF\xBD");
}

TEST_CASE("live output: a flood gives bounded messages that say what they left out",
          "[unit][live_output]") {
  Fixture f;
  const std::string chunk(65536, 'x');
  for (int i = 0; i < 20; ++i) f.live->observe(OutputStream::out, chunk);
  // Characters of up to 4 bytes, cut at the bound: still valid UTF-8.
  std::string wide;
  for (int i = 0; i < 5000; ++i) wide += "\xF0\x9F\x98\x80";
  f.live->finish();
  REQUIRE(f.events->sent.size() == 1);
  const std::string& message = f.events->sent[0].second;
  CHECK(message.size() <= LiveOutput::kMessageBytes);
  std::size_t shown = message.find_first_not_of('x');
  REQUIRE(shown != std::string::npos);
  CHECK(message.substr(shown) ==
        "\n[… " + std::to_string(20 * 65536 - shown) + " bytes not shown live]\n");

  Fixture g;
  g.live->observe(OutputStream::err, wide);
  g.live->finish();
  REQUIRE(g.events->sent.size() == 1);
  CHECK(g.events->sent[0].second.size() <= LiveOutput::kMessageBytes);
  CHECK(sandgate::is_valid_utf8(g.events->sent[0].second));
  CHECK(g.events->sent[0].second.rfind("[stderr] \xF0\x9F\x98\x80", 0) == 0);
}

TEST_CASE("live output: the timer sends, ticks and output share one increasing count",
          "[unit][live_output]") {
  Fixture f;
  f.live->tick("running for 1 s");
  f.live->observe(OutputStream::out, "one\n");
  f.run_until(2);
  f.live->tick("running for 2 s");
  f.live->observe(OutputStream::out, "two\n");
  f.run_until(4);
  f.live->finish();
  REQUIRE(f.events->sent.size() == 4);
  CHECK(f.events->sent[1].second == "one\n");
  CHECK(f.events->sent[3].second == "two\n");
  for (std::size_t i = 1; i < f.events->sent.size(); ++i)
    CHECK(f.events->sent[i].first > f.events->sent[i - 1].first);
}
