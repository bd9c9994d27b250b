#include "common/utf8.hpp"

#include <catch2/catch.hpp>

using sandgate::sanitize_utf8;

TEST_CASE("output bytes become valid UTF-8", "[unit][utf8]") {
  bool replaced = true;
  CHECK(sanitize_utf8("plain ascii", &replaced) == "plain ascii");
  CHECK_FALSE(replaced);
  CHECK(sanitize_utf8("\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80", &replaced) ==
        "\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK_FALSE(replaced);
  CHECK(sanitize_utf8("a\xFF"
                      "b",
                      &replaced) ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(replaced);
  CHECK(sanitize_utf8("\xC0\xAF") == "\xEF\xBF\xBD");          // overlong
  CHECK(sanitize_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD");      // surrogate
  CHECK(sanitize_utf8("\xF4\x90\x80\x80") == "\xEF\xBF\xBD");  // above U+10FFFF
  CHECK(sanitize_utf8("x\xE2\x82") == "x\xEF\xBF\xBD");        // cut short at the end
  CHECK(sanitize_utf8(std::string("\0z", 2)) == std::string("\0z", 2));
}
