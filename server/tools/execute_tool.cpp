#include "execute_tool.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "server/json_dump.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

json language_names() {
  json names = json::array();
  for (auto language : sandbox::kLanguages) names.push_back(sandbox::language_name(language));
  return names;
}

// "\"python\", \"javascript\", \"bash\"", for messages.
std::string quoted_language_list() {
  std::string list;
  for (const auto& name : language_names()) list += (list.empty() ? "" : ", ") + name.dump();
  return list;
}

}  // namespace

std::string idle_text(std::chrono::seconds idle) {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(idle).count();
  return minutes > 0 ? std::to_string(minutes) + " minutes" : std::to_string(idle.count()) + " s";
}

json execute_tool_definition(const ToolLimits& limits) {
  json input = {
      {"type", "object"},
      {"properties",
       {{"code", {{"type", "string"}, {"minLength", 1}, {"description", "The program to run."}}},
        {"language",
         {{"type", "string"},
          {"enum", language_names()},
          {"default", "python"},
          {"description", "python (python3), javascript (node, CommonJS) or bash."}}},
        {"timeout_seconds",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", std::max(limits.timeout_max_s, limits.task_timeout_max_s)},
          {"default", limits.timeout_default_s},
          {"description", "Stop the program if it runs longer than this: at most " +
                              std::to_string(limits.timeout_max_s) + " s, or " +
                              std::to_string(limits.task_timeout_max_s) +
                              " s when the call runs as a task."}}},
        {"stdin",
         {{"type", "string"},
          {"description", "Text fed to the program's standard input (at most " +
                              std::to_string(limits.stdin_max_bytes) + " bytes)."}}},
        {"fresh",
         {{"type", "boolean"},
          {"default", false},
          {"description",
           "Run Python or JavaScript as a script in a new process instead of the sandbox's "
           "persistent interpreter: nothing of earlier calls but files, real stdin and argv."}}},
        {"sandbox_id",
         {{"type", "string"},
          {"description",
           "Run in this sandbox (an id an earlier result returned), keeping its /work files. "
           "Omit it to use this session's own sandbox, or where there is no session, to start "
           "a new sandbox whose id the result returns."}}}}},
      {"required", {"code"}},
      {"additionalProperties", false}};
  json output = {
      {"type", "object"},
      {"properties",
       {{"exit_code",
         {{"type", "integer"}, {"description", "128 + signal number when killed by a signal."}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"truncated", {{"type", "boolean"}, {"description", "Output beyond the cap was dropped."}}},
        {"timed_out", {{"type", "boolean"}}},
        {"oom_killed",
         {{"type", "boolean"}, {"description", "The sandbox's memory limit killed it."}}},
        {"duration_ms", {{"type", "integer"}}},
        {"spend_usd", {{"type", "number"}, {"description", "What this sandbox has spent so far."}}},
        {"sandbox_id",
         {{"type", "string"},
          {"description", "The sandbox the call ran in: pass it back to keep using it."}}},
        {"state_lost",
         {{"type", "string"},
          {"description",
           "Present when the persistent interpreter's variables and imports did not survive "
           "this call, and why (files in /work did)."}}}}},
      {"required",
       {"exit_code", "stdout", "stderr", "truncated", "timed_out", "oom_killed", "duration_ms",
        "spend_usd"}}};
  return {
      {"name", "execute"},
      {"title", "Execute code"},
      {"description",
       "Run Python, JavaScript (Node.js) or a bash script in an isolated sandbox with no network "
       "access, and return its exit code with stdout and stderr. Python and JavaScript run in "
       "the sandbox's persistent interpreter, like notebook cells: variables, functions and "
       "imports of earlier calls are kept, and a final expression's value is printed; an "
       "uncaught exception gives exit code 1 and keeps the state. If the interpreter exits "
       "(sys.exit, process.exit), hits the memory limit or does not stop at its timeout, it "
       "restarts empty and the result's `state_lost` says so. `fresh: true` runs the code as a "
       "script in a new process instead; bash always does. The working directory is /work; "
       "files written there are kept for later calls in the same sandbox. Without a session, "
       "each call without `sandbox_id` starts a new sandbox and returns its `sandbox_id`: pass "
       "it back to keep your files. A sandbox ends after " +
           idle_text(limits.idle_timeout) +
           " without calls, at its lifetime or spend cap, or with end_sandbox; a call naming an "
           "ended sandbox gets an error saying so. A non-zero exit code is a normal result. "
           "Python has the standard library plus whatever data libraries the host installed "
           "(typically numpy, pandas, matplotlib)."},
      {"inputSchema", input},
      {"outputSchema", output},
      // A long program can run as a task: the client polls for its result (MCP tasks).
      {"execution", {{"taskSupport", "optional"}}},
      {"annotations",
       {{"title", "Execute code"},
        {"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}}};
}

ExecuteArguments parse_execute_arguments(const json& args, const ToolLimits& limits, bool as_task) {
  auto fail = [](std::string why) {
    return ExecuteArguments{std::nullopt, "", "Invalid arguments: " + why};
  };
  if (!args.is_object()) return fail("arguments must be an object with at least `code`.");
  for (const auto& [key, value] : args.items()) {
    if (key != "code" && key != "language" && key != "timeout_seconds" && key != "stdin" &&
        key != "sandbox_id" && key != "fresh")
      return fail("unknown argument `" + key +
                  "`; expected code, language, timeout_seconds, stdin, fresh, sandbox_id.");
  }
  sandbox::RunRequest r;
  auto code = args.find("code");
  if (code == args.end() || !code->is_string() || code->get_ref<const std::string&>().empty())
    return fail("`code` must be a non-empty string.");
  r.code = code->get<std::string>();
  if (r.code.find('\0') != std::string::npos)
    return fail("`code` must not contain NUL characters.");
  if (auto lang = args.find("language"); lang != args.end()) {
    auto parsed =
        lang->is_string() ? sandbox::parse_language(lang->get<std::string>()) : std::nullopt;
    if (!parsed) return fail("`language` must be one of " + quoted_language_list() + ".");
    r.language = *parsed;
  }
  std::int64_t timeout = limits.timeout_default_s;
  if (auto t = args.find("timeout_seconds"); t != args.end()) {
    bool whole = t->is_number_integer() ||
                 (t->is_number_float() && std::floor(t->get<double>()) == t->get<double>());
    if (!whole) return fail("`timeout_seconds` must be a whole number of seconds.");
    double v = t->get<double>();
    std::uint32_t most = as_task ? limits.task_timeout_max_s : limits.timeout_max_s;
    if (v < 1 || v > most)
      return fail("`timeout_seconds` must be between 1 and " + std::to_string(most) +
                  (as_task || limits.task_timeout_max_s <= limits.timeout_max_s
                       ? std::string(".")
                       : "; run the call as a task for up to " +
                             std::to_string(limits.task_timeout_max_s) + " s."));
    timeout = static_cast<std::int64_t>(v);
  }
  r.timeout = std::chrono::seconds(timeout);
  if (auto in = args.find("stdin"); in != args.end() && !in->is_null()) {
    if (!in->is_string()) return fail("`stdin` must be a string.");
    if (in->get_ref<const std::string&>().size() > limits.stdin_max_bytes)
      return fail("`stdin` is larger than " + std::to_string(limits.stdin_max_bytes) + " bytes.");
    r.stdin_data = in->get<std::string>();
  }
  if (auto fresh = args.find("fresh"); fresh != args.end() && !fresh->is_null()) {
    if (!fresh->is_boolean()) return fail("`fresh` must be true or false.");
    r.fresh = fresh->get<bool>();
  }
  std::string sandbox_id;
  if (auto id = args.find("sandbox_id"); id != args.end() && !id->is_null()) {
    if (!id->is_string()) return fail("`sandbox_id` must be a string.");
    sandbox_id = id->get<std::string>();
    // Hostile text: never echoed back unless it has the shape of one of our handles.
    if (!session::looks_like_handle(sandbox_id))
      return fail(
          "`sandbox_id` is not a sandbox id this gateway made; omit it to start a new "
          "sandbox.");
  }
  return {std::move(r), std::move(sandbox_id), ""};
}

json tool_error(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

namespace {

// Takes the output by move: it can be a MiB, and every copy shows in the gateway's peak RSS.
json structured(sandbox::RunResult& run) {
  json data = {{"exit_code", run.exit_code},
               {"stdout", std::move(run.stdout_text)},
               {"stderr", std::move(run.stderr_text)},
               {"truncated", run.truncated},
               {"timed_out", run.outcome == sandbox::RunOutcome::timed_out},
               {"oom_killed", run.oom_killed},
               {"duration_ms", run.duration.count()},
               {"spend_usd", std::round(run.spend_usd * 1e6) / 1e6}};
  if (!run.state_lost.empty()) data["state_lost"] = run.state_lost;
  return data;
}

// Said before the result when the interpreter's state did not survive the call.
std::string state_lost_text(const std::string& why) {
  return "The interpreter restarted (" + why +
         "): variables, functions and imports of earlier calls are gone; files in /work are "
         "kept.";
}

std::string dollars(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f", usd);
  return buf;
}

std::string sandbox_end_text(const sandbox::RunResult& run) {
  using sandbox::EndReason;
  const std::string gone = ". Its processes and files are gone";
  const std::string fresh = "; the next call starts a fresh sandbox.";
  switch (run.end_reason) {
    case EndReason::spend_cap:
      return "Sandbox ended: its spend cap was reached (spent " + dollars(run.spend_usd) + ")" +
             gone + fresh;
    case EndReason::lifetime:
      return "Sandbox ended: its lifetime is over" + gone + fresh;
    case EndReason::closed:
      // The session went with it (DELETE, idle expiry, shutdown): there is no next call here.
      return "Sandbox ended: " +
             (run.failure.empty() ? std::string("its session ended") : run.failure) + gone + ".";
    default:
      return "Sandbox ended: the sandbox failed" +
             (run.failure.empty() ? "" : " (" + run.failure + ")") + gone + fresh;
  }
}

}  // namespace

std::string unusable_handle_text(const std::string& id, const std::string& why) {
  return "Sandbox " + id + " " + why + "; its files are gone. Omit sandbox_id to start a new one.";
}

MappedResult map_execute_result(session::ExecuteResult&& executed,
                                const sandbox::RunRequest& request, const std::string& sandbox_id) {
  using session::ExecuteStatus;
  switch (executed.status) {
    case ExecuteStatus::busy:
      return {tool_error("The gateway is busy: " + executed.message + ". Try again shortly."),
              ExecOutcome::busy};
    case ExecuteStatus::sandbox_error:
      return {tool_error("Sandbox unavailable: " + executed.message), ExecOutcome::sandbox_failure};
    case ExecuteStatus::session_ended:
      return {tool_error("The session ended before the call could run" +
                         (executed.message.empty() ? "" : ": " + executed.message) + "."),
              ExecOutcome::sandbox_failure};
    case ExecuteStatus::cancelled:
      return {tool_error("Cancelled."), ExecOutcome::cancelled};
    case ExecuteStatus::ran:
      break;
  }
  auto& run = executed.run;
  json data = structured(run);
  if (!sandbox_id.empty()) data["sandbox_id"] = sandbox_id;
  std::string text = dump_json(data);
  switch (run.outcome) {
    case sandbox::RunOutcome::completed: {
      json content = json::array();
      if (!run.state_lost.empty())
        content.push_back({{"type", "text"}, {"text", state_lost_text(run.state_lost)}});
      content.push_back({{"type", "text"}, {"text", std::move(text)}});
      return {{{"content", std::move(content)},
               {"structuredContent", std::move(data)},
               {"isError", false}},
              run.exit_code == 0 ? ExecOutcome::ok : ExecOutcome::nonzero_exit};
    }
    case sandbox::RunOutcome::timed_out: {
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(request.timeout).count();
      std::string head = "Stopped after " + std::to_string(seconds) + " s, its timeout.";
      if (run.persistent)
        head += run.state_lost.empty() ? " The interpreter was interrupted and keeps its state."
                                       : " " + state_lost_text(run.state_lost);
      return {{{"content", json::array({{{"type", "text"}, {"text", head}},
                                        {{"type", "text"}, {"text", std::move(text)}}})},
               {"structuredContent", std::move(data)},
               {"isError", true}},
              ExecOutcome::timeout};
    }
    case sandbox::RunOutcome::cancelled:
      return {tool_error("Cancelled."), ExecOutcome::cancelled};
    case sandbox::RunOutcome::sandbox_ended:
      break;
  }
  return {tool_error(sandbox_end_text(run)), ExecOutcome::sandbox_failure};
}

}  // namespace sandgate::server
