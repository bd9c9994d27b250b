// Which opaque tokens are worth an introspection question at all (auth/opaque_token).
#include "auth/opaque_token.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace sandgate::auth;

TEST_CASE("only a plausible RFC 6750 b64token is worth a question", "[unit][oauth]") {
  for (const char* good : {"a", "opaque-good", "AbC019-._~+/", "abc==", "2YotnFZFEjr1zCsicMWpAA"})
    CHECK(plausible_opaque_token(good));
  for (const char* bad : {"", "=", "==abc", "a=b", "two words", " lead", "quote\"d", "semi;colon",
                          "comma,", "percent%41", "back\\slash", "tab\t", "\xc3\xa9t\xc3\xa9"})
    CHECK_FALSE(plausible_opaque_token(bad));
  CHECK(plausible_opaque_token(std::string(kMaxOpaqueTokenBytes, 'a')));
  CHECK_FALSE(plausible_opaque_token(std::string(kMaxOpaqueTokenBytes + 1, 'a')));
}
