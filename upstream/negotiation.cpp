#include "upstream/negotiation.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/base64.hpp"

namespace sandgate::upstream {

using nlohmann::json;

namespace {

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

int error_code_of(const json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return 0;
  const auto& code = body["error"]["code"];
  return code.is_number_integer() ? code.get<int>() : 0;
}

std::size_t count_annotations(const json& value) {
  std::size_t n = 0;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      n += (it.key() == "x-mcp-header") + count_annotations(it.value());
  } else if (value.is_array()) {
    for (const auto& item : value) n += count_annotations(item);
  }
  return n;
}

// The annotated properties reachable through "properties" chains only: (path, header name).
void reachable_annotations(const json& schema, std::vector<std::string>& path,
                           std::vector<std::pair<std::vector<std::string>, const json*>>& out,
                           int depth) {
  if (depth > 32 || !schema.is_object() || !schema.contains("properties") ||
      !schema["properties"].is_object())
    return;
  for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
    path.push_back(it.key());
    if (it.value().is_object() && it.value().contains("x-mcp-header"))
      out.emplace_back(path, &it.value());
    reachable_annotations(it.value(), path, out, depth + 1);
    path.pop_back();
  }
}

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

json modern_meta() {
  return {{"io.modelcontextprotocol/protocolVersion", kModernVersion},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", client_info()}};
}

json client_info() {
  return {{"name", "sandgate"}, {"version", SANDGATE_VERSION}};
}

bool falls_back_to_initialize(int status, const json& body) {
  const int code = error_code_of(body);
  if (status == 400) return code == -32000 || code == 0;
  if (status == 404) return code == -32601 || code == 0;
  if (status == 200) return code == -32601;
  return false;
}

bool accepted_legacy_version(const std::string& version) {
  return version == "2025-11-25" || version == "2025-06-18" || version == "2025-03-26";
}

std::string mirrored_header_value(std::string_view value) {
  bool plain = !value.empty() && value.front() != ' ' && value.front() != '\t' &&
               value.back() != ' ' && value.back() != '\t';
  for (unsigned char c : value)
    if (c < 0x20 || c > 0x7e) plain = false;
  if (value.size() >= 11 && value.rfind("=?base64?", 0) == 0 &&
      value.substr(value.size() - 2) == "?=")
    plain = false;
  if (value.empty()) plain = true;
  return plain ? std::string(value) : "=?base64?" + base64_encode(value) + "?=";
}

bool valid_header_annotations(const json& input_schema) {
  const std::size_t total = count_annotations(input_schema);
  if (total == 0) return true;
  std::vector<std::string> path;
  std::vector<std::pair<std::vector<std::string>, const json*>> found;
  reachable_annotations(input_schema, path, found, 0);
  if (found.size() != total) return false;  // one sits under items, anyOf, $ref, …
  std::set<std::string> names;
  for (const auto& [where, property] : found) {
    const json& name = (*property)["x-mcp-header"];
    if (!name.is_string() || !is_token(name.get<std::string>())) return false;
    if (!names.insert(lower(name.get<std::string>())).second) return false;
    const json& type = property->contains("type") ? (*property)["type"] : json();
    if (type != "string" && type != "integer" && type != "boolean") return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> param_headers(const json& input_schema,
                                                               const json& arguments) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!input_schema.is_object() || !arguments.is_object()) return out;
  std::vector<std::string> path;
  std::vector<std::pair<std::vector<std::string>, const json*>> found;
  reachable_annotations(input_schema, path, found, 0);
  for (const auto& [where, property] : found) {
    const json& name = (*property)["x-mcp-header"];
    if (!name.is_string()) continue;
    const json* value = &arguments;
    for (const auto& key : where) {
      if (!value->is_object() || !value->contains(key)) {
        value = nullptr;
        break;
      }
      value = &(*value)[key];
    }
    if (value == nullptr || value->is_null()) continue;
    std::string text;
    if (value->is_string())
      text = value->get<std::string>();
    else if (value->is_boolean())
      text = value->get<bool>() ? "true" : "false";
    else if (value->is_number_integer())
      text = value->dump();
    else
      continue;  // not a primitive the spec mirrors: the upstream will say so
    out.emplace_back("Mcp-Param-" + name.get<std::string>(), mirrored_header_value(text));
  }
  return out;
}

}  // namespace sandgate::upstream
