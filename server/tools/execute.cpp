#include "execute.hpp"

#include <chrono>

#include "output_bound.hpp"
#include "server/logging.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

ExecuteTool::ExecuteTool(ToolLimits limits, Metrics& metrics) : limits_(limits), metrics_(metrics) {}

boost::asio::awaitable<json> ExecuteTool::call(ToolCall call) {
  auto started = std::chrono::steady_clock::now();
  auto args = parse_execute_arguments(call.arguments, limits_);
  if (!args.request) {
    metrics_.count_execution(ExecOutcome::invalid_arguments, 0);
    co_return tool_error(args.error);
  }
  session::Session& session = *call.session;
  sandbox::RunRequest run = *args.request;
  std::size_t code_bytes = run.code.size(), stdin_bytes = run.stdin_data.size();
  session::ExecuteResult executed;
  try {
    executed = co_await session.execute(*args.request, call.call_key);
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
  if (mapped.outcome == ExecOutcome::cancelled) co_return json();
  co_return std::move(mapped.result);
}

}  // namespace sandgate::server
