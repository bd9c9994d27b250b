// Live output shows a program's bytes; it never lets them act on a terminal or a UI.
#include "server/tools/terminal_safe.hpp"

#include <catch2/catch.hpp>

using sandgate::server::terminal_safe;

namespace {

std::string safe(std::string_view text) {
  bool after_cr = false;
  return terminal_safe(text, after_cr);
}

}  // namespace

TEST_CASE("escape sequences and other C0 controls become visible pictures", "[unit][live_output]") {
  CHECK(safe("\x1b[31mred\x1b[0m") == "\xE2\x90\x9B[31mred\xE2\x90\x9B[0m");  // ␛
  CHECK(safe(std::string("a\0b\x07\x08\x7f", 6)) ==
        "a\xE2\x90\x80"
        "b\xE2\x90\x87\xE2\x90\x88\xE2\x90\xA1");
  CHECK(safe("tab\tand newline\n") == "tab\tand newline\n");
  CHECK(safe("plain text, ünïcödé ✓") == "plain text, ünïcödé ✓");
}

TEST_CASE("a carriage return becomes a newline, and CR LF stays one", "[unit][live_output]") {
  CHECK(safe("10%\r20%\r30%\n") == "10%\n20%\n30%\n");
  CHECK(safe("a\r\nb\n") == "a\nb\n");
  // Split across two reads: the "\n" after a read that ended in "\r" is its pair.
  bool after_cr = false;
  CHECK(terminal_safe("a\r", after_cr) == "a\n");
  CHECK(after_cr);
  CHECK(terminal_safe("\nb", after_cr) == "b");
  CHECK_FALSE(after_cr);
}

TEST_CASE("C1 controls and bidirectional overrides are replaced", "[unit][live_output]") {
  const std::string replacement = "\xEF\xBF\xBD";
  CHECK(safe("x\xC2\x9B"
             "31m") == "x" + replacement + "31m");                // CSI as a C1 control
  CHECK(safe("\xE2\x80\xAEgnp.exe") == replacement + "gnp.exe");  // RIGHT-TO-LEFT OVERRIDE
  CHECK(safe("a\xE2\x81\xA6"
             "b\xE2\x81\xA9") == "a" + replacement + "b" + replacement);
  CHECK(safe("\xC2\xA0\xE2\x80\x94") == "\xC2\xA0\xE2\x80\x94");  // NBSP and an em dash stay
}
