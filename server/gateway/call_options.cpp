// The options of calls: how many run and wait at once, what one execute call may take in and
// give back, the HTTP limits around them, and tasks (calls that outlive their request).
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

constexpr std::uint64_t MiB = 1 << 20;

}  // namespace

std::vector<Option> call_options() {
  return {
      {"--max-concurrent-calls", "SANDGATE_MAX_CONCURRENT_CALLS", "64",
       "execute calls running at once across all sessions.",
       [](Config& c, const std::string& v) {
         c.calls.max_concurrent = static_cast<std::uint32_t>(to_u64(v, 1, 100000));
       }},
      {"--max-queued-calls", "SANDGATE_MAX_QUEUED_CALLS", "1024",
       "execute calls that may wait for a slot; beyond, a call gets a 'gateway is busy' tool "
       "error.",
       [](Config& c, const std::string& v) {
         c.calls.max_queued = static_cast<std::uint32_t>(to_u64(v, 0, 1000000));
       }},
      {"--tenant-max-concurrent-calls", "SANDGATE_TENANT_MAX_CONCURRENT_CALLS",
       "half of --max-concurrent-calls (all of it with a single token and no --oauth-issuer, or "
       "--no-auth)",
       "execute calls one tenant may run at once (the tokens file may override with "
       "max_concurrent_calls=N); its further calls wait. Freed slots go to the waiting tenant "
       "running the fewest calls.",
       [](Config& c, const std::string& v) {
         c.tenants.max_concurrent_calls = static_cast<std::uint32_t>(to_u64(v, 1, 100000));
       }},
      {"--timeout-default", "SANDGATE_TIMEOUT_DEFAULT", "60",
       "Default timeout_seconds of an execute call.",
       [](Config& c, const std::string& v) {
         c.tools.timeout_default_s = static_cast<std::uint32_t>(to_u64(v, 1, 86400));
       }},
      {"--timeout-max", "SANDGATE_TIMEOUT_MAX", "300",
       "Largest timeout_seconds a call may ask for.",
       [](Config& c, const std::string& v) {
         c.tools.timeout_max_s = static_cast<std::uint32_t>(to_u64(v, 1, 86400));
       }},
      {"--stdin-max-bytes", "SANDGATE_STDIN_MAX_BYTES", "1048576",
       "Largest stdin an execute call may pass.",
       [](Config& c, const std::string& v) { c.tools.stdin_max_bytes = to_u64(v, 0, 64 * MiB); }},
      {"--output-max-bytes", "SANDGATE_OUTPUT_MAX_BYTES", "1048576",
       "stdout + stderr kept per call; the rest is discarded and `truncated` set.",
       [](Config& c, const std::string& v) {
         c.host.limits.output_bytes = to_u64(v, 1024, 64 * MiB);
       }},
      {"--file-in-max-bytes", "SANDGATE_FILE_IN_MAX_BYTES", "10485760",
       "Largest file (decoded) an execute call's `files` may write.",
       [](Config& c, const std::string& v) {
         c.tools.file_in_max_bytes = to_u64(v, 0, 256 * MiB);
       }},
      {"--files-in-max-bytes", "SANDGATE_FILES_IN_MAX_BYTES", "10485760",
       "All the files (decoded) one execute call may write; the default body limit grows with "
       "it (base64).",
       [](Config& c, const std::string& v) {
         c.tools.files_in_max_bytes = to_u64(v, 0, 256 * MiB);
       }},
      {"--return-files-max", "SANDGATE_RETURN_FILES_MAX", "20",
       "Files one execute call may name in `return_files`.",
       [](Config& c, const std::string& v) {
         c.tools.return_files_max = static_cast<std::uint32_t>(to_u64(v, 0, 1000));
       }},
      {"--file-inline-max-bytes", "SANDGATE_FILE_INLINE_MAX_BYTES", "262144",
       "A returned file up to this size comes back in the result (image, text or blob; a call "
       "holds at most 4 times this inline); a larger one as a resource link.",
       [](Config& c, const std::string& v) {
         c.tools.file_inline_max_bytes = to_u64(v, 1024, 64 * MiB);
       }},
      {"--resource-read-max-bytes", "SANDGATE_RESOURCE_READ_MAX_BYTES", "52428800",
       "Largest file a resource link may stand for (what one resources/read returns).",
       [](Config& c, const std::string& v) {
         c.tools.resource_read_max_bytes = to_u64(v, 1024, 1024 * MiB);
       }},
      {"--body-limit-bytes", "SANDGATE_BODY_LIMIT_BYTES", "2 MiB + stdin cap + files cap * 4/3",
       "Largest request body; larger ones get HTTP 413.",
       [](Config& c, const std::string& v) {
         c.http.body_limit_bytes = to_u64(v, 1024, 256 * MiB);
       }},
      {"--header-timeout", "SANDGATE_HEADER_TIMEOUT", "30",
       "Seconds a client has to send a request's headers (also the keep-alive idle limit).",
       [](Config& c, const std::string& v) {
         c.http.header_timeout = std::chrono::seconds(to_u64(v, 1, 3600));
       }},
      {"--body-timeout", "SANDGATE_BODY_TIMEOUT", "60",
       "Seconds a client has to send a request's body, and to take each response (or event) "
       "written to it.",
       [](Config& c, const std::string& v) {
         c.http.body_timeout = std::chrono::seconds(to_u64(v, 1, 3600));
       }},
      {"--max-connections", "SANDGATE_MAX_CONNECTIONS", "1024",
       "Open client connections; beyond, new ones are closed at once.",
       [](Config& c, const std::string& v) {
         c.http.max_connections = static_cast<std::uint32_t>(to_u64(v, 1, 1000000));
       }},
      {"--max-connections-per-address", "SANDGATE_MAX_CONNECTIONS_PER_ADDRESS",
       "max(8, max-connections / 4)",
       "Open client connections from one address (an IPv6 client: its /64); beyond, new ones "
       "are closed at once, so one client cannot take every connection slot. An MCP client "
       "holds one or a few; the default leaves three quarters of the slots to others. Behind a "
       "proxy or a Kubernetes ingress every client may arrive from the proxy's address: raise "
       "it there, or 0 for no cap.",
       [](Config& c, const std::string& v) {
         c.http.max_connections_per_address = static_cast<std::uint32_t>(to_u64(v, 0, 1000000));
       }},
      {"--progress-interval", "SANDGATE_PROGRESS_INTERVAL", "5",
       "Seconds between progress notifications of an execute call whose request carries a "
       "progressToken.",
       [](Config& c, const std::string& v) {
         c.tools.progress_interval = std::chrono::seconds(to_u64(v, 1, 3600));
       }},
      {"--task-timeout-max", "SANDGATE_TASK_TIMEOUT_MAX", "1800",
       "Largest timeout_seconds of a call that runs as a task (MCP tasks: the client polls for "
       "its result instead of holding its request open). The sandbox's lifetime still applies.",
       [](Config& c, const std::string& v) {
         c.tools.task_timeout_max_s = static_cast<std::uint32_t>(to_u64(v, 1, 86400 * 7));
       }},
      {"--task-after", "SANDGATE_TASK_AFTER", "10",
       "Seconds an execute call from a client that declared the 2026-07-28 tasks extension may "
       "run before it becomes a task (answered with the task, which the client polls); one that "
       "ends sooner is answered as usual. 0: every such call becomes a task.",
       [](Config& c, const std::string& v) {
         c.tools.task_after = std::chrono::seconds(to_u64(v, 0, 3600));
       }},
      {"--task-ttl-max", "SANDGATE_TASK_TTL_MAX", "7200",
       "Seconds a task (and, once it ended, its result) is kept at most from its creation; a "
       "client may ask for less (not under 60). A task still running then is cancelled.",
       [](Config& c, const std::string& v) {
         c.tasks.ttl_max = std::chrono::seconds(to_u64(v, 60, 86400 * 30));
       }},
      {"--tasks-per-tenant", "SANDGATE_TASKS_PER_TENANT", "100",
       "Tasks one tenant may hold (running or ended and kept); at the cap the oldest ended one "
       "is dropped, and a new task is refused only when all of them are running.",
       [](Config& c, const std::string& v) {
         c.tasks.max_per_tenant = static_cast<std::uint32_t>(to_u64(v, 1, 1000000));
       }},
      {"--task-results-max-mb", "SANDGATE_TASK_RESULTS_MAX_MB", "64",
       "MiB of ended tasks' results one tenant may keep; beyond, its oldest results are dropped.",
       [](Config& c, const std::string& v) {
         c.tasks.max_outcome_bytes_per_tenant = to_u64(v, 1, 1 << 20) * MiB;
       }},
  };
}

}  // namespace sandgate::server::options_detail
