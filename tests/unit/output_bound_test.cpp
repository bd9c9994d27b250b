// What a program's output may cost of its response (server/tools/output_bound).
#include "server/tools/output_bound.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

using namespace sandgate::server;

TEST_CASE("a program's output costs a bounded share of its response", "[unit][transport][output]") {
  std::string out(1 << 20, '\x01'), err = "boom\n";
  CHECK(bound_response_output(out, err, response_output_budget(1 << 20)));
  std::uint64_t cost = 0;
  for (unsigned char c : out + err) cost += response_cost(c);
  CHECK(cost <= response_output_budget(1 << 20));
  CHECK(err == "boom\n");  // the small stream is kept whole
  CHECK(out.size() > 100'000);
  // Plain text up to the cap is never cut.
  std::string text(1 << 20, 'x'), none;
  CHECK_FALSE(bound_response_output(text, none, response_output_budget(1 << 20)));
  // A cut never splits a UTF-8 character.
  std::string euros;
  for (int i = 0; i < 100; ++i) euros += "\xe2\x82\xac";
  std::string empty;
  CHECK(bound_response_output(euros, empty, 7));
  CHECK(euros == "\xe2\x82\xac");
}
