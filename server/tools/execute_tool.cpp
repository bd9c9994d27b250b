#include "execute_tool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <chrono>

#include "common/logging.hpp"
#include "file_results.hpp"
#include "live_output.hpp"
#include "network_report.hpp"
#include "output_bound.hpp"
#include "session/session_id.hpp"
#include "upstream/code_mode_text.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

// "running for N s" every interval while the call runs, for a request that asked for progress.
asio::awaitable<void> tick_progress(std::shared_ptr<LiveOutput> live,
                                    std::shared_ptr<asio::steady_timer> timer,
                                    std::chrono::seconds interval) {
  auto started = std::chrono::steady_clock::now();
  for (;;) {
    timer->expires_after(interval);
    auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;  // the call ended
    auto elapsed =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
            .count();
    live->tick("running for " + std::to_string(elapsed) + " s");
  }
}

}  // namespace

std::string handle_unusable_reason(const session::Registry& registry, const std::string& id,
                                   const std::string& tenant) {
  if (auto why = registry.why_ended(id, tenant)) return "has ended (" + *why + ")";
  auto owner = session::owner_replica(id);
  if (!owner.empty() && owner != registry.replica_name())
    return "lives on replica " + std::string(owner) +
           ", which does not know it or cannot be "
           "reached from here";
  return "is unknown or has ended";
}

void ExecuteTool::forget_unseen_handle(const Target& target, const ToolCall& call,
                                       const std::string& why) {
  if (target.created)
    registry_.remove(target.handle, call.tenant->name, session::SessionKind::handle, why);
}

ExecuteTool::ExecuteTool(ToolLimits limits, session::Registry& registry, Metrics& metrics,
                         FileResources* resources,
                         std::shared_ptr<const environment::Environments> environments,
                         std::shared_ptr<const upstream::Upstreams> upstreams)
    : limits_(limits),
      registry_(registry),
      metrics_(metrics),
      resources_(resources),
      environments_(std::move(environments)),
      upstreams_(std::move(upstreams)) {}

json ExecuteTool::definition_for(const auth::Tenant& tenant) const {
  json definition = execute_tool_definition(limits_);
  if (upstreams_ && !tenant.upstreams.empty())
    definition["description"] = definition["description"].get<std::string>() +
                                upstream::code_mode_text(*upstreams_, tenant.upstreams);
  if (!environments_ || tenant.environments.empty()) return definition;
  std::string text =
      "\n\nEnvironments you may run in (pass `environment`; the first is the default, "
      "and a session keeps the one its first call used):";
  json names = json::array();
  for (const auto& [name, description] : environments_->described(tenant.environments)) {
    text += "\n- " + name + (description.empty() ? "" : ": " + description);
    names.push_back(name);
  }
  definition["description"] = definition["description"].get<std::string>() + text;
  definition["inputSchema"]["properties"]["environment"]["enum"] = names;
  return definition;
}

std::string ExecuteTool::settle_environment(session::Session& session, const auth::Tenant& tenant,
                                            const std::string& asked) const {
  const std::string current = session.environment();
  if (!environments_) {
    // No environments file: every sandbox runs the system as it is.
    if (!asked.empty() && asked != environment::kBase)
      return "This gateway has no environments: leave out `environment` to run in the system as "
             "it is.";
    return session.use_environment(std::string(environment::kBase), "")
               ? ""
               : "This session runs the environment '" + current +
                     "', which this gateway no longer offers: start a new session.";
  }
  auto chosen = environments_->choose(tenant.environments, asked, current);
  if (auto* problem = std::get_if<std::string>(&chosen)) {
    std::string text = *problem;
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    return text + ".";
  }
  auto& choice = std::get<environment::Choice>(chosen);
  // Settled under the session's lock: two first calls asking for different environments
  // cannot both win.
  if (!session.use_environment(choice.name, choice.layer_dir))
    return "This session's sandbox runs the environment '" + session.environment() +
           "'; a session keeps one environment for its whole life.";
  return "";
}

ExecuteTool::Target ExecuteTool::target_for(const ToolCall& call, const std::string& sandbox_id) {
  const auth::Tenant& tenant = *call.tenant;
  if (!sandbox_id.empty()) {
    auto found = registry_.find(sandbox_id, tenant.name, session::SessionKind::handle);
    if (!found)
      return {nullptr, "", false,
              tool_error(unusable_handle_text(
                  sandbox_id, handle_unusable_reason(registry_, sandbox_id, tenant.name)))};
    return {found, sandbox_id, false, nullptr};
  }
  if (call.session) return {call.session, "", false, nullptr};
  auto created = registry_.create(call.tenant, session::SessionKind::handle);
  if (auto* refusal = std::get_if<session::CreateRefusal>(&created)) {
    metrics_.count_session_refused();
    bool per_tenant = *refusal == session::CreateRefusal::too_many_for_tenant;
    const bool all_busy = registry_.at_session_cap() == session::AtSessionCap::evict;
    return {nullptr, "", false,
            tool_error(!per_tenant ? "The gateway has its maximum number of sandboxes open; try "
                                     "again later."
                       : all_busy  ? "Too many sandboxes: this tenant has its maximum open and "
                                     "every one has a call running. Try again when one finishes, "
                                     "or reuse one by passing its sandbox_id."
                                   : "Too many sandboxes: this tenant has its maximum open. End "
                                     "one with end_sandbox, or reuse one by passing its "
                                     "sandbox_id.")};
  }
  auto handle = std::get<std::shared_ptr<session::Session>>(created);
  metrics_.count_session_created();
  log_event(LogLevel::info, "sandbox_handle_created",
            {{"session", std::string(session::log_prefix(handle->id()))}, {"tenant", tenant.name}});
  return {handle, handle->id(), true, nullptr};
}

asio::awaitable<json> ExecuteTool::call(ToolCall call) {
  auto started = std::chrono::steady_clock::now();
  auto args = parse_execute_arguments(call.arguments, limits_, call.as_task);
  if (!args.request) {
    metrics_.count_execution(ExecOutcome::invalid_arguments, 0);
    co_return tool_error(args.error);
  }
  Target target = target_for(call, args.sandbox_id);
  if (!target.session) {
    metrics_.count_execution(ExecOutcome::invalid_arguments, 0);
    co_return std::move(target.error);
  }
  target.session->touch();
  // The tenant's terms as this request's credentials say now (a reload since the session was
  // made reaches its budgets here).
  target.session->renew_terms(call.tenant);
  if (auto problem = settle_environment(*target.session, *call.tenant, args.environment);
      !problem.empty()) {
    metrics_.count_execution(ExecOutcome::invalid_arguments, 0);
    forget_unseen_handle(target, call, "its first call named an environment it may not use");
    co_return tool_error(problem);
  }
  // 2026-07-28: a client that closes its stream cancels the call; the sandbox stays. So do
  // tasks/cancel and a task's expiry, from whatever thread serves them: the call's control is
  // made here and handed to the session, so a cancel is never lost in between.
  auto control = std::make_shared<sandbox::CallControl>();
  if (call.cancel) {
    if (call.cancel->cancelled()) {
      forget_unseen_handle(target, call, "its first call was cancelled");
      co_return json();
    }
    call.cancel->on_cancel([control] { control->cancel(); });
  }
  const CallFacts facts = facts_of(args);
  auto executed = co_await run_in_session(*target.session, call, std::move(args), control);
  auto returned = std::move(executed.files_out);
  auto ran_in = std::move(executed.sandbox);
  json log_fields = log_fields_for(*target.session, facts, executed);
  auto mapped = map_execute_result(std::move(executed), facts.run, target.handle);
  // The files asked back, after the output: only for a call that ran (its result has
  // structuredContent) in a sandbox that still lives.
  if (facts.files_out > 0 && ran_in && mapped.result.contains("structuredContent"))
    attach_returned_files(mapped.result, returned, call, target, ran_in);
  // What the call reached through the egress proxy, and what it was refused (issue #44).
  if (ran_in)
    attach_network_report(mapped.result, target.session->egress_report(ran_in->calls_started()));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_.count_execution(mapped.outcome, seconds);
  log_fields["outcome"] = exec_outcome_name(mapped.outcome);
  log_fields["duration_ms"] = static_cast<long>(seconds * 1000);
  log_event(log_fields.contains("failure") ? LogLevel::warn : LogLevel::info, "execute",
            std::move(log_fields));
  // A handle the caller never sees (its first call was cancelled, or failed before it ran)
  // would hold its place under the tenant's cap until it idled out: it ends now.
  if (!mapped.result.contains("structuredContent"))
    forget_unseen_handle(target, call,
                         mapped.outcome == ExecOutcome::cancelled ? "its first call was cancelled"
                                                                  : "its first call failed");
  if (mapped.outcome == ExecOutcome::cancelled) co_return json();
  co_return std::move(mapped.result);
}

ExecuteTool::CallFacts ExecuteTool::facts_of(const ExecuteArguments& args) {
  return {*args.request, args.request->code.size(), args.request->stdin_data.size(),
          args.files.in.size(), args.files.out.paths.size()};
}

// Runs the program in the session's sandbox. A request with a progressToken is told how long
// the call has run and, as it appears, what the program writes; the last of that goes before
// the result (the outbox keeps the order).
asio::awaitable<session::ExecuteResult> ExecuteTool::run_in_session(
    session::Session& session, const ToolCall& call, ExecuteArguments args,
    std::shared_ptr<sandbox::CallControl> control) {
  std::shared_ptr<asio::steady_timer> ticker;
  std::shared_ptr<LiveOutput> live;
  if (call.events && call.events->wants_progress()) {
    auto executor = co_await asio::this_coro::executor;
    live = std::make_shared<LiveOutput>(call.events, executor);
    args.request->on_output = live->observer();
    ticker = std::make_shared<asio::steady_timer>(executor);
    asio::co_spawn(executor, tick_progress(live, ticker, limits_.progress_interval),
                   asio::detached);
  }
  session::ExecuteResult executed;
  try {
    executed = co_await session.execute(std::move(*args.request), call.call_key,
                                        std::move(args.files), std::move(control));
  } catch (const std::exception& e) {
    // The host refused a resource (descriptors, memory): a tool error, and the gateway goes on.
    executed.status = session::ExecuteStatus::sandbox_error;
    executed.message = std::string("the host refused a resource: ") + e.what();
  }
  if (ticker) ticker->cancel();
  if (live) live->finish();
  session.touch();
  // The response carries the output twice, escaped: its size there is bounded too.
  if (executed.status == session::ExecuteStatus::ran &&
      bound_response_output(executed.run.stdout_text, executed.run.stderr_text,
                            response_output_budget(limits_.output_max_bytes)))
    executed.run.truncated = true;
  co_return executed;
}

// The call's log line: metadata only, never code, stdin or output. A sandbox that failed or
// could not be made is the operator's business (`failure`, logged as a warning); a call
// refused for its session's cap or lifetime says so (`limit_reached`), in gateway words only.
json ExecuteTool::log_fields_for(const session::Session& session, const CallFacts& facts,
                                 const session::ExecuteResult& executed) {
  const auto& ran = executed.run;
  json fields = {{"session", std::string(session::log_prefix(session.id()))},
                 {"tenant", session.tenant()},
                 {"language", sandbox::language_name(facts.run.language)},
                 {"code_bytes", facts.code_bytes},
                 {"stdin_bytes", facts.stdin_bytes},
                 {"files_in", facts.files_in},
                 {"files_out", facts.files_out},
                 {"exit_code", ran.exit_code},
                 {"stdout_bytes", ran.stdout_text.size()},
                 {"stderr_bytes", ran.stderr_text.size()},
                 {"truncated", ran.truncated},
                 {"oom_killed", ran.oom_killed},
                 {"end_reason", sandbox::end_reason_name(ran.end_reason)},
                 {"spend_usd", ran.spend_usd}};
  if (auto failure = sandbox_failure(executed)) fields["failure"] = *failure;
  if (executed.status == session::ExecuteStatus::limit_reached)
    fields["limit_reached"] = executed.message;
  if (executed.status == session::ExecuteStatus::budget_spent)
    fields["budget_spent"] = executed.message;
  return fields;
}

// The files the call asked back, as content after the output and in structuredContent.
void ExecuteTool::attach_returned_files(json& result, sandbox::TransferResult& returned,
                                        const ToolCall& call, const Target& target,
                                        const std::shared_ptr<sandbox::Sandbox>& ran_in) {
  auto owner = target.session;
  std::string tenant = call.tenant->name;
  MintUri mint = [&](const std::string& path) {
    return resources_ ? resources_->mint(tenant, owner, ran_in, path) : std::string();
  };
  result["structuredContent"]["files"] = add_returned_files(
      returned, mint, resources_ ? resources_->read_max_bytes() : 0, result["content"]);
}

}  // namespace sandgate::server
