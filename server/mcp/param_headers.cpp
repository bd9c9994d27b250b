#include "param_headers.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "header_value.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

struct Mirrored {
  std::string header;             // the Name of Mcp-Param-Name
  std::vector<std::string> path;  // property keys from the arguments' root
};

// Only chains of `properties` are followed: an annotation under items, a combinator or a $ref
// is not one a client honours.
void collect(const json& schema, std::vector<std::string>& path, std::vector<Mirrored>& out,
             int depth) {
  if (depth > 16 || !schema.is_object()) return;
  auto properties = schema.find("properties");
  if (properties == schema.end() || !properties->is_object()) return;
  for (const auto& [key, property] : properties->items()) {
    if (!property.is_object()) continue;
    path.push_back(key);
    if (auto name = property.find("x-mcp-header"); name != property.end() && name->is_string())
      out.push_back({name->get<std::string>(), path});
    collect(property, path, out, depth + 1);
    path.pop_back();
  }
}

const json* at(const json& arguments, const std::vector<std::string>& path) {
  const json* node = &arguments;
  for (const auto& key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

bool matches(const json& body, const std::string& header) {
  if (body.is_string()) return body.get<std::string>() == header;
  if (body.is_boolean()) return header == (body.get<bool>() ? "true" : "false");
  if (body.is_number()) {
    // Integers compare numerically: 42 in the body and "42" in the header agree, as does 42.0.
    // from_chars takes no sign but '-', and no spaces: "+42" and " 42" do not match.
    long long n = 0;
    auto [end, error] = std::from_chars(header.data(), header.data() + header.size(), n);
    if (error != std::errc() || end != header.data() + header.size()) return false;
    double v = body.get<double>();
    return std::floor(v) == v && static_cast<double>(n) == v;
  }
  return false;
}

}  // namespace

bool visible_ascii(std::string_view value) {
  for (char c : value)
    if ((c < 0x20 && c != '\t') || c == 0x7f || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

std::string repeated_mirror_header(const Request& req) {
  std::map<std::string, int> seen;
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool mirrors = name == "mcp-protocol-version" || name == "mcp-method" || name == "mcp-name" ||
                   name.rfind("mcp-param-", 0) == 0;
    if (mirrors && ++seen[name] == 2) return std::string(field.name_string());
  }
  return {};
}

std::string param_header_problem(const Request& req, const json& input_schema,
                                 const json& arguments) {
  std::vector<Mirrored> mirrored;
  std::vector<std::string> path;
  collect(input_schema, path, mirrored, 0);
  for (const auto& m : mirrored) {
    const json* value = at(arguments, m.path);
    if (!value || value->is_null()) continue;  // absent: the client sends no header
    std::string name = "Mcp-Param-" + m.header;
    auto field = req.find(name);
    if (field == req.end()) return "the " + name + " header is missing";
    if (!visible_ascii(field->value())) return "the " + name + " header has invalid characters";
    auto decoded = decode_header_value(field->value());
    if (!decoded) return "the " + name + " header's base64 form is malformed";
    if (!matches(*value, *decoded)) return name + " header differs from the argument's value";
  }
  return {};
}

}  // namespace sandgate::server
