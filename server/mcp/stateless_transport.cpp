#include "stateless_transport.hpp"

#include <boost/asio/this_coro.hpp>

#include "header_value.hpp"
#include "jsonrpc_replies.hpp"
#include "mcp_methods.hpp"
#include "param_headers.hpp"
#include "progress_token.hpp"
#include "protocol_version.hpp"
#include "session_header.hpp"
#include "streamed_answer.hpp"
#include "tasks_extension.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* kLogLevelKey = "io.modelcontextprotocol/logLevel";
constexpr const char* kServerInfoKey = "io.modelcontextprotocol/serverInfo";
constexpr int kHeaderMismatch = -32020;
constexpr int kUnsupportedVersion = -32022;
// Lists change only with a new gateway version; five minutes bounds how long a client keeps
// an old list across a rolling upgrade.
constexpr int kListTtlMs = 300'000;

using jsonrpc::meta_of;

json server_info() {
  return {{"name", kServerName}, {"title", kServerTitle}, {"version", kServerVersion}};
}

json all_versions() {
  json list = json::array();
  for (auto v : kAllVersions) list.push_back(v);
  return list;
}

// What every 2026-07-28 result carries.
json complete(json result) {
  if (!result.contains("resultType")) result["resultType"] = "complete";
  result["_meta"][kServerInfoKey] = server_info();
  return result;
}

json cacheable(json result) {
  result["ttlMs"] = kListTtlMs;
  // The same for every caller (a tools/list that depends on who asks says "private").
  result["cacheScope"] = "public";
  return result;
}

Reply mismatch(const Request& req, const jsonrpc::Message& message, const std::string& what) {
  return refuse(req, http::status::bad_request, kHeaderMismatch, "Header mismatch: " + what,
                nullptr, message.id);
}

// The name a method's Mcp-Name header mirrors, and the params key it comes from.
const char* named_by(const std::string& method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (is_task_method_2026(method)) return "taskId";
  return nullptr;
}

}  // namespace

bool StatelessTransport::claims(const Request& req, const jsonrpc::Message& message) {
  const json& meta = meta_of(message);
  if (meta.is_object() && meta.contains(kVersionKey)) return true;
  auto header = req["MCP-Protocol-Version"];
  return !session_header(req).present && is_stateless_version(header);
}

std::optional<Reply> StatelessTransport::check(const Request& req,
                                               const jsonrpc::Message& message) const {
  // The envelope first: without it there is no version to compare headers with.
  if (auto refused = check_envelope(req, message)) return refused;
  if (auto refused = check_version_headers(req, message)) return refused;
  if (auto refused = check_method_headers(req, message)) return refused;
  const json& meta = meta_of(message);
  if (meta.contains(kLogLevelKey) && (!meta[kLogLevelKey].is_string() ||
                                      log_level_index(meta[kLogLevelKey].get<std::string>()) < 0))
    return refuse(req, http::status::bad_request, jsonrpc::invalid_params,
                  "Invalid params: _meta." + std::string(kLogLevelKey) +
                      " must be one of debug, info, notice, warning, error, critical, alert, "
                      "emergency",
                  nullptr, message.id);
  if (auto problem = progress_token_problem(meta); !problem.empty())
    return refuse(req, http::status::bad_request, jsonrpc::invalid_params, problem, nullptr,
                  message.id);
  return std::nullopt;
}

// _meta carries the protocol version (a string) and the client's capabilities (an object).
std::optional<Reply> StatelessTransport::check_envelope(const Request& req,
                                                        const jsonrpc::Message& message) const {
  const json& meta = meta_of(message);
  auto envelope = [&](const std::string& key, const std::string& problem) {
    return refuse(req, http::status::bad_request, jsonrpc::invalid_params,
                  "Invalid params: _meta." + key + " is " + problem +
                      " (every 2026-07-28 request carries its protocol version and client "
                      "capabilities)",
                  {{"envelope", {{"key", key}, {"problem", problem}}}}, message.id);
  };
  if (!meta.is_object()) return envelope("_meta", "missing");
  if (!meta.contains(kVersionKey)) return envelope(kVersionKey, "missing");
  if (!meta[kVersionKey].is_string()) return envelope(kVersionKey, "not a string");
  if (!meta.contains(kCapabilitiesKey)) return envelope(kCapabilitiesKey, "missing");
  if (!meta[kCapabilitiesKey].is_object()) return envelope(kCapabilitiesKey, "not an object");
  return std::nullopt;
}

// MCP-Protocol-Version present once and equal to _meta's, and a version this era serves.
std::optional<Reply> StatelessTransport::check_version_headers(
    const Request& req, const jsonrpc::Message& message) const {
  std::string version = meta_of(message)[kVersionKey].get<std::string>();
  if (auto repeated = repeated_mirror_header(req); !repeated.empty())
    return mismatch(req, message, "the " + repeated + " header is sent more than once");
  auto header_version = req["MCP-Protocol-Version"];
  if (header_version.empty())
    return mismatch(req, message, "the MCP-Protocol-Version header is missing");
  if (header_version != version)
    return mismatch(req, message, "MCP-Protocol-Version header differs from _meta's version");
  if (!is_stateless_version(version))
    return refuse(req, http::status::bad_request, kUnsupportedVersion,
                  "Unsupported protocol version: " + version,
                  {{"supported", all_versions()}, {"requested", version}}, message.id);
  return std::nullopt;
}

// Mcp-Method equal to the body's method, a method this era knows, and for a method that names
// something (tools/call, …) Mcp-Name equal to that name, with any Mcp-Param-* headers a tool's
// schema mirrors.
std::optional<Reply> StatelessTransport::check_method_headers(
    const Request& req, const jsonrpc::Message& message) const {
  auto method_header = req["Mcp-Method"];
  if (method_header.empty()) return mismatch(req, message, "the Mcp-Method header is missing");
  if (method_header != message.method)
    return mismatch(req, message, "Mcp-Method header differs from the body's method");
  if (message.kind == jsonrpc::Kind::request && !knows(message.method))
    return refuse(req, http::status::not_found, jsonrpc::method_not_found,
                  "Method not found: " + message.method, nullptr, message.id);
  const char* key = named_by(message.method);
  if (!key) return std::nullopt;
  const json& p = message.params;
  auto header = req.find("Mcp-Name");
  if (header == req.end()) return mismatch(req, message, "the Mcp-Name header is missing");
  if (!visible_ascii(header->value()))
    return mismatch(req, message, "the Mcp-Name header has invalid characters");
  auto decoded = decode_header_value(header->value());
  if (!decoded) return mismatch(req, message, "the Mcp-Name header's base64 form is malformed");
  if (!p.contains(key) || !p[key].is_string() || p[key].get<std::string>() != *decoded)
    return mismatch(req, message, std::string("Mcp-Name header differs from params.") + key);
  // Arguments a tool's schema mirrors in Mcp-Param-* headers must agree with them.
  if (message.method != "tools/call") return std::nullopt;
  const Tool* tool = tools_.find(*decoded);
  if (!tool) return std::nullopt;
  json definition = tool->definition();
  std::string problem =
      param_header_problem(req, definition.value("inputSchema", json::object()),
                           p.contains("arguments") ? p["arguments"] : json::object());
  if (!problem.empty()) return mismatch(req, message, problem);
  return std::nullopt;
}

bool StatelessTransport::knows(const std::string& method) const {
  if (method == "server/discover" || method == "tools/list" || method == "tools/call") return true;
  if (tools_.resources() && (method == "resources/read" || method == "resources/list" ||
                             method == "resources/templates/list"))
    return true;
  if (tasks_ && is_task_method_2026(method)) return true;
  return extension_ && extension_->serves(method, kStatelessVersions[0]);
}

json StatelessTransport::capabilities() const {
  json caps = {{"tools", {{"listChanged", false}}}};
  if (tools_.resources()) caps["resources"] = json::object();
  if (tasks_) caps["extensions"][kTasksExtension] = json::object();
  if (extension_) caps.merge_patch(extension_->capabilities(kStatelessVersions[0]));
  return caps;
}

json StatelessTransport::discover() const {
  return cacheable(complete({{"supportedVersions", all_versions()},
                             {"capabilities", capabilities()},
                             {"instructions", instructions_}}));
}

asio::awaitable<Reply> StatelessTransport::post(const Request& req,
                                                std::shared_ptr<const auth::Tenant> tenant,
                                                jsonrpc::Message message,
                                                std::shared_ptr<CancelSignal> client) {
  if (message.kind == jsonrpc::Kind::response)
    co_return refuse(req, http::status::bad_request, jsonrpc::invalid_request,
                     "Invalid Request: a 2026-07-28 client sends no responses");
  // Notifications: this revision sets no header rules for them and defines none a client
  // sends over HTTP (notifications/cancelled is for stdio; here closing the stream cancels).
  if (message.kind == jsonrpc::Kind::notification) co_return accepted(req);
  if (auto refused = check(req, message)) co_return std::move(*refused);

  const json& meta = meta_of(message);
  json token = progress_token_of(meta);
  std::optional<int> log_level;
  if (meta.contains(kLogLevelKey))
    log_level = log_level_index(meta[kLogLevelKey].get<std::string>());
  auto outbox = std::make_shared<Outbox>(co_await asio::this_coro::executor);
  auto events = std::make_shared<RequestEvents>(outbox, std::move(token), log_level);
  Answer make = [this, tenant, message = std::move(message), client, events] {
    return answer(tenant, message, client, events);
  };
  co_return co_await respond(req, std::move(make), outbox, std::move(client));
}

// A coroutine member taking everything by value: it owns what it uses even when the response
// that started it is gone.
asio::awaitable<json> StatelessTransport::answer(std::shared_ptr<const auth::Tenant> tenant,
                                                 jsonrpc::Message message,
                                                 std::shared_ptr<CancelSignal> client,
                                                 std::shared_ptr<CallEvents> events) {
  const std::string& m = message.method;
  if (m == "server/discover") co_return jsonrpc::result(message.id, discover());
  if (m == "tools/list") co_return list_tools(message, *tenant);
  const json& meta = meta_of(message);
  bool declares_tasks = tasks_ && meta.is_object() && meta.contains(kCapabilitiesKey) &&
                        declares_tasks_extension(meta[kCapabilitiesKey]);
  if (tasks_ && is_task_method_2026(m)) {
    if (!declares_tasks) co_return missing_tasks_extension(message.id);
    json answered = answer_task_method_2026(*tasks_, tenant->name, message);
    if (answered.contains("result")) answered["result"] = complete(std::move(answered["result"]));
    co_return answered;
  }
  if (m == "tools/call")
    co_return co_await call_tool_2026(std::move(tenant), message, declares_tasks, std::move(client),
                                      std::move(events));
  if (tools_.resources() && !(extension_ && extension_->serves(m, kStatelessVersions[0])))
    co_return co_await answer_file_resources(tenant->name, message);
  co_return co_await answer_extension(message, std::move(events));
}

json StatelessTransport::list_tools(const jsonrpc::Message& message,
                                    const auth::Tenant& tenant) const {
  // One page holds every tool: no cursor was ever handed out, so none is valid.
  if (message.params.contains("cursor"))
    return jsonrpc::error(message.id, jsonrpc::invalid_params,
                          "Invalid params: unknown cursor (tools/list has one page)");
  json tools = tools_.definitions(&tenant);
  json result = cacheable(complete({{"tools", tools}}));
  // A tenant's own environments and upstreams are in its execute tool's description: a list
  // that differs from the one everybody gets is this caller's, never a shared cache's.
  if (tools != tools_.definitions(nullptr)) result["cacheScope"] = "private";
  return jsonrpc::result(message.id, std::move(result));
}

// A tools/call, as a task when the client declared the tasks extension and the tool allows
// one (the server decides whether it becomes one), else plainly.
asio::awaitable<json> StatelessTransport::call_tool_2026(std::shared_ptr<const auth::Tenant> tenant,
                                                         const jsonrpc::Message& message,
                                                         bool declares_tasks,
                                                         std::shared_ptr<CancelSignal> client,
                                                         std::shared_ptr<CallEvents> events) {
  const json& p = message.params;
  Tool* tool = p.contains("name") && p["name"].is_string()
                   ? tools_.find(p["name"].get<std::string>())
                   : nullptr;
  if (tool && tool->task_support() == TaskSupport::required && !declares_tasks)
    co_return missing_tasks_extension(message.id);
  // Request ids repeat across stateless requests: a call's key is made here.
  ToolCall call{std::move(tenant), nullptr,
                json::object(),    "stateless-" + std::to_string(next_call_++),
                std::move(client), std::move(events),
                message.params};
  // Not a conditional expression: GCC 12 destroys the result of a co_await in one twice.
  json answered;
  if (tool && declares_tasks && tool->task_support() != TaskSupport::forbidden)
    answered = co_await call_tool_as_task_2026(*tasks_, *tool, std::move(call), message,
                                               tool->task_answer_within());
  else
    answered = co_await call_tool(tools_, std::move(call), message);
  if (answered.contains("result")) answered["result"] = complete(std::move(answered["result"]));
  co_return answered;  // null when cancelled: the stream is closed, nothing is sent
}

// execute's returned files (see McpMethods::answer for why the lists are empty).
asio::awaitable<json> StatelessTransport::answer_file_resources(const std::string& tenant,
                                                                const jsonrpc::Message& message) {
  const std::string& m = message.method;
  if (m == "resources/read") {
    json answered = co_await tools_.resources()->read(tenant, message.params);
    // SEP-2164 (2026-07-28): "not found" is -32602 with the URI in data, not 2025's -32002.
    if (answered.contains("error") && answered["error"]["code"] == kResourceNotFound) {
      answered["error"]["code"] = jsonrpc::invalid_params;
      answered["error"]["data"] = {{"uri", message.params["uri"]}};
    }
    if (answered.contains("error")) co_return extension_error(message.id, answered["error"]);
    // A file's bytes are its tenant's, and the next call may change them: never cached.
    json result = complete(std::move(answered["result"]));
    result["ttlMs"] = 0;
    result["cacheScope"] = "private";
    co_return jsonrpc::result(message.id, std::move(result));
  }
  json empty = m == "resources/list" ? json{{"resources", json::array()}}
                                     : json{{"resourceTemplates", json::array()}};
  co_return jsonrpc::result(message.id, cacheable(complete(std::move(empty))));
}

// A method a MethodExtension serves (the conformance fixtures' resources, prompts …).
asio::awaitable<json> StatelessTransport::answer_extension(const jsonrpc::Message& message,
                                                           std::shared_ptr<CallEvents> events) {
  const std::string& m = message.method;
  json answered = co_await extension_->answer(m, message.params, std::string(kStatelessVersions[0]),
                                              std::move(events));
  if (answered.contains("error")) co_return extension_error(message.id, answered["error"]);
  json result = complete(answered.value("result", json::object()));
  if (extension_->cacheable(m) && result["resultType"] == "complete")
    result = cacheable(std::move(result));
  co_return jsonrpc::result(message.id, std::move(result));
}

}  // namespace sandgate::server
