#include "definition.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/bounded_json.hpp"
#include "egress/allow_list.hpp"
#include "sandbox/ready_pool.hpp"

namespace sandgate::environment {
namespace {

using nlohmann::json;

// Bumped when what a layer holds, or how it is built, changes: every layer is then built again.
constexpr std::string_view kLayerFormat = "sandgate-environment-layer-1";
constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxEnvironments = 256;
constexpr std::size_t kMaxScriptBytes = 64 << 10;
constexpr std::size_t kMaxDescriptionBytes = 2'000;

[[noreturn]] void refuse(const std::string& name, const std::string& key, const std::string& why) {
  throw DefinitionError("environment '" + name + "'" + (key.empty() ? "" : ", key '" + key + "'") +
                        ": " + why);
}

std::string text_of(const json& value, const std::string& name, const std::string& key,
                    std::size_t max_bytes, bool required) {
  if (!value.is_string()) refuse(name, key, "must be a string");
  auto text = value.get<std::string>();
  if (required && text.find_first_not_of(" \t\r\n") == std::string::npos)
    refuse(name, key, "must not be empty");
  if (text.size() > max_bytes)
    refuse(name, key, "is longer than " + std::to_string(max_bytes) + " bytes");
  if (text.find('\0') != std::string::npos) refuse(name, key, "must not contain a NUL byte");
  return text;
}

std::uint64_t whole_number(const json& value, const std::string& name, const std::string& key,
                           std::uint64_t min, std::uint64_t max) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<long long>() >= 0))
    refuse(name, key, "must be a whole number");
  auto number = value.get<std::uint64_t>();
  if (number < min || number > max)
    refuse(name, key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return number;
}

std::vector<std::string> text_list(const json& value, const std::string& name,
                                   const std::string& key) {
  if (!value.is_array()) refuse(name, key, "must be a list of strings");
  if (value.size() > 64) refuse(name, key, "has more than 64 entries");
  std::vector<std::string> out;
  for (const auto& item : value) out.push_back(text_of(item, name, key, 300, true));
  return out;
}

void read_pool(const json& value, Definition& d) {
  if (!value.is_object()) refuse(d.name, "pool", "must be an object with min and max");
  for (const auto& [key, item] : value.items()) {
    if (key == "min")
      d.pool_min = static_cast<std::uint32_t>(whole_number(item, d.name, "pool.min", 0, 64));
    else if (key == "max")
      d.pool_max = static_cast<std::uint32_t>(whole_number(item, d.name, "pool.max", 0, 64));
    else
      refuse(d.name, "pool." + key, "is not a pool setting (min, max)");
  }
  if (d.pool_min > d.pool_max) refuse(d.name, "pool", "min is larger than max");
}

void check_egress(const Definition& d) {
  if (d.egress.empty()) return;
  std::string joined;
  for (const auto& entry : d.egress) joined += (joined.empty() ? "" : ",") + entry;
  try {
    egress::AllowList::parse(joined);
  } catch (const std::invalid_argument& e) {
    refuse(d.name, "egress", e.what());
  }
}

Definition read_definition(const std::string& name, const json& body) {
  Definition d;
  d.name = name;
  if (auto problem = name_problem(name); !problem.empty()) refuse(name, "", problem);
  if (!body.is_object()) refuse(name, "", "must be an object");
  for (const auto& [key, value] : body.items()) {
    if (key == "setup") {
      d.setup = text_of(value, name, key, kMaxScriptBytes, true);
    } else if (key == "verify") {
      d.verify = text_of(value, name, key, kMaxScriptBytes, true);
    } else if (key == "egress") {
      d.egress = text_list(value, name, key);
    } else if (key == "preload") {
      d.preload = text_list(value, name, key);
      for (const auto& module : d.preload)
        if (auto problem = sandbox::preload_name_problem(module); !problem.empty())
          refuse(name, key, problem);
    } else if (key == "description") {
      d.description = text_of(value, name, key, kMaxDescriptionBytes, false);
    } else if (key == "pool") {
      read_pool(value, d);
    } else if (key == "build_timeout_s") {
      d.build_timeout = std::chrono::seconds(whole_number(value, name, key, 10, 6 * 3600));
    } else if (key == "max_size_mb") {
      d.max_size_bytes = whole_number(value, name, key, 1, 1 << 20) << 20;
    } else {
      refuse(name, key,
             "is not an environment setting (setup, verify, egress, preload, description, pool, "
             "build_timeout_s, max_size_mb)");
    }
  }
  if (d.setup.empty()) refuse(name, "setup", "is required");
  if (d.verify.empty()) refuse(name, "verify", "is required");
  check_egress(d);
  return d;
}

}  // namespace

std::string name_problem(std::string_view name) {
  if (name.empty() || name.size() > 63) return "a name must have 1 to 63 characters";
  if (name == kBase) return "'base' names the system as it is and cannot be defined";
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  };
  if (!std::all_of(name.begin(), name.end(), allowed) || name[0] == '-' || name[0] == '_')
    return "a name is made of a-z, 0-9, '-' and '_', starting with a letter or digit";
  return "";
}

std::map<std::string, Definition> parse_definitions(std::string_view json_text) {
  if (json_text.size() > kMaxFileBytes)
    throw DefinitionError("the environments file is larger than 1 MiB");
  auto parsed = parse_bounded_json(json_text, 16);
  if (parsed.fault != JsonFault::none)
    throw DefinitionError(parsed.fault == JsonFault::too_deep
                              ? "the environments file is nested too deeply"
                              : "the environments file is not valid JSON");
  const json& document = parsed.value;
  if (!document.is_object())
    throw DefinitionError("the environments file must be a JSON object of name -> definition");
  if (document.size() > kMaxEnvironments)
    throw DefinitionError("the environments file defines more than 256 environments");
  std::map<std::string, Definition> out;
  for (const auto& [name, body] : document.items()) out.emplace(name, read_definition(name, body));
  return out;
}

std::map<std::string, Definition> read_definitions_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DefinitionError("cannot read the environments file " + path);
  std::string text;
  text.resize(kMaxFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse_definitions(text);
}

std::string layer_hash(const Definition& definition) {
  auto egress = definition.egress;
  std::sort(egress.begin(), egress.end());
  json identity = {{"format", kLayerFormat},
                   {"setup", definition.setup},
                   {"verify", definition.verify},
                   {"egress", egress}};
  std::string text = identity.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256 failed");
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

}  // namespace sandgate::environment
