#include "execute_schema.hpp"

#include <algorithm>

#include "sandbox/sandbox.hpp"

namespace sandgate::server {
using nlohmann::json;

json language_names() {
  json names = json::array();
  for (auto language : sandbox::kLanguages) names.push_back(sandbox::language_name(language));
  return names;
}

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
        {"environment",
         {{"type", "string"},
          {"description",
           "The environment to run in: one of those the description lists (each holds its own "
           "packages). Omit it for your default, or for the one this session already runs: a "
           "session keeps its first environment for its whole life."}}},
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
           "(image, text, blob, link; note says why an image came back as a file) or why not "
           "(error)."},
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
        {"network",
         {{"type", "object"},
          {"description",
           "Present in a sandbox with egress when the call opened connections through its "
           "proxy: `connections`, each with host, port, method, outcome (relayed, refused, "
           "capped, failed, open), reason (why it was refused or ended), bytes_up, bytes_down "
           "and secret (the name of the credential the proxy added, never its value); "
           "`not_listed` counts those beyond the first 50."}}},
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
           "(typically numpy, pandas, matplotlib). `pip install` (to /work/.local) and `npm "
           "install` (to /work/node_modules) keep packages with your files; they can download "
           "only from package indexes this gateway allows you, if any (then HTTPS_PROXY is set "
           "in the sandbox; a refused host gets a 403 that says why). Matplotlib figures a Python "
           "call shows "
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

}  // namespace sandgate::server
