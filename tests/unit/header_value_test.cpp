// 2026-07-28 header values (server/mcp/header_value): plain, or =?base64?…?= decoded strictly.
#include "server/mcp/header_value.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::server;

TEST_CASE("2026-07-28 header values: plain, or =?base64?…?= decoded strictly",
          "[unit][stateless]") {
  CHECK(decode_header_value("execute") == "execute");
  CHECK(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界");
  CHECK(decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded ");
  CHECK(decode_header_value("=?base64?"
                            "?=") == "");                              // split: "??=" is a trigraph
  CHECK_FALSE(decode_header_value("=?base64?SGVsbG8?=").has_value());  // unpadded
  CHECK_FALSE(decode_header_value("=?base64?SGVsbG9=?=").has_value());         // bits after the end
  CHECK_FALSE(decode_header_value("=?base64?SG=sbG8=?=").has_value());         // padding inside
  CHECK(decode_header_value("=?BASE64?SGVsbG8=?=") == "=?BASE64?SGVsbG8=?=");  // a literal
}
