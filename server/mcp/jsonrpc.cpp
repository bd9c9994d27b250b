#include "jsonrpc.hpp"

#include "common/bounded_json.hpp"

namespace sandgate::server::jsonrpc {

namespace {

using sandgate::JsonFault;
using sandgate::kMaxJsonDepth;
using sandgate::parse_bounded_json;

Message invalid(int code, std::string why, json id = nullptr) {
  Message m;
  m.kind = Kind::invalid;
  m.error_code = code;
  m.error = std::move(why);
  m.id = std::move(id);
  return m;
}
}  // namespace

Message parse(std::string_view body) {
  // Depth is bounded while parsing: a deeper body never becomes a tree (bounded_json.hpp).
  auto parsed = parse_bounded_json(body);
  if (parsed.fault == JsonFault::too_deep)
    return invalid(parse_error, "Parse error: the body nests deeper than " +
                                    std::to_string(kMaxJsonDepth) + " levels");
  if (parsed.fault != JsonFault::none)
    return invalid(parse_error, "Parse error: the body is not valid JSON");
  json doc = std::move(parsed.value);
  if (doc.is_array())
    return invalid(invalid_request,
                   "Invalid Request: batches are not supported; send one message per request");
  if (!doc.is_object())
    return invalid(invalid_request, "Invalid Request: expected a JSON-RPC object");
  json id = nullptr;
  if (auto it = doc.find("id"); it != doc.end()) {
    if (!it->is_string() && !it->is_number_integer())
      return invalid(invalid_request, "Invalid Request: id must be a string or an integer");
    id = *it;
  }
  if (doc.value("jsonrpc", json()) != "2.0")
    return invalid(invalid_request, "Invalid Request: jsonrpc must be \"2.0\"", id);

  Message m;
  m.id = id;
  auto method = doc.find("method");
  if (method == doc.end()) {
    // A response from the client (to a server request): result or error, with an id.
    if (id.is_null() || (!doc.contains("result") && !doc.contains("error")))
      return invalid(invalid_request, "Invalid Request: missing method");
    m.kind = Kind::response;
    if (doc.contains("error"))
      m.params = {{"error", doc["error"]}};
    else
      m.params = {{"result", doc["result"]}};
    return m;
  }
  if (!method->is_string() || method->get_ref<const std::string&>().empty())
    return invalid(invalid_request, "Invalid Request: method must be a non-empty string", id);
  m.method = method->get<std::string>();
  if (auto params = doc.find("params"); params != doc.end()) {
    if (!params->is_object() && !params->is_array())
      return invalid(invalid_request, "Invalid Request: params must be an object", id);
    m.params = *params;
  }
  m.kind = doc.contains("id") ? Kind::request : Kind::notification;
  return m;
}

json result(const json& id, json value) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}};
}

json error(const json& id, int code, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json notification(const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

const json& meta_of(const Message& message) {
  static const json none;
  if (!message.params.is_object()) return none;
  auto it = message.params.find("_meta");
  return it == message.params.end() ? none : *it;
}

}  // namespace sandgate::server::jsonrpc
