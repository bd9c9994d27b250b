#pragma once
// The text a model reads to learn an upstream's tools (issue #45): each tool's signature, from
// its input schema, and its description — what `sandgate_tools.reference()` and
// `sandgate-tool reference` print, so that no schema has to be pasted into the execute tool's
// description.
#include <string>

#include "upstream/definition.hpp"
#include "upstream/mcp_client.hpp"

namespace sandgate::upstream {

// e.g.
//   ## tickets — the support ticket system
//   tickets.search(query: string, limit?: integer)
//       Search tickets by text.
std::string tool_reference(const UpstreamDefinition& upstream, const ToolList& tools);

// `query: string, limit?: integer`: the properties of an object schema, required ones first.
std::string signature_of(const nlohmann::json& input_schema);

}  // namespace sandgate::upstream
