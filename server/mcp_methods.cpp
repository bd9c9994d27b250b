#include "mcp_methods.hpp"

#include <chrono>

#include "logging.hpp"
#include "output_bound.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

bool is_supported_protocol_version(const std::string& version) {
  return version == "2025-11-25" || version == "2025-06-18" || version == "2025-03-26";
}

json McpMethods::initialize(const jsonrpc::Message& request) const {
  const json& params = request.params;
  if (!params.is_object() || !params.contains("protocolVersion") ||
      !params["protocolVersion"].is_string())
    return jsonrpc::error(request.id, jsonrpc::invalid_params,
                          "initialize needs params.protocolVersion (a string)");
  std::string asked = params["protocolVersion"].get<std::string>();
  // Version negotiation: echo a version we speak, otherwise offer our latest.
  std::string version = is_supported_protocol_version(asked) ? asked : kLatestProtocolVersion;
  return jsonrpc::result(
      request.id,
      {{"protocolVersion", version},
       {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
       {"serverInfo",
        {{"name", "sandgate"}, {"title", "sandgate code sandbox"}, {"version", "0.1.0"}}},
       {"instructions",
        "Use the execute tool to run Python, JavaScript or bash in this session's sandbox. "
        "There is no network. Files in /work persist across calls of this session."}});
}

void McpMethods::notify(session::Session& session, const jsonrpc::Message& note) {
  if (note.method != "notifications/cancelled") return;
  const json& p = note.params;
  if (!p.is_object() || !p.contains("requestId")) return;
  session.cancel(p["requestId"].dump());
}

boost::asio::awaitable<json> McpMethods::answer(session::Session& session,
                                                const jsonrpc::Message& request) {
  const std::string& m = request.method;
  if (m == "ping") co_return jsonrpc::result(request.id, json::object());
  if (m == "tools/list")
    co_return jsonrpc::result(request.id,
                              {{"tools", json::array({execute_tool_definition(limits_)})}});
  if (m == "logging/setLevel") {
    static const char* levels[] = {"debug", "info",     "notice", "warning",
                                   "error", "critical", "alert",  "emergency"};
    const json& p = request.params;
    bool ok = p.is_object() && p.contains("level") && p["level"].is_string();
    if (ok) {
      ok = false;
      for (const char* l : levels) ok = ok || p["level"] == l;
    }
    if (!ok)
      co_return jsonrpc::error(
          request.id, jsonrpc::invalid_params,
          "level must be one of debug, info, notice, warning, error, critical, alert, emergency");
    co_return jsonrpc::result(request.id, json::object());
  }
  if (m == "tools/call") co_return co_await call_tool(session, request);
  if (m == "initialize")
    co_return jsonrpc::error(request.id, jsonrpc::invalid_request,
                             "this session is already initialized");
  co_return jsonrpc::error(request.id, jsonrpc::method_not_found, "Method not found: " + m);
}

boost::asio::awaitable<json> McpMethods::call_tool(session::Session& session,
                                                   const jsonrpc::Message& request) {
  const json& p = request.params;
  if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
    co_return jsonrpc::error(request.id, jsonrpc::invalid_params, "tools/call needs params.name");
  std::string name = p["name"].get<std::string>();
  if (name != "execute")
    co_return jsonrpc::error(request.id, jsonrpc::invalid_params, "Unknown tool: " + name);
  auto started = std::chrono::steady_clock::now();
  auto args = parse_execute_arguments(p.value("arguments", json::object()), limits_);
  if (!args.request) {
    metrics_.count_execution(ExecOutcome::invalid_arguments, 0);
    co_return jsonrpc::result(request.id, tool_error(args.error));
  }
  sandbox::RunRequest run = *args.request;
  std::size_t code_bytes = run.code.size(), stdin_bytes = run.stdin_data.size();
  session::ExecuteResult executed;
  try {
    executed = co_await session.execute(*args.request, request.id.dump());
  } catch (const std::exception& e) {
    // The host refused a resource (descriptors, memory): a tool error, and the gateway goes on.
    executed.status = session::ExecuteStatus::sandbox_error;
    executed.message = std::string("the host refused a resource: ") + e.what();
  }
  // The response carries the output twice, escaped: its size there is bounded too.
  if (executed.status == session::ExecuteStatus::ran &&
      bound_response_output(executed.run.stdout_text, executed.run.stderr_text,
                            response_output_budget(limits_.output_max_bytes)))
    executed.run.truncated = true;
  const auto& ran = executed.run;
  json log_fields = {{"session", std::string(session::log_prefix(session.id()))},
                     {"tenant", session.tenant()},
                     {"language", sandbox::language_name(run.language)},
                     {"code_bytes", code_bytes},
                     {"stdin_bytes", stdin_bytes},
                     {"exit_code", ran.exit_code},
                     {"stdout_bytes", ran.stdout_text.size()},
                     {"stderr_bytes", ran.stderr_text.size()},
                     {"truncated", ran.truncated},
                     {"oom_killed", ran.oom_killed},
                     {"end_reason", sandbox::end_reason_name(ran.end_reason)},
                     {"spend_usd", ran.spend_usd}};
  // A sandbox that failed or could not be made is the operator's business: logged as a warning
  // with the gateway's own words for why (never program output).
  bool sandbox_failed = executed.status == session::ExecuteStatus::sandbox_error ||
                        (executed.status == session::ExecuteStatus::ran &&
                         ran.outcome == sandbox::RunOutcome::sandbox_ended &&
                         ran.end_reason == sandbox::EndReason::failed);
  if (sandbox_failed)
    log_fields["failure"] =
        executed.status == session::ExecuteStatus::ran ? ran.failure : executed.message;
  auto mapped = map_execute_result(std::move(executed), run);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_.count_execution(mapped.outcome, seconds);
  log_fields["outcome"] = exec_outcome_name(mapped.outcome);
  log_fields["duration_ms"] = static_cast<long>(seconds * 1000);
  log_event(sandbox_failed ? LogLevel::warn : LogLevel::info, "execute", std::move(log_fields));
  // A cancelled request gets no response (the transport drops it).
  if (mapped.outcome == ExecOutcome::cancelled) co_return json();
  co_return jsonrpc::result(request.id, std::move(mapped.result));
}

}  // namespace sandgate::server
