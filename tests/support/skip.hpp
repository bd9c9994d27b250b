#pragma once
// A test that cannot run on this machine is reported as skipped, never as passed: it prints
// the marker ctest's SKIP_REGULAR_EXPRESSION looks for (tests/CMakeLists.txt) and returns.
// Where a machine is known to have a capability, SANDGATE_TESTS_REQUIRE names it
// (comma-separated, e.g. "root,sandboxes,landlock"; "all" for every one) and its absence fails
// the test instead: CI sets it, so a regression that makes a capability look missing (the
// cgroup probe, the Landlock check, a sandbox that breaks matplotlib) turns CI red, not green.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace sandgate::test {

// The marker ctest matches; keep in sync with SANDGATE_SKIP_MARKER in tests/CMakeLists.txt.
inline constexpr std::string_view skip_marker = "SANDGATE-TEST-SKIPPED";

inline bool capability_required(std::string_view capability) {
  const char* listed = std::getenv("SANDGATE_TESTS_REQUIRE");
  if (listed == nullptr) return false;
  std::string_view rest(listed);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name == capability || name == "all") return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// Fails the test (throws) if `capability` is required here; otherwise reports the skip. The
// caller returns from the test right after.
inline void skip_test(std::string_view capability, const std::string& reason) {
  if (capability_required(capability))
    FAIL("SANDGATE_TESTS_REQUIRE names '" << capability << "', which is missing: " << reason);
  std::cout << skip_marker << " (" << capability << "): " << reason << std::endl;
  WARN("skipped (" << capability << "): " << reason);
}

}  // namespace sandgate::test
