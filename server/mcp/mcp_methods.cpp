#include "mcp_methods.hpp"

#include "outbox.hpp"
#include "protocol_version.hpp"
#include "task_methods.hpp"

namespace sandgate::server {
using nlohmann::json;

boost::asio::awaitable<json> call_tool(const ToolRegistry& tools, ToolCall call,
                                       const jsonrpc::Message& request) {
  const json& p = request.params;
  if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
    co_return jsonrpc::error(request.id, jsonrpc::invalid_params, "tools/call needs params.name");
  std::string name = p["name"].get<std::string>();
  Tool* tool = tools.find(name);
  if (!tool) co_return jsonrpc::error(request.id, jsonrpc::invalid_params, "Unknown tool: " + name);
  call.arguments = p.contains("arguments") ? p["arguments"] : json::object();
  co_return co_await run_tool_call(*tool, std::move(call), request);
}

boost::asio::awaitable<json> run_tool_call(Tool& tool, ToolCall call,
                                           const jsonrpc::Message& request) {
  json result;
  std::optional<ProtocolError> refused;
  try {
    result = co_await tool.call(std::move(call));
  } catch (const ProtocolError& e) {
    refused = e;
  }
  if (refused) {
    json error = jsonrpc::error(request.id, refused->code, refused->what());
    if (!refused->data.is_null()) error["error"]["data"] = refused->data;
    co_return error;
  }
  if (result.is_null()) co_return json();  // cancelled: no response
  co_return jsonrpc::result(request.id, std::move(result));
}

json extension_error(const json& id, const json& error) {
  json response = jsonrpc::error(id, error.value("code", jsonrpc::internal_error),
                                 error.value("message", std::string("error")));
  if (error.contains("data")) response["error"]["data"] = error["data"];
  return response;
}

json McpMethods::initialize(const jsonrpc::Message& request) const {
  const json& params = request.params;
  if (!params.is_object() || !params.contains("protocolVersion") ||
      !params["protocolVersion"].is_string())
    return jsonrpc::error(request.id, jsonrpc::invalid_params,
                          "initialize needs params.protocolVersion (a string)");
  std::string asked = params["protocolVersion"].get<std::string>();
  // Version negotiation: echo a version we speak, otherwise offer our latest.
  std::string version = is_session_version(asked) ? asked : std::string(kLatestSessionVersion);
  json capabilities = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  // execute's returned files are resources (no subscriptions: a sandbox's files change only
  // when its calls change them, and each call returns what it asked for).
  if (tools_.resources()) capabilities["resources"] = json::object();
  if (tasks_) capabilities.merge_patch(task_capabilities_2025());
  if (extension_) capabilities.merge_patch(extension_->capabilities(kLatestSessionVersion));
  return jsonrpc::result(
      request.id,
      {{"protocolVersion", version},
       {"capabilities", std::move(capabilities)},
       {"serverInfo",
        {{"name", kServerName}, {"title", kServerTitle}, {"version", kServerVersion}}},
       {"instructions",
        "Use the execute tool to run Python, JavaScript or bash in this session's sandbox. "
        "There is no network. Files in /work persist across calls of this session; end_sandbox "
        "ends the sandbox."}});
}

boost::asio::awaitable<json> McpMethods::answer(std::shared_ptr<session::Session> session,
                                                std::shared_ptr<const auth::Tenant> tenant,
                                                const jsonrpc::Message& request,
                                                std::shared_ptr<CallEvents> events,
                                                std::shared_ptr<CancelSignal> cancel) {
  const std::string& m = request.method;
  if (m == "ping") co_return jsonrpc::result(request.id, json::object());
  if (m == "tools/list") co_return jsonrpc::result(request.id, {{"tools", tools_.definitions(tenant.get())}});
  if (m == "logging/setLevel") {
    const json& p = request.params;
    bool ok = p.is_object() && p.contains("level") && p["level"].is_string() &&
              log_level_index(p["level"].get<std::string>()) >= 0;
    if (!ok)
      co_return jsonrpc::error(
          request.id, jsonrpc::invalid_params,
          "level must be one of debug, info, notice, warning, error, critical, alert, emergency");
    co_return jsonrpc::result(request.id, json::object());
  }
  if (m == "tools/call") {
    // Keyed by session and request id: a call may run in a sandbox handle other sessions
    // use too, where request ids alone would collide.
    ToolCall call{std::move(tenant), session,
                  json::object(),    session->id() + "/" + request.id.dump(),
                  std::move(cancel), std::move(events),
                  request.params};
    // params.task asks for a task: the answer is the task, and the call runs on.
    if (tasks_ && request.params.is_object() && request.params.contains("task"))
      co_return co_await start_task_2025(*tasks_, tools_, std::move(call), request);
    co_return co_await call_tool(tools_, std::move(call), request);
  }
  if (tasks_ && is_task_method_2025(m))
    co_return co_await answer_task_method_2025(*tasks_, tenant->name, request, std::move(events),
                                               std::move(cancel));
  if (m == "initialize")
    co_return jsonrpc::error(request.id, jsonrpc::invalid_request,
                             "this session is already initialized");
  bool extended = extension_ && extension_->serves(m, kLatestSessionVersion);
  if (!extended && tools_.resources()) {
    if (m == "resources/read") {
      json answered = co_await tools_.resources()->read(tenant->name, request.params);
      if (answered.contains("error")) co_return extension_error(request.id, answered["error"]);
      co_return jsonrpc::result(request.id, std::move(answered["result"]));
    }
    // Returned files are reached through the URIs in results only: a listing of every file
    // a sandbox holds would show what no call asked to return.
    if (m == "resources/list")
      co_return jsonrpc::result(request.id, {{"resources", json::array()}});
    if (m == "resources/templates/list")
      co_return jsonrpc::result(request.id, {{"resourceTemplates", json::array()}});
  }
  if (extended) {
    json answered = co_await extension_->answer(
        m, request.params, std::string(kLatestSessionVersion), std::move(events));
    if (answered.contains("error")) co_return extension_error(request.id, answered["error"]);
    co_return jsonrpc::result(request.id, answered.value("result", json::object()));
  }
  co_return jsonrpc::error(request.id, jsonrpc::method_not_found, "Method not found: " + m);
}

}  // namespace sandgate::server
