// Where a chunked body ends (egress/chunked_framing), fed whole and byte by byte, and what is
// malformed.
#include "egress/chunked_framing.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using sandgate::egress::ChunkedFraming;

TEST_CASE("chunked framing finds the body's end, and takes nothing after it", "[unit][egress]") {
  const std::string body =
      "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
  const std::string next = "HTTP/1.1 200 OK\r\n";
  ChunkedFraming whole;
  std::string both = body + next;
  CHECK(whole.feed(both.data(), both.size()) == body.size());
  CHECK(whole.done());
  ChunkedFraming drip;
  std::size_t taken = 0;
  for (char c : both) taken += drip.feed(&c, 1);
  CHECK(taken == body.size());
  CHECK(drip.done());
  ChunkedFraming empty;
  std::string none = "0\r\n\r\n";
  CHECK(empty.feed(none.data(), none.size()) == none.size());
  CHECK(empty.done());
}

TEST_CASE("malformed chunked framing is told", "[unit][egress]") {
  for (std::string bad :
       std::vector<std::string>{"x\r\n", "5\r\nhelloX\r\n", "\r\n", "5\n", "FFFFFFFFFFFFFFFFFF\r\n",
                                "0\r\n" + std::string(ChunkedFraming::kMaxLine + 10, 'a')}) {
    ChunkedFraming framing;
    framing.feed(bad.data(), bad.size());
    INFO(bad.substr(0, 30));
    CHECK(framing.malformed());
    CHECK_FALSE(framing.done());
  }
}
