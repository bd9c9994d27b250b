#include "execute_tool.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/base64.hpp"
#include "common/json_dump.hpp"
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

// "`files`[2]": where in the arguments a problem is.
std::string at(const char* name, std::size_t index) {
  return "`" + std::string(name) + "`[" + std::to_string(index) + "]";
}

// `files`: [{path, content, encoding?}] -> what to write; empty with `error` set when invalid.
std::vector<sandbox::FileIn> parse_files_in(const json& files, const ToolLimits& limits,
                                            std::string& error) {
  std::vector<sandbox::FileIn> out;
  if (!files.is_array()) {
    error = "`files` must be an array of {path, content, encoding?}.";
    return {};
  }
  if (files.size() > limits.files_in_max_count) {
    error = "`files` has more than " + std::to_string(limits.files_in_max_count) + " files.";
    return {};
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    auto fail = [&](std::string why) {
      error = at("files", i) + " " + why;
      return std::vector<sandbox::FileIn>{};
    };
    if (!f.is_object()) return fail("must be an object {path, content, encoding?}.");
    for (const auto& [key, value] : f.items())
      if (key != "path" && key != "content" && key != "encoding")
        return fail("has an unknown key; expected path, content, encoding.");
    if (!f.contains("path") || !f["path"].is_string()) return fail("needs `path`, a string.");
    if (!f.contains("content") || !f["content"].is_string())
      return fail("needs `content`, a string.");
    const auto& path = f["path"].get_ref<const std::string&>();
    if (!sandbox::work_relative_path(path))
      return fail(
          "`path` must name a file under /work (relative, or absolute under /work; no "
          "`..`).");
    std::string encoding = "utf-8";
    if (f.contains("encoding")) {
      if (!f["encoding"].is_string() || (f["encoding"] != "utf-8" && f["encoding"] != "base64"))
        return fail("`encoding` must be \"utf-8\" or \"base64\".");
      encoding = f["encoding"].get<std::string>();
    }
    const auto& text = f["content"].get_ref<const std::string&>();
    // Checked before decoding: base64 is 4/3 of its bytes.
    if (text.size() / (encoding == "base64" ? 4 : 3) * 3 > limits.file_in_max_bytes + 3)
      return fail("is larger than " + std::to_string(limits.file_in_max_bytes) +
                  " bytes, the cap for one file.");
    sandbox::FileIn in{path, {}};
    if (encoding == "base64") {
      auto decoded = base64_decode(text);
      if (!decoded) return fail("`content` is not valid base64 (standard alphabet, padded).");
      in.content = std::move(*decoded);
    } else {
      in.content = text;
    }
    if (in.content.size() > limits.file_in_max_bytes)
      return fail("is larger than " + std::to_string(limits.file_in_max_bytes) +
                  " bytes, the cap for one file.");
    total += in.content.size();
    if (total > limits.files_in_max_bytes) {
      error = "`files` hold more than " + std::to_string(limits.files_in_max_bytes) +
              " bytes, the cap for one call.";
      return {};
    }
    out.push_back(std::move(in));
  }
  return out;
}

// `return_files`: [path, …].
std::vector<std::string> parse_return_files(const json& paths, const ToolLimits& limits,
                                            std::string& error) {
  if (!paths.is_array()) {
    error = "`return_files` must be an array of paths under /work.";
    return {};
  }
  if (paths.size() > limits.return_files_max) {
    error = "`return_files` names more than " + std::to_string(limits.return_files_max) + " files.";
    return {};
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!paths[i].is_string() || !sandbox::work_relative_path(paths[i].get<std::string>())) {
      error = at("return_files", i) +
              " must name a file under /work (relative, or absolute under /work; no `..`).";
      return {};
    }
    out.push_back(paths[i].get<std::string>());
  }
  return out;
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
           "a new sandbox whose id the result returns."}}},
        {"files",
         {{"type", "array"},
          {"maxItems", limits.files_in_max_count},
          {"description",
           "Files to write before the code runs (parent directories are made; an existing "
           "file is replaced). At most " +
               std::to_string(limits.file_in_max_bytes) + " bytes each and " +
               std::to_string(limits.files_in_max_bytes) + " in all."},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"path",
               {{"type", "string"},
                {"description", "Relative to /work, or absolute under /work."}}},
              {"content", {{"type", "string"}}},
              {"encoding",
               {{"type", "string"},
                {"enum", {"utf-8", "base64"}},
                {"default", "utf-8"},
                {"description", "base64 for binary content."}}}}},
            {"required", {"path", "content"}},
            {"additionalProperties", false}}}}},
        {"return_files",
         {{"type", "array"},
          {"maxItems", limits.return_files_max},
          {"items", {{"type", "string"}}},
          {"description",
           "Files under /work to return after the code ran: images as images, small files as "
           "embedded resources, larger ones (over " +
               std::to_string(limits.file_inline_max_bytes) +
               " bytes) as resource links to read with resources/read."}}}}},
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
        {"spend_usd",
         {{"type", "number"},
          {"description",
           "What this session (or sandbox_id) has spent so far, across every sandbox it had; "
           "its spend cap applies to this total."}}},
        {"sandbox_ended",
         {{"type", "string"},
          {"description",
           "Present when this call used up the spend cap or lifetime: the sandbox has ended "
           "after it, and why; no further call runs there."}}},
        {"sandbox_id",
         {{"type", "string"},
          {"description", "The sandbox the call ran in: pass it back to keep using it."}}},
        {"files",
         {{"type", "array"},
          {"description",
           "The files return_files asked for: path, size, mimeType, how each was returned "
           "(image, text, blob, link) or why not (error)."},
          {"items", {{"type", "object"}}}}},
        {"files_written",
         {{"type", "array"},
          {"description", "The files `files` wrote: path and size."},
          {"items", {{"type", "object"}}}}},
        {"state_lost",
         {{"type", "string"},
          {"description",
           "Present when the persistent interpreter's variables and imports did not survive "
           "this call, and why (files in /work did)."}}},
        {"resumed",
         {{"type", "string"},
          {"description",
           "Present on the first call after the sandbox was hibernated (idle): what was kept "
           "(files in /work) and what was not (processes, interpreter variables)."}}},
        {"images",
         {{"type", "array"},
          {"description",
           "Present when the call returned figures (Python matplotlib figures shown or left "
           "open): one entry per image content item, in the same order; the PNG bytes are in "
           "the content, not here."},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"name", {{"type", "string"}}},
              {"mimeType", {{"type", "string"}}},
              {"width", {{"type", "integer"}}},
              {"height", {{"type", "integer"}}},
              {"bytes", {{"type", "integer"}}}}},
            {"required", {"name", "mimeType", "width", "height", "bytes"}}}}}},
        {"images_dropped",
         {{"type", "string"},
          {"description", "Present when figures were made but not returned, and why."}}}}},
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
       "files written there are kept for later calls in the same sandbox. `files` writes files "
       "there before the code runs; `return_files` sends files back after it ran (images as "
       "images, small files embedded, larger ones as resource links to read with "
       "resources/read). Without a session, "
       "each call without `sandbox_id` starts a new sandbox and returns its `sandbox_id`: pass "
       "it back to keep your files. A sandbox ends after " +
           idle_text(limits.idle_timeout) +
           " without calls, at its lifetime or spend cap, or with end_sandbox; a call naming an "
           "ended sandbox gets an error saying so. The spend cap and lifetime hold for the "
           "session (or sandbox_id) across all its sandboxes: once reached, start a new one. "
           "A non-zero exit code is a normal result. "
           "Python has the standard library plus whatever data libraries the host installed "
           "(typically numpy, pandas, matplotlib). Matplotlib figures a Python call shows "
           "(plt.show()) or leaves open come back as PNG image content (at most " +
           std::to_string(sandbox::FigureLimits{}.max_count) + " per call, each at most " +
           std::to_string(sandbox::FigureLimits{}.max_side) + "x" +
           std::to_string(sandbox::FigureLimits{}.max_side) + " pixels)."},
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
    return ExecuteArguments{std::nullopt, "", "Invalid arguments: " + why, {}};
  };
  if (!args.is_object()) return fail("arguments must be an object with at least `code`.");
  for (const auto& [key, value] : args.items()) {
    if (key != "code" && key != "language" && key != "timeout_seconds" && key != "stdin" &&
        key != "sandbox_id" && key != "fresh" && key != "files" && key != "return_files")
      return fail("unknown argument `" + key +
                  "`; expected code, language, timeout_seconds, stdin, fresh, sandbox_id, files, "
                  "return_files.");
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
  session::CallFiles files;
  std::string problem;
  if (auto in = args.find("files"); in != args.end() && !in->is_null()) {
    files.in = parse_files_in(*in, limits, problem);
    if (!problem.empty()) return fail(problem);
  }
  if (auto out = args.find("return_files"); out != args.end() && !out->is_null()) {
    files.out.paths = parse_return_files(*out, limits, problem);
    if (!problem.empty()) return fail(problem);
    files.out.max_bytes_each = limits.file_inline_max_bytes;
    files.out.max_bytes_total = 4 * limits.file_inline_max_bytes;
  }
  return {std::move(r), std::move(sandbox_id), "", std::move(files)};
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
      // The session went with it (DELETE, idle expiry, shutdown): there is no next call here.
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
    case ExecuteStatus::files_refused: {
      std::string resumed = resumed_text(executed);
      return {tool_error((resumed.empty() ? "" : resumed + " ") +
                         files_refused_text(executed.files_in)),
              ExecOutcome::invalid_arguments};
    }
    case ExecuteStatus::limit_reached: {
      std::string text = executed.message;
      if (!text.empty()) text[0] = static_cast<char>(std::toupper(text[0]));
      return {tool_error(text + ". " + start_anew_text(!sandbox_id.empty())),
              ExecOutcome::sandbox_failure};
    }
    case ExecuteStatus::ran:
      break;
  }
  auto& run = executed.run;
  json data = structured(run);
  const std::string resumed = resumed_text(executed);
  if (!resumed.empty()) data["resumed"] = resumed;
  if (executed.files_in.done && !executed.files_in.files.empty()) {
    json written = json::array();
    for (const auto& f : executed.files_in.files)
      written.push_back({{"path", "/work/" + f.path}, {"size", f.size}});
    data["files_written"] = std::move(written);
  }
  if (!sandbox_id.empty()) data["sandbox_id"] = sandbox_id;
  // The call ran to its end but used up the cap or lifetime on the way: its result stands, and
  // the model learns now that nothing more runs here.
  std::string ended_note;
  if (run.outcome != sandbox::RunOutcome::sandbox_ended &&
      (run.end_reason == sandbox::EndReason::spend_cap ||
       run.end_reason == sandbox::EndReason::lifetime)) {
    data["sandbox_ended"] = limit_text(run);
    ended_note = "After this call the sandbox ended: " + limit_text(run) +
                 ". Its processes and files are gone and no more code runs here. " +
                 start_anew_text(!sandbox_id.empty());
  }
  std::string text = dump_json(data);
  switch (run.outcome) {
    case sandbox::RunOutcome::completed: {
      json content = json::array();
      if (!resumed.empty()) content.push_back({{"type", "text"}, {"text", resumed}});
      if (!run.state_lost.empty())
        content.push_back({{"type", "text"}, {"text", state_lost_text(run.state_lost)}});
      content.push_back({{"type", "text"}, {"text", std::move(text)}});
      if (!run.images_note.empty())
        content.push_back({{"type", "text"}, {"text", run.images_note}});
      if (!ended_note.empty()) content.push_back({{"type", "text"}, {"text", ended_note}});
      append_images(content, run);
      return {{{"content", std::move(content)},
               {"structuredContent", std::move(data)},
               {"isError", false}},
              run.exit_code == 0 ? ExecOutcome::ok : ExecOutcome::nonzero_exit};
    }
    case sandbox::RunOutcome::timed_out: {
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(request.timeout).count();
      std::string head = "Stopped after " + std::to_string(seconds) + " s, its timeout.";
      if (!resumed.empty()) head = resumed + " " + head;
      if (run.persistent)
        head += run.state_lost.empty() ? " The interpreter was interrupted and keeps its state."
                                       : " " + state_lost_text(run.state_lost);
      if (!ended_note.empty()) head += " " + ended_note;
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
  return {tool_error(sandbox_end_text(run, !sandbox_id.empty())), ExecOutcome::sandbox_failure};
}

}  // namespace sandgate::server
