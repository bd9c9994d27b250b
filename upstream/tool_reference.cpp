#include "upstream/tool_reference.hpp"

#include <set>
#include <vector>

namespace sandgate::upstream {
namespace {

// A schema's type in a word or two: "string", "integer[]", "object", "string | null", "any".
std::string type_of(const nlohmann::json& schema) {
  if (!schema.is_object()) return "any";
  if (schema.contains("enum") && schema["enum"].is_array()) {
    std::string values;
    for (const auto& v : schema["enum"]) values += (values.empty() ? "" : " | ") + v.dump();
    if (values.size() <= 80) return values;
  }
  const auto& type = schema.contains("type") ? schema["type"] : nlohmann::json();
  if (type.is_string()) {
    std::string name = type.get<std::string>();
    if (name == "array" && schema.contains("items")) return type_of(schema["items"]) + "[]";
    return name;
  }
  if (type.is_array()) {
    std::string names;
    for (const auto& t : type)
      if (t.is_string()) names += (names.empty() ? "" : " | ") + t.get<std::string>();
    return names.empty() ? "any" : names;
  }
  return "any";
}

// Description lines indented under the signature; long ones kept whole (the model reads them).
std::string indented(const std::string& text) {
  std::string out = "    ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out + "\n";
}

}  // namespace

std::string signature_of(const nlohmann::json& input_schema) {
  if (!input_schema.is_object() || !input_schema.contains("properties") ||
      !input_schema["properties"].is_object())
    return "";
  std::set<std::string> required;
  if (input_schema.contains("required") && input_schema["required"].is_array())
    for (const auto& r : input_schema["required"])
      if (r.is_string()) required.insert(r.get<std::string>());
  std::vector<std::string> first, then;
  for (const auto& [name, schema] : input_schema["properties"].items()) {
    bool needed = required.contains(name);
    (needed ? first : then).push_back(name + (needed ? "" : "?") + ": " + type_of(schema));
  }
  std::string out;
  for (const auto* group : {&first, &then})
    for (const auto& p : *group) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string tool_reference(const UpstreamDefinition& upstream, const ToolList& tools) {
  std::string out = "## " + upstream.name;
  if (!upstream.description.empty()) out += " — " + upstream.description;
  out += "\n";
  for (const auto& tool : tools.tools) {
    out += upstream.name + "." + tool.name + "(" + signature_of(tool.input_schema) + ")";
    if (tool.output_schema.is_object()) out += " -> " + type_of(tool.output_schema);
    out += "\n";
    if (!tool.description.empty()) out += indented(tool.description);
  }
  if (tools.tools.empty()) out += "(no tools this sandbox may call)\n";
  return out;
}

}  // namespace sandgate::upstream
