// base64url as JWTs use it (common/base64): strict, one encoding per byte string.
#include "common/base64.hpp"

#include <catch2/catch.hpp>
#include <string>

using sandgate::base64url_decode;
using sandgate::base64url_encode;

TEST_CASE("base64url is strict: its own alphabet, no padding, one encoding per byte string",
          "[unit][auth][jwt]") {
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK(base64url_decode("-_8") == std::string("\xfb\xff"));
  CHECK(base64url_decode("") == std::string());
  CHECK_FALSE(base64url_decode("+/8"));    // the standard alphabet's characters
  CHECK_FALSE(base64url_decode("-_8="));   // padding
  CHECK_FALSE(base64url_decode("-_9"));    // unused bits not 0
  CHECK_FALSE(base64url_decode("abcde"));  // a length no encoding has
  CHECK_FALSE(base64url_decode("ab c"));
}
