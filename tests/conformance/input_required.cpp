#include "input_required.hpp"

#include "server/tools/tool.hpp"

namespace sandgate::conformance::mrtr {

json elicit(const std::string& message, const std::string& field, const std::string& type) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", {{field, {{"type", type}}}}},
              {"required", json::array({field})}}}}}};
}

json sample(const std::string& prompt, int max_tokens) {
  return {{"method", "sampling/createMessage"},
          {"params",
           {{"messages",
             json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", prompt}}}}})},
            {"maxTokens", max_tokens}}}};
}

json list_roots() {
  return {{"method", "roots/list"}, {"params", json::object()}};
}

json input_required(json requests, std::optional<std::string> request_state) {
  json result = {{"resultType", "input_required"}, {"inputRequests", std::move(requests)}};
  if (request_state) result["requestState"] = std::move(*request_state);
  return result;
}

json declared_capabilities(const json& params) {
  if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object())
    return json::object();
  const json& meta = params["_meta"];
  auto it = meta.find("io.modelcontextprotocol/clientCapabilities");
  return it != meta.end() && it->is_object() ? *it : json::object();
}

void require_capability(const json& params, const std::string& capability) {
  if (declared_capabilities(params).contains(capability)) return;
  throw server::ProtocolError(
      -32021,
      "Missing required client capability: this request asks the client for " + capability +
          ", which its clientCapabilities do not declare",
      {{"requiredCapabilities", {{capability, json::object()}}}});
}

const json* response_for(const json& params, const std::string& key) {
  if (!params.is_object()) return nullptr;
  auto responses = params.find("inputResponses");
  if (responses == params.end()) return nullptr;
  if (!responses->is_object())
    throw server::ProtocolError(-32602,
                                "Invalid params: inputResponses must be an object keyed by the "
                                "inputRequests keys");
  auto it = responses->find(key);
  return it != responses->end() && it->is_object() ? &*it : nullptr;
}

std::optional<std::string> accepted_string(const json* response, const std::string& field) {
  if (!response || response->value("action", std::string()) != "accept") return std::nullopt;
  auto content = response->find("content");
  if (content == response->end() || !content->is_object()) return std::nullopt;
  auto value = content->find(field);
  if (value == content->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::optional<std::string> sampled_text(const json* response) {
  if (!response) return std::nullopt;
  auto content = response->find("content");
  if (content == response->end() || !content->is_object()) return std::nullopt;
  auto text = content->find("text");
  if (text == content->end() || !text->is_string()) return std::nullopt;
  return text->get<std::string>();
}

std::optional<std::size_t> root_count(const json* response) {
  if (!response) return std::nullopt;
  auto roots = response->find("roots");
  if (roots == response->end() || !roots->is_array()) return std::nullopt;
  return roots->size();
}

}  // namespace sandgate::conformance::mrtr
