// base64url as JWTs use it (common/base64): strict, one encoding per byte string.
#include "common/base64.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

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

TEST_CASE("base64 round-trips and refuses what is not base64", "[unit][files]") {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    CHECK(sandgate::base64_decode(sandgate::base64_encode(s)) == s);
  CHECK(sandgate::base64_encode("hello") == "aGVsbG8=");
  CHECK_FALSE(sandgate::base64_decode("aGVsbG8"));
  CHECK_FALSE(sandgate::base64_decode("aGV=bG8="));
  CHECK_FALSE(sandgate::base64_decode("aGVs bG8="));
  CHECK_FALSE(sandgate::base64_decode("%%%%"));
  // One encoding per byte string: the bits padding leaves unused must be 0.
  CHECK(sandgate::base64_decode("aGVsbA==") == "hell");
  CHECK_FALSE(sandgate::base64_decode("aGVsbB=="));
  CHECK_FALSE(sandgate::base64_decode("aGVsbG9="));
}
