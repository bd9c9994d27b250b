// Dollar amounts as the model and the logs read them (common/usd_text).
#include "common/usd_text.hpp"

#include <catch2/catch.hpp>

TEST_CASE("amounts below a cent keep their digits", "[unit][spend]") {
  CHECK(sandgate::usd_text(1) == "$1.00");
  CHECK(sandgate::usd_text(0.00001) == "$0.00001");
  CHECK(sandgate::usd_text(0.0000123456) == "$0.000012");
  CHECK(sandgate::usd_text(0) == "$0.00");
}
