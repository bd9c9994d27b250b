#pragma once
// The conformance suite's content tools (test_simple_text … test_elicitation_sep1330_enums) and
// the 2026-07-28 diagnostic tools server-stateless calls (test_missing_capability,
// test_streaming_elicitation, test_logging_tool).
#include "server/tools/tool_registry.hpp"

namespace sandgate::conformance {

void add_fixture_tools(server::ToolRegistry& tools);

}  // namespace sandgate::conformance
