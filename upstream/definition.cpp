#include "upstream/definition.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string_view>
#include <variant>

#include "common/bounded_json.hpp"
#include "common/host_port.hpp"
#include "common/loopback.hpp"

namespace sandgate::upstream {

namespace {

using nlohmann::json;

constexpr std::uintmax_t kMaxFileBytes = 1u << 20;
constexpr std::size_t kMaxUpstreams = 64;
constexpr std::uintmax_t kMaxHeaderFileBytes = 8 * 1024;
constexpr std::size_t kMaxDescriptionBytes = 1024;
constexpr std::size_t kMaxToolNameBytes = 128;

[[noreturn]] void refuse(const std::string& name, const std::string& key,
                         const std::string& reason) {
  throw std::invalid_argument("upstream '" + name + "': " + key + ": " + reason);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  if (name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// RFC 9110 token: 1*tchar.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return std::all_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || kSpecials.find(c) != std::string_view::npos;
  });
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Headers the gateway sets itself (framing, routing, the MCP protocol's own): an operator's
// header must not change what the request means.
bool reserved_header(std::string_view name) {
  std::string l = lower(name);
  return l == "host" || l == "content-length" || l == "transfer-encoding" || l == "connection" ||
         l == "mcp-protocol-version" || l.rfind("mcp-", 0) == 0;
}

void check_keys(const std::string& name, const std::string& where, const json& object,
                std::initializer_list<std::string_view> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      refuse(name, where.empty() ? it.key() : where + "." + it.key(), "unknown key");
  }
}

void parse_url(UpstreamDefinition& d, const json& value) {
  if (!value.is_string()) refuse(d.name, "url", "must be a string");
  const std::string url = value.get<std::string>();
  if (url.size() > 2048) refuse(d.name, "url", "longer than 2048 bytes");
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7f) refuse(d.name, "url", "holds a space, control or non-ASCII byte");
  std::string_view rest(url);
  if (rest.rfind("https://", 0) == 0) {
    d.tls = true;
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    d.tls = false;
    rest.remove_prefix(7);
  } else {
    refuse(d.name, "url", "must start with https:// (or http:// to a loopback host)");
  }
  if (url.find('#') != std::string::npos) refuse(d.name, "url", "must not hold a fragment");
  auto end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  if (authority.find('@') != std::string_view::npos)
    refuse(d.name, "url", "must not hold user information (put credentials in headers)");
  auto split = split_host_port(authority);
  if (std::holds_alternative<HostPortError>(split))
    refuse(d.name, "url", "the host[:port] is not valid");
  const auto& hp = std::get<HostPort>(split);
  d.host = std::string(hp.host);
  d.port = std::to_string(hp.port.value_or(d.tls ? 443 : 80));
  if (!d.tls && !is_loopback_host(d.host))
    refuse(d.name, "url", "plain http:// is allowed only to a loopback host; use https://");
  if (target.empty())
    d.target = "/";
  else if (target.front() == '?')
    d.target = "/" + std::string(target);
  else
    d.target = std::string(target);
  d.url = url;
}

std::string read_header_file(const std::string& name, const std::string& key,
                             const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) refuse(name, key, path + " cannot be read");
  if (!S_ISREG(st.st_mode)) refuse(name, key, path + " is not a regular file");
  if (st.st_mode & 044) refuse(name, key, path + " is readable by its group or others");
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxHeaderFileBytes)
    refuse(name, key, path + " is larger than 8 KiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) refuse(name, key, path + " cannot be read");
  std::string value((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (value.size() > kMaxHeaderFileBytes) refuse(name, key, path + " is larger than 8 KiB");
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  // The value itself is never named: it is a credential.
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
    refuse(name, key, path + " holds a line break or NUL inside its value");
  return value;
}

void parse_headers(UpstreamDefinition& d, const json& value) {
  if (!value.is_object()) refuse(d.name, "headers", "must be an object");
  std::set<std::string> seen;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string key = "headers." + it.key();
    if (!is_token(it.key())) refuse(d.name, key, "not a valid HTTP header name");
    if (reserved_header(it.key())) refuse(d.name, key, "the gateway sets this header itself");
    if (!seen.insert(lower(it.key())).second) refuse(d.name, key, "named twice");
    const json& spec = it.value();
    if (!spec.is_object()) refuse(d.name, key, "must be an object {\"file\": PATH}");
    check_keys(d.name, key, spec, {"file", "prefix"});
    if (!spec.contains("file") || !spec["file"].is_string() ||
        spec["file"].get<std::string>().empty())
      refuse(d.name, key + ".file", "required: the path of the file holding the value");
    std::string prefix;
    if (spec.contains("prefix")) {
      if (!spec["prefix"].is_string()) refuse(d.name, key + ".prefix", "must be a string");
      prefix = spec["prefix"].get<std::string>();
      for (unsigned char c : prefix)
        if (c < 0x20 || c == 0x7f) refuse(d.name, key + ".prefix", "holds a control character");
      if (prefix.size() > 256) refuse(d.name, key + ".prefix", "longer than 256 bytes");
    }
    std::string file_value = read_header_file(d.name, key, spec["file"].get<std::string>());
    d.headers.emplace_back(it.key(), prefix + file_value);
  }
}

void parse_tools(UpstreamDefinition& d, const json& value) {
  if (!value.is_array()) refuse(d.name, "tools", "must be an array of tool names");
  std::vector<std::string> tools;
  std::set<std::string> seen;
  for (const auto& t : value) {
    if (!t.is_string() || t.get<std::string>().empty())
      refuse(d.name, "tools", "every entry must be a non-empty string");
    const auto& name = t.get_ref<const std::string&>();
    if (name.size() > kMaxToolNameBytes) refuse(d.name, "tools", "a name is longer than 128 bytes");
    if (!seen.insert(name).second) refuse(d.name, "tools", "'" + name + "' is listed twice");
    tools.push_back(name);
  }
  d.tools = std::move(tools);
}

double number_in(const std::string& name, const std::string& key, const json& value, double low,
                 double high, bool integer) {
  if (!value.is_number() || (integer && !value.is_number_integer()))
    refuse(name, key, integer ? "must be an integer" : "must be a number");
  double v = value.get<double>();
  if (!(v >= low && v <= high))
    refuse(name, key, "must be between " + json(low).dump() + " and " + json(high).dump());
  return v;
}

void parse_limits(UpstreamDefinition& d, const json& value) {
  if (!value.is_object()) refuse(d.name, "limits", "must be an object");
  check_keys(d.name, "limits", value,
             {"timeout_s", "max_concurrency", "max_answer_bytes", "tools_ttl_s", "usd_per_call"});
  auto& l = d.limits;
  if (value.contains("timeout_s"))
    l.call_timeout = std::chrono::seconds(static_cast<std::int64_t>(
        number_in(d.name, "limits.timeout_s", value["timeout_s"], 1, 3600, true)));
  if (value.contains("max_concurrency"))
    l.max_concurrency = static_cast<std::uint32_t>(
        number_in(d.name, "limits.max_concurrency", value["max_concurrency"], 1, 1024, true));
  if (value.contains("max_answer_bytes"))
    l.max_answer_bytes = static_cast<std::uint64_t>(number_in(
        d.name, "limits.max_answer_bytes", value["max_answer_bytes"], 1024, 64 << 20, true));
  if (value.contains("tools_ttl_s"))
    l.tools_ttl = std::chrono::seconds(static_cast<std::int64_t>(
        number_in(d.name, "limits.tools_ttl_s", value["tools_ttl_s"], 1, 86400, true)));
  if (value.contains("usd_per_call"))
    l.usd_per_call = number_in(d.name, "limits.usd_per_call", value["usd_per_call"], 0, 100, false);
}

std::shared_ptr<const UpstreamDefinition> parse_one(const std::string& name, const json& spec) {
  auto d = std::make_shared<UpstreamDefinition>();
  d->name = name;
  if (!spec.is_object()) refuse(name, "definition", "must be an object");
  check_keys(name, "", spec, {"url", "headers", "tools", "description", "ca_file", "limits"});
  if (!spec.contains("url")) refuse(name, "url", "required");
  parse_url(*d, spec["url"]);
  if (spec.contains("headers")) parse_headers(*d, spec["headers"]);
  if (spec.contains("tools")) parse_tools(*d, spec["tools"]);
  if (spec.contains("description")) {
    if (!spec["description"].is_string()) refuse(name, "description", "must be a string");
    d->description = spec["description"].get<std::string>();
    if (d->description.size() > kMaxDescriptionBytes)
      refuse(name, "description", "longer than 1024 bytes");
  }
  if (spec.contains("ca_file")) {
    if (!spec["ca_file"].is_string() || spec["ca_file"].get<std::string>().empty())
      refuse(name, "ca_file", "must be the path of a PEM file");
    d->ca_file = spec["ca_file"].get<std::string>();
    struct stat st {};
    if (::stat(d->ca_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(d->ca_file.c_str(), R_OK) != 0)
      refuse(name, "ca_file", d->ca_file + " is not a readable file");
  }
  if (spec.contains("limits")) parse_limits(*d, spec["limits"]);
  return d;
}

}  // namespace

bool UpstreamDefinition::allows(const std::string& tool) const {
  if (!tools) return true;
  return std::find(tools->begin(), tools->end(), tool) != tools->end();
}

UpstreamSet parse_upstreams(const std::string& text) {
  if (text.size() > kMaxFileBytes)
    throw std::invalid_argument("upstreams: the file is larger than 1 MiB");
  auto parsed = parse_bounded_json(text, 16);
  if (parsed.fault != JsonFault::none)
    throw std::invalid_argument(parsed.fault == JsonFault::too_deep
                                    ? "upstreams: the file nests too deeply"
                                    : "upstreams: the file is not valid JSON");
  if (!parsed.value.is_object())
    throw std::invalid_argument("upstreams: the file must be a JSON object of name → definition");
  if (parsed.value.size() > kMaxUpstreams)
    throw std::invalid_argument("upstreams: more than 64 upstreams");
  UpstreamSet out;
  for (auto it = parsed.value.begin(); it != parsed.value.end(); ++it) {
    if (!valid_name(it.key()))
      throw std::invalid_argument("upstream '" + it.key().substr(0, 64) +
                                  "': name: must match [a-z][a-z0-9_]{0,31}");
    out.emplace(it.key(), parse_one(it.key(), it.value()));
  }
  return out;
}

UpstreamSet read_upstreams_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw std::invalid_argument("upstreams: cannot read " + path.string());
  if (size > kMaxFileBytes)
    throw std::invalid_argument("upstreams: " + path.string() + " is larger than 1 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("upstreams: cannot read " + path.string());
  std::string text;
  text.resize(static_cast<std::size_t>(size));
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse_upstreams(text);
}

}  // namespace sandgate::upstream
