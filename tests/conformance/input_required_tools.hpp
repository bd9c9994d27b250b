#pragma once
// The 2026-07-28 multi-round tool calls (SEP-2322, input_required results): each tool asks the
// client for input (elicitation/create, sampling/createMessage, roots/list) in an
// input_required result, and completes when the client calls again with inputResponses and
// the requestState it was given. Every requestState is HMAC-protected (request_state.hpp) and
// bound to its tool; a state that fails the check is a -32602 error.
#include <memory>

#include "request_state.hpp"
#include "server/tools/tool_registry.hpp"

namespace sandgate::conformance {

void add_input_required_tools(server::ToolRegistry& tools,
                              std::shared_ptr<const RequestStateSigner> signer);

}  // namespace sandgate::conformance
