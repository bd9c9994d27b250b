// The upstream's response stream (upstream/event_stream): events split at any byte, every line
// ending, comments and other fields dropped, and a line or event past the bound refused.
#include "upstream/event_stream.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using sandgate::upstream::EventStream;

TEST_CASE("events are read whatever the chunks and line endings", "[unit][upstream]") {
  const std::string stream =
      ": keep-alive\r\nevent: message\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\n"
      "data:{\"b\"\ndata: :2}\n\nretry: 10\rdata: x\r\r";
  std::vector<std::string> events;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, stream.size()}) {
    EventStream reader(1024);
    events.clear();
    for (std::size_t i = 0; i < stream.size(); i += chunk)
      for (auto& e : reader.feed(std::string_view(stream).substr(i, chunk))) events.push_back(e);
    REQUIRE(events.size() == 3);
    CHECK(events[0] == "{\"a\":1}");
    CHECK(events[1] == "{\"b\"\n:2}");
    CHECK(events[2] == "x");
  }
  EventStream reader(1024);
  CHECK(reader.feed("event: ping\n\n: only a comment\n\n").empty());  // no data, no event
  CHECK(reader.feed("data: unfinished\n").empty());
  CHECK(reader.feed("\n") == std::vector<std::string>{"unfinished"});
}

TEST_CASE("a line or an event past the bound is refused", "[unit][upstream]") {
  EventStream line(16);
  CHECK_THROWS_AS(line.feed("data: " + std::string(20, 'x')), std::length_error);
  EventStream event(16);
  CHECK_NOTHROW(event.feed("data: 12345678\n"));
  CHECK_THROWS_AS(event.feed("data: 123456789\n"), std::length_error);  // 8 + 1 + 9 > 16
}
