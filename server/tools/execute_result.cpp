#include "execute_result.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "common/base64.hpp"
#include "common/json_dump.hpp"
#include "execute_schema.hpp"

namespace sandgate::server {
using nlohmann::json;

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
  if (!run.images.empty()) {
    json images = json::array();
    for (std::size_t i = 0; i < run.images.size(); ++i) {
      const auto& image = run.images[i];
      images.push_back({{"name", "figure-" + std::to_string(i + 1) + ".png"},
                        {"mimeType", "image/png"},
                        {"width", image.width},
                        {"height", image.height},
                        {"bytes", image.png.size()}});
    }
    data["images"] = std::move(images);
  }
  if (!run.images_note.empty()) data["images_dropped"] = run.images_note;
  return data;
}

// The figures as image content, after the text (and the words on what was dropped). Their
// bytes leave the run as they are encoded: a call can carry a few MiB of them.
void append_images(json& content, sandbox::RunResult& run) {
  for (auto& image : run.images) {
    content.push_back(
        {{"type", "image"}, {"data", base64_encode(image.png)}, {"mimeType", "image/png"}});
    image.png = {};
  }
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

// What to do once a session's (or handle's) spend cap or lifetime is reached: nothing more
// runs there, ever.
std::string start_anew_text(bool handle) {
  return handle ? "Omit sandbox_id to start a new sandbox." : "Start a new session to go on.";
}

// The session's words (its cap, its lifetime) when there are some, else the sandbox's.
std::string limit_text(const sandbox::RunResult& run) {
  if (!run.failure.empty()) return run.failure;
  return run.end_reason == sandbox::EndReason::spend_cap
             ? "the spend cap was reached (spent " + dollars(run.spend_usd) + ")"
             : "the lifetime is over";
}

std::string sandbox_end_text(const sandbox::RunResult& run, bool handle) {
  using sandbox::EndReason;
  const std::string gone = ". Its processes and files are gone";
  const std::string fresh = "; the next call starts a fresh sandbox.";
  switch (run.end_reason) {
    case EndReason::spend_cap:
    case EndReason::lifetime:
      return "Sandbox ended: " + limit_text(run) + gone + " and no more code runs here. " +
             start_anew_text(handle);
    case EndReason::closed:
      // The session went with it (DELETE, idle expiry, shutdown), or the tenant's budget is
      // spent (the failure says which, and when it resets).
      return "Sandbox ended: " +
             (run.failure.empty() ? std::string("its session ended") : run.failure) + gone + ".";
    default:
      return "Sandbox ended: the sandbox failed" +
             (run.failure.empty() ? "" : " (" + run.failure + ")") + gone + fresh;
  }
}

// Why the call's files were not all written (the code did not run).
std::string files_refused_text(const sandbox::TransferResult& written) {
  std::string text = "The code did not run: its files could not all be written";
  if (!written.done) return text + " (" + written.failure + ").";
  text += ":";
  for (const auto& f : written.files)
    if (f.status != sandbox::FileStatus::ok) {
      text += " /work/" + f.path + ": " + sandbox::file_status_text(f.status);
      if (f.status == sandbox::FileStatus::failed && f.error != 0)
        text += std::string(" (") + std::strerror(f.error) + ")";
      text += ";";
    }
  text.back() = '.';
  return text;
}

// Said once, on the first call after a hibernated sandbox was brought back.
std::string resumed_text(const session::ExecuteResult& executed) {
  switch (executed.resumed) {
    case session::Resumed::with_files:
      return "The sandbox was resumed from hibernation: files in /work are kept; processes and "
             "interpreter variables were not.";
    case session::Resumed::without_files:
      return "The sandbox was resumed from hibernation with an empty /work: " +
             executed.resumed_why + "; processes and interpreter variables were not kept either.";
    default:
      return "";
  }
}

}  // namespace

std::string unusable_handle_text(const std::string& id, const std::string& why) {
  return "Sandbox " + id + " " + why + "; its files are gone. Omit sandbox_id to start a new one.";
}

namespace {

// A call that did not run to a result of its own: why, as a tool error.
std::optional<MappedResult> not_run(session::ExecuteResult& executed,
                                    const std::string& sandbox_id) {
  using session::ExecuteStatus;
  switch (executed.status) {
    case ExecuteStatus::busy:
      return MappedResult{
          tool_error("The gateway is busy: " + executed.message + ". Try again shortly."),
          ExecOutcome::busy};
    case ExecuteStatus::sandbox_error:
      return MappedResult{tool_error("Sandbox unavailable: " + executed.message),
                          ExecOutcome::sandbox_failure};
    case ExecuteStatus::session_ended:
      return MappedResult{
          tool_error("The session ended before the call could run" +
                     (executed.message.empty() ? "" : ": " + executed.message) + "."),
          ExecOutcome::sandbox_failure};
    case ExecuteStatus::cancelled:
      return MappedResult{tool_error("Cancelled."), ExecOutcome::cancelled};
    case ExecuteStatus::files_refused: {
      std::string resumed = resumed_text(executed);
      return MappedResult{tool_error((resumed.empty() ? "" : resumed + " ") +
                                     files_refused_text(executed.files_in)),
                          ExecOutcome::invalid_arguments};
    }
    case ExecuteStatus::limit_reached: {
      std::string text = executed.message;
      if (!text.empty()) text[0] = static_cast<char>(std::toupper(text[0]));
      return MappedResult{tool_error(text + ". " + start_anew_text(!sandbox_id.empty())),
                          ExecOutcome::sandbox_failure};
    }
    case ExecuteStatus::budget_spent: {
      // Which budget and when it resets: the model can tell its user, and no new session or
      // sandbox helps before then.
      std::string text = executed.message;
      if (!text.empty()) text[0] = static_cast<char>(std::toupper(text[0]));
      return MappedResult{tool_error(text + "."), ExecOutcome::budget_spent};
    }
    case ExecuteStatus::ran:
      break;
  }
  return std::nullopt;
}

// structuredContent of a call that ran: the program's result, the files written, the handle.
json structured_content(session::ExecuteResult& executed, const std::string& resumed,
                        const std::string& sandbox_id) {
  json data = structured(executed.run);
  if (!resumed.empty()) data["resumed"] = resumed;
  if (executed.files_in.done && !executed.files_in.files.empty()) {
    json written = json::array();
    for (const auto& f : executed.files_in.files)
      written.push_back({{"path", "/work/" + f.path}, {"size", f.size}});
    data["files_written"] = std::move(written);
  }
  if (!sandbox_id.empty()) data["sandbox_id"] = sandbox_id;
  return data;
}

// The call ran to its end but used up the cap or lifetime on the way: its result stands, and
// the model learns now that nothing more runs here ("" when the sandbox lives on).
std::string ended_note(const sandbox::RunResult& run, json& data, const std::string& sandbox_id) {
  if (run.outcome == sandbox::RunOutcome::sandbox_ended ||
      (run.end_reason != sandbox::EndReason::spend_cap &&
       run.end_reason != sandbox::EndReason::lifetime))
    return "";
  data["sandbox_ended"] = limit_text(run);
  return "After this call the sandbox ended: " + limit_text(run) +
         ". Its processes and files are gone and no more code runs here. " +
         start_anew_text(!sandbox_id.empty());
}

MappedResult completed_result(sandbox::RunResult& run, json data, const std::string& resumed,
                              const std::string& note) {
  std::string text = dump_json(data);
  json content = json::array();
  if (!resumed.empty()) content.push_back({{"type", "text"}, {"text", resumed}});
  if (!run.state_lost.empty())
    content.push_back({{"type", "text"}, {"text", state_lost_text(run.state_lost)}});
  content.push_back({{"type", "text"}, {"text", std::move(text)}});
  if (!run.images_note.empty()) content.push_back({{"type", "text"}, {"text", run.images_note}});
  if (!note.empty()) content.push_back({{"type", "text"}, {"text", note}});
  append_images(content, run);
  return {
      {{"content", std::move(content)}, {"structuredContent", std::move(data)}, {"isError", false}},
      run.exit_code == 0 ? ExecOutcome::ok : ExecOutcome::nonzero_exit};
}

MappedResult timed_out_result(const sandbox::RunResult& run, json data,
                              const sandbox::RunRequest& request, const std::string& resumed,
                              const std::string& note) {
  std::string text = dump_json(data);
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(request.timeout).count();
  std::string head = "Stopped after " + std::to_string(seconds) + " s, its timeout.";
  if (!resumed.empty()) head = resumed + " " + head;
  if (run.persistent)
    head += run.state_lost.empty() ? " The interpreter was interrupted and keeps its state."
                                   : " " + state_lost_text(run.state_lost);
  if (!note.empty()) head += " " + note;
  return {{{"content", json::array({{{"type", "text"}, {"text", head}},
                                    {{"type", "text"}, {"text", std::move(text)}}})},
           {"structuredContent", std::move(data)},
           {"isError", true}},
          ExecOutcome::timeout};
}

}  // namespace

MappedResult map_execute_result(session::ExecuteResult&& executed,
                                const sandbox::RunRequest& request, const std::string& sandbox_id) {
  if (auto refused = not_run(executed, sandbox_id)) return std::move(*refused);
  auto& run = executed.run;
  const std::string resumed = resumed_text(executed);
  json data = structured_content(executed, resumed, sandbox_id);
  const std::string note = ended_note(run, data, sandbox_id);
  switch (run.outcome) {
    case sandbox::RunOutcome::completed:
      return completed_result(run, std::move(data), resumed, note);
    case sandbox::RunOutcome::timed_out:
      return timed_out_result(run, std::move(data), request, resumed, note);
    case sandbox::RunOutcome::cancelled:
      return {tool_error("Cancelled."), ExecOutcome::cancelled};
    case sandbox::RunOutcome::sandbox_ended:
      break;
  }
  return {tool_error(sandbox_end_text(run, !sandbox_id.empty())), ExecOutcome::sandbox_failure};
}

std::optional<std::string> sandbox_failure(const session::ExecuteResult& executed) {
  using session::ExecuteStatus;
  if (executed.status == ExecuteStatus::sandbox_error) return executed.message;
  const auto& ran = executed.run;
  if (executed.status == ExecuteStatus::ran && ran.outcome == sandbox::RunOutcome::sandbox_ended &&
      ran.end_reason == sandbox::EndReason::failed)
    return ran.failure;
  return std::nullopt;
}

}  // namespace sandgate::server
