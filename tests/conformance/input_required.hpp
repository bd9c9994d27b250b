#pragma once
// Building and reading input_required rounds (SEP-2322), for tools and prompts alike.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace sandgate::conformance::mrtr {

using nlohmann::json;

// Input requests, one per key of inputRequests.
json elicit(const std::string& message, const std::string& field, const std::string& type);
json sample(const std::string& prompt, int max_tokens);
json list_roots();

// {"resultType": "input_required", "inputRequests": …, "requestState"?: …}.
json input_required(json requests, std::optional<std::string> request_state = std::nullopt);

// The request's client capabilities (params._meta), {} when there are none.
json declared_capabilities(const json& params);
// Throws ProtocolError -32021 naming `capability` unless the request declared it.
void require_capability(const json& params, const std::string& capability);

// params.inputResponses[key] when it is an object; null otherwise. Throws ProtocolError -32602
// when inputResponses is present but not an object.
const json* response_for(const json& params, const std::string& key);
// The accepted elicitation's content[field] when it is a string.
std::optional<std::string> accepted_string(const json* response, const std::string& field);
// The sampling result's text content.
std::optional<std::string> sampled_text(const json* response);
// The number of roots in a roots/list result, or nullopt when it is not one.
std::optional<std::size_t> root_count(const json* response);

}  // namespace sandgate::conformance::mrtr
