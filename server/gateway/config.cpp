#include "server/gateway/config.hpp"

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "ledger/postgres_ledger.hpp"
#include "sandbox/file_util.hpp"
#include "sandbox/ready_pool.hpp"
#include "server/gateway/config_option.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace {

using namespace options_detail;

void set_listen(Config& c, const std::string& v) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("expected HOST:PORT");
  std::string host = v.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  c.http.listen_host = host;
  c.http.listen_port = static_cast<std::uint16_t>(to_u64(v.substr(colon + 1), 0, 65535));
}

constexpr std::uint64_t MiB = 1 << 20;

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

std::vector<Option> option_rows() {
  std::vector<Option> table = {
      {"--listen", "SANDGATE_LISTEN", "127.0.0.1:8080",
       "Address and port to serve MCP on (HOST:PORT; port 0 picks one).", set_listen},
      {"--token-file", "SANDGATE_TOKEN_FILE", "",
       "Tokens file: one tenant per line, '<sha256 of token> <tenant> [max_sessions=N] "
       "[spend_cap_usd=X] [max_concurrent_calls=N] [max_sandboxes=N] "
       "[budget_usd_per_day=X] [budget_usd_per_month=X] [egress=HOST[:PORT],...] "
       "[egress_connections=N] [egress_mb_per_call=N] [egress_mb_per_sandbox=N]'. Refused if "
       "group/world-writable; SIGHUP reloads it.",
       [](Config& c, const std::string& v) { c.auth.token_file = v; }},
      {"--no-auth", "SANDGATE_NO_AUTH", "false",
       "Serve without tokens. Refused unless listening on loopback.",
       [](Config& c, const std::string& v) { c.auth.no_auth = to_bool(v); }, true},
      {"--tls-cert", "SANDGATE_TLS_CERT", "",
       "PEM certificate chain: serve HTTPS (with --tls-key).",
       [](Config& c, const std::string& v) { c.http.tls_cert = v; }},
      {"--tls-key", "SANDGATE_TLS_KEY", "", "PEM private key for --tls-cert.",
       [](Config& c, const std::string& v) { c.http.tls_key = v; }},
      {"--allowed-origins", "SANDGATE_ALLOWED_ORIGINS", "",
       "Comma-separated Origin values accepted besides loopback ones (e.g. "
       "https://app.example.com).",
       [](Config& c, const std::string& v) { c.origins.allowed_origins = to_list(v); }},
      {"--allowed-hosts", "SANDGATE_ALLOWED_HOSTS", "",
       "Comma-separated Host header values accepted when listening on loopback (a proxy's public "
       "name).",
       [](Config& c, const std::string& v) { c.origins.allowed_hosts = to_list(v); }},
      {"--max-sessions", "SANDGATE_MAX_SESSIONS", "50000",
       "Sessions and sandbox handles open at once, all tenants together. One without a live "
       "sandbox costs about 1.3 KiB of gateway memory (50000: about 65 MiB); --max-sandboxes "
       "bounds the real resources, so this is high: clients that never end their sessions must "
       "not fill it.",
       [](Config& c, const std::string& v) { c.registry.max_sessions = to_u64(v, 1, 10'000'000); }},
      {"--max-sessions-per-tenant", "SANDGATE_MAX_SESSIONS_PER_TENANT", "5000",
       "Sessions and sandbox handles open at once per tenant (the tokens file may override).",
       [](Config& c, const std::string& v) {
         c.tenants.max_sessions = static_cast<std::uint32_t>(to_u64(v, 1, 10'000'000));
       }},
      {"--at-session-cap", "SANDGATE_AT_SESSION_CAP", "evict",
       "At a session cap (the tenant's or the gateway's): 'evict' ends the least recently used "
       "session or handle with no call running (the tenant's own; at the gateway's cap, of the "
       "tenant holding the most) and admits the new one; 'refuse' refuses the new one.",
       [](Config& c, const std::string& v) {
         if (v == "evict")
           c.registry.at_session_cap = session::AtSessionCap::evict;
         else if (v == "refuse")
           c.registry.at_session_cap = session::AtSessionCap::refuse;
         else
           throw std::invalid_argument("expected evict or refuse");
       }},
      {"--session-idle-timeout", "SANDGATE_SESSION_IDLE_TIMEOUT", "1800",
       "Seconds without a request after which a session, or a sandbox handle without a call, "
       "ends with its sandbox.",
       [](Config& c, const std::string& v) {
         c.registry.idle_timeout = std::chrono::seconds(to_u64(v, 1, 86400 * 7));
       }},
      {"--sandbox-hibernate-after", "SANDGATE_SANDBOX_HIBERNATE_AFTER", "600",
       "Seconds without a call after which a session's sandbox is hibernated: /work is packed "
       "(inside the sandbox) into the state directory and its processes end; the next call "
       "restores /work into a fresh sandbox. Earlier under pressure (see --max-sandboxes). 0: "
       "never (then pressure ends idle sandboxes instead).",
       [](Config& c, const std::string& v) {
         c.registry.hibernate_after = std::chrono::seconds(to_u64(v, 0, 86400 * 7));
       }},
      {"--state-dir", "SANDGATE_STATE_DIR", "",
       "Directory (made 0700) for hibernated sandboxes' archives and, when given, the saved "
       "session registry (`sessions.json`, 0600): on SIGTERM idle sandboxes are hibernated and "
       "the registry written (also checkpointed while running), and a gateway started again with "
       "the same `--state-dir` and `--replica-name` serves those sessions and handles again. "
       "Needs hibernation on (`--sandbox-hibernate-after` > 0). Default: a private "
       "hibernate.<pid> directory under $STATE_DIRECTORY, /var/lib/sandgate or $TMPDIR/sandgate, "
       "removed at a clean exit (sessions do not survive a restart).",
       [](Config& c, const std::string& v) { c.state.dir = v; }},
      {"--ledger", "SANDGATE_LEDGER", "sqlite",
       "Where every sandbox's metered use (CPU and memory seconds, wall time, calls, output "
       "bytes, the prices applied and the USD) is recorded per tenant and session or handle: "
       "`sqlite`, the embedded ledger `ledger.sqlite` in `--state-dir` (WAL; saved every second "
       "off the request path, so a SIGKILL loses at most the last second; read it with "
       "`sandgate usage`); a `postgresql://user@host:port/db` URI, a PostgreSQL database every "
       "replica of a deployment shares (tables `sandgate_*`, migrated at start; tenant budgets "
       "hold across the replicas; the password comes from `--ledger-password-file`, a URI "
       "carrying one is refused); or `off`. Without a `--state-dir` (for `sqlite`), or with "
       "`off`, nothing is written (an info line at start says so) and tenant budgets count in "
       "memory, from this start on.",
       [](Config& c, const std::string& v) {
         if (v == "sqlite") {
           c.ledger.kind = ledger::LedgerKind::sqlite;
         } else if (v == "off") {
           c.ledger.kind = ledger::LedgerKind::off;
         } else if (ledger::is_postgres_url(v)) {
           if (auto refusal = ledger::postgres_url_refusal(v); !refusal.empty())
             throw std::invalid_argument(refusal);
           c.ledger.kind = ledger::LedgerKind::postgres;
           c.ledger.postgres_url = v;
         } else {
           throw std::invalid_argument("expected sqlite, off or a postgresql:// URI");
         }
       }},
      {"--ledger-password-file", "SANDGATE_LEDGER_PASSWORD_FILE", "",
       "File whose first line is the password of the PostgreSQL ledger's user (e.g. a mounted "
       "Kubernetes Secret); read at start. Empty: no password (peer, certificate or `~/.pgpass` "
       "authentication).",
       [](Config& c, const std::string& v) { c.ledger.postgres_password_file = v; }},
      {"--budget-chunk-usd", "SANDGATE_BUDGET_CHUNK_USD", "0.10",
       "With a PostgreSQL ledger: how much of a tenant's budget a replica reserves at a time "
       "(one atomic statement). A replica runs the tenant's calls within its reservation without "
       "a round trip, so the database is asked about once per chunk spent; unused reservations "
       "are given back after 5 s without use and at shutdown.",
       [](Config& c, const std::string& v) { c.ledger.shared.chunk_usd = to_positive(v); }},
      {"--ledger-unreachable", "SANDGATE_LEDGER_UNREACHABLE", "refuse",
       "With a PostgreSQL ledger that cannot be reached: `refuse` a budgeted tenant's calls once "
       "its replica's reservation is used up (a tool error saying to try again; calls within a "
       "reservation go on, and the gateway reconnects by itself), or `allow` them, unbudgeted "
       "until the database is back.",
       [](Config& c, const std::string& v) {
         if (v != "refuse" && v != "allow") throw std::invalid_argument("expected refuse or allow");
         c.ledger.shared.allow_when_unreachable = v == "allow";
       }},
      {"--state-max-mb", "SANDGATE_STATE_MAX_MB", "4096",
       "All hibernated archives together, MiB; beyond, the oldest archive of the tenant "
       "holding the most is dropped, never one of a tenant holding less (an archive that would "
       "need that is not written: its sandbox stays live). A dropped archive's session resumes "
       "with an empty /work and is told so.",
       [](Config& c, const std::string& v) { c.state.max_bytes = to_u64(v, 1, 1 << 30) * MiB; }},
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
      {"--memory-mb", "SANDGATE_MEMORY_MB", "1024",
       "Memory per sandbox, MiB (its /work and /tmp files count too).",
       [](Config& c, const std::string& v) {
         c.host.limits.memory_bytes = to_u64(v, 16, 1 << 20) * MiB;
       }},
      {"--cpus", "SANDGATE_CPUS", "1", "CPU quota per sandbox, in vCPUs.",
       [](Config& c, const std::string& v) { c.host.limits.cpus = to_positive(v); }},
      {"--max-processes", "SANDGATE_MAX_PROCESSES", "256", "Processes and threads per sandbox.",
       [](Config& c, const std::string& v) {
         c.host.limits.max_processes = static_cast<std::uint32_t>(to_u64(v, 8, 1 << 20));
       }},
      {"--work-mb", "SANDGATE_WORK_MB", "512", "Size of each sandbox's /work, MiB (ENOSPC beyond).",
       [](Config& c, const std::string& v) {
         c.host.limits.work_bytes = to_u64(v, 1, 1 << 20) * MiB;
       }},
      {"--tmp-mb", "SANDGATE_TMP_MB", "64", "Size of each sandbox's /tmp (and /dev/shm), MiB.",
       [](Config& c, const std::string& v) {
         c.host.limits.tmp_bytes = to_u64(v, 1, 1 << 20) * MiB;
       }},
      {"--spend-cap-usd", "SANDGATE_SPEND_CAP_USD", "1",
       "Spend (USD) a session or sandbox handle may reach, across every sandbox it had: then its "
       "sandbox ends, its calls get an error and nothing new starts (the tokens file may "
       "override per tenant).",
       [](Config& c, const std::string& v) { c.host.limits.spend_cap_usd = to_positive(v); }},
      {"--budget-usd-per-day", "SANDGATE_BUDGET_USD_PER_DAY", "",
       "What each tenant may spend (USD) in a UTC calendar day, across all its sessions, "
       "handles, tasks and restarts (and replicas, with a PostgreSQL `--ledger`), "
       "unless its tokens-file or OAuth policy line says `budget_usd_per_day=`. Once spent, its "
       "calls get a tool error naming the budget and when it resets (00:00 UTC), and its "
       "running sandboxes end within about two seconds. Empty: no daily budget.",
       [](Config& c, const std::string& v) {
         c.tenants.budget_usd_per_day =
             v.empty() ? std::nullopt : std::optional<double>(to_positive(v));
       }},
      {"--budget-usd-per-month", "SANDGATE_BUDGET_USD_PER_MONTH", "",
       "What each tenant may spend (USD) in a UTC calendar month, as `--budget-usd-per-day` "
       "(per tenant: `budget_usd_per_month=`); it resets at 00:00 UTC on the 1st. Empty: no "
       "monthly budget.",
       [](Config& c, const std::string& v) {
         c.tenants.budget_usd_per_month =
             v.empty() ? std::nullopt : std::optional<double>(to_positive(v));
       }},
      {"--sandbox-lifetime", "SANDGATE_SANDBOX_LIFETIME", "1800",
       "Seconds from a session's or sandbox handle's creation until it may run no more code, "
       "across every sandbox it had: then its sandbox ends, its calls get an error and nothing "
       "new starts.",
       [](Config& c, const std::string& v) {
         c.host.limits.lifetime = std::chrono::seconds(to_u64(v, 1, 86400 * 7));
       }},
      {"--sandbox-start-timeout", "SANDGATE_SANDBOX_START_TIMEOUT", "10",
       "Seconds a new sandbox may take to be built (milliseconds on an idle host; a node short "
       "of memory or CPU can stretch it to seconds); past it the call gets a tool error.",
       [](Config& c, const std::string& v) {
         c.host.start_timeout = std::chrono::seconds(to_u64(v, 1, 600));
       }},
      {"--price-vcpu-hour", "SANDGATE_PRICE_VCPU_HOUR", "0.0504",
       "USD per vCPU-hour of CPU time used.",
       [](Config& c, const std::string& v) { c.host.prices.usd_per_vcpu_hour = to_positive(v); }},
      {"--price-gib-hour", "SANDGATE_PRICE_GIB_HOUR", "0.0162", "USD per GiB-hour of memory held.",
       [](Config& c, const std::string& v) { c.host.prices.usd_per_gib_hour = to_positive(v); }},
      {"--memory-limit-mb", "SANDGATE_MEMORY_LIMIT_MB", "",
       "The memory limit the gateway and its sandboxes share, MiB (in Kubernetes: the "
       "container's limits.memory through the downward API). Default: the tightest limit on "
       "the gateway's own cgroup and the ancestors it can see.",
       [](Config& c, const std::string& v) {
         c.host.memory_limit = to_u64(v, 64, 1ull << 30) * MiB;
       }},
      {"--gateway-memory-reserve-mb", "SANDGATE_GATEWAY_MEMORY_RESERVE_MB", "256",
       "Under a memory limit on the gateway's cgroup (a container's or a systemd unit's), MiB "
       "kept for the gateway: its sandboxes together are capped at the rest, so an out-of-memory "
       "kill picks a sandbox program and never reaches the limit that would kill the gateway.",
       [](Config& c, const std::string& v) {
         c.host.gateway_memory_reserve = to_u64(v, 16, 1 << 20) * MiB;
       }},
      {"--max-sandboxes", "SANDGATE_MAX_SANDBOXES", "1024",
       "Sandboxes alive at once. At the cap (or with the sandboxes at 90 % of their shared "
       "memory budget), a new one hibernates the least recently used idle sandbox (of the tenant "
       "holding the most; its session or handle stays and its next call resumes it with its "
       "/work), or ends it when hibernation is off or fails; refused only when every sandbox has "
       "a call running.",
       [](Config& c, const std::string& v) {
         c.host.max_sandboxes = static_cast<std::uint32_t>(to_u64(v, 1, 1 << 20));
       }},
      {"--pool-size", "SANDGATE_POOL_SIZE", "2",
       "Ready sandboxes kept built ahead of need (warm starts): each has its Python interpreter "
       "running with --pool-preload imported and Node started, and is handed to exactly one new "
       "session's or handle's sandbox (or a resume), never back; a replacement is then built in "
       "the background. They hold a sandbox slot and memory (about 90 MiB of host memory each "
       "with the default preload, measured on Debian 12) and are the operator's cost, not a "
       "tenant's spend; they are built only with a slot to spare and the sandboxes under 70 % "
       "of their memory budget, and are the first to go under pressure. 0: none (every sandbox "
       "is built on demand); at most 64.",
       [](Config& c, const std::string& v) {
         c.host.pool.size = static_cast<std::uint32_t>(to_u64(v, 0, 64));
       }},
      {"--pool-preload", "SANDGATE_POOL_PRELOAD", "numpy,pandas,matplotlib.pyplot",
       "Comma-separated Python modules each ready sandbox's interpreter imports before it is "
       "handed out (a session's `import` of them is then a lookup; one that is missing is "
       "skipped). Empty: the interpreter starts with nothing imported.",
       [](Config& c, const std::string& v) {
         auto modules = to_list(v);
         for (const auto& m : modules)
           if (auto problem = sandbox::preload_name_problem(m); !problem.empty())
             throw std::invalid_argument(problem);
         c.host.pool.preload = std::move(modules);
       }},
      {"--tenant-max-sandboxes", "SANDGATE_TENANT_MAX_SANDBOXES",
       "half of --max-sandboxes (all of it with a single token and no --oauth-issuer, or "
       "--no-auth)",
       "Live sandboxes one tenant may hold at once (the tokens file may override with "
       "max_sandboxes=N). At its share, "
       "a tenant's new sandbox hibernates (or ends) the tenant's own least recently used one that "
       "no call is using, never another tenant's; refused when all of them are in use.",
       [](Config& c, const std::string& v) {
         c.tenants.max_sandboxes = static_cast<std::uint32_t>(to_u64(v, 1, 1 << 20));
       }},
      {"--sandbox-uid-base", "SANDGATE_SANDBOX_UID_BASE",
       "1000000 on a host; in a user namespace 10000 (or the first mapped range that fits)",
       "First host uid for sandboxes; each uses two ([base, base + 2 * max-sandboxes)). Give "
       "gateways on one host distinct ranges. At least 100000 on a host, clear of real "
       "accounts; inside a user namespace (a pod with hostUsers: false) the ids are its own "
       "and lower is allowed.",
       [](Config& c, const std::string& v) {
         c.uid_base_set = true;
         c.host.uid_base = static_cast<std::uint32_t>(to_u64(v, 1000, 4'000'000'000));
         auto problem = sandbox::uid_base_problem(
             c.host.uid_base, sandbox::read_file("/proc/self/uid_map").value_or(""));
         if (!problem.empty()) throw std::invalid_argument(problem);
       }},
      {"--accept-isolation", "SANDGATE_ACCEPT_ISOLATION", "full",
       "'no-cgroups' accepts sandboxes without memory/CPU/process limits or metered spend where "
       "cgroups are not writable; otherwise execute is refused there.",
       [](Config& c, const std::string& v) {
         if (v == "no-cgroups")
           c.host.accept_no_cgroups = true;
         else if (v != "full")
           throw std::invalid_argument("expected full or no-cgroups");
       }},
      {"--replica-name", "SANDGATE_REPLICA_NAME", "",
       "This replica's name (a DNS label, e.g. the StatefulSet pod name). Session ids then name "
       "their replica, and requests for another replica's session are forwarded to it. Also "
       "recorded in the saved registry (`--state-dir`): a gateway with another name ignores that "
       "file, with a warning.",
       [](Config& c, const std::string& v) { c.registry.replica_name = v; }},
      {"--peers", "SANDGATE_PEERS", "",
       "Comma-separated NAME=http://HOST:PORT of the other replicas.",
       [](Config& c, const std::string& v) {
         c.peers.by_name.clear();
         for (const auto& item : to_list(v)) {
           auto eq = item.find('=');
           if (eq == std::string::npos || item.compare(eq + 1, 7, "http://") != 0)
             throw std::invalid_argument("expected NAME=http://HOST:PORT");
           c.peers.by_name.emplace_back(item.substr(0, eq), item.substr(eq + 1));
         }
       }},
      {"--peer-url-template", "SANDGATE_PEER_URL_TEMPLATE", "",
       "URL of a replica by name, '{replica}' replaced (e.g. "
       "http://{replica}.sandgate-peers:8080); used for names --peers does not list. The host "
       "must be '{replica}.' (maybe after a fixed prefix) and a fixed DNS suffix, so a session id "
       "can only name a host under that suffix.",
       [](Config& c, const std::string& v) {
         if (auto problem = peer_url_template_problem(v); !problem.empty())
           throw std::invalid_argument(problem);
         c.peers.url_template = v;
       }},
      {"--peer-secret-file", "SANDGATE_PEER_SECRET_FILE", "",
       "File holding a secret every replica of the deployment shares (at least 32 characters, "
       "e.g. `openssl rand -hex 32`). A replica sends it with each request it forwards; a "
       "connection that presents it counts against no address's --max-connections-per-address, "
       "so one client's long calls through a replica cannot make another refuse that replica's "
       "forwards. Unset: forwards count like any client's connections.",
       [](Config& c, const std::string& v) {
         auto text = sandbox::read_file(v);
         if (!text) throw std::invalid_argument("cannot read " + v);
         while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back())))
           text->pop_back();
         if (text->size() < kMinPeerSecret || text->find_first_of("\r\n") != std::string::npos)
           throw std::invalid_argument("the peer secret must be one line of at least " +
                                       std::to_string(kMinPeerSecret) + " characters");
         c.peers.secret = std::move(*text);
       }},
      {"--threads", "SANDGATE_THREADS", "cores", "I/O threads.",
       [](Config& c, const std::string& v) {
         c.threads = static_cast<unsigned>(to_u64(v, 1, 256));
       }},
      {"--shutdown-grace", "SANDGATE_SHUTDOWN_GRACE", "10",
       "Seconds in-flight requests get to finish on SIGTERM/SIGINT.",
       [](Config& c, const std::string& v) {
         c.shutdown_grace = std::chrono::seconds(to_u64(v, 0, 3600));
       }},
      {"--log-level", "SANDGATE_LOG_LEVEL", "info",
       "debug, info, warn or error. Logs are JSON lines of metadata only.",
       [](Config& c, const std::string& v) {
         if (v != "debug" && v != "info" && v != "warn" && v != "error")
           throw std::invalid_argument("expected debug, info, warn or error");
         c.log_level = v;
       }},
      {"--check-isolation", nullptr, "",
       "Print which isolation mechanisms this host offers and which will be used, then exit (1 "
       "when execute would be refused).",
       [](Config& c, const std::string& v) { c.check_isolation = to_bool(v); }, true},
  };
  // The OAuth rows right after the other credentials' (--token-file, --no-auth).
  auto oauth = oauth_options();
  auto after = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--no-auth";
  });
  table.insert(after + 1, oauth.begin(), oauth.end());
  // The egress rows after the prices, the last of which is theirs.
  auto egress = egress_options();
  auto prices = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--price-gib-hour";
  });
  table.insert(prices + 1, egress.begin(), egress.end());
  return table;
}

const std::vector<Option>& options() {
  static const std::vector<Option> table = option_rows();
  return table;
}

std::string usage() {
  std::ostringstream out;
  out << "Usage: sandgate [options]\n\n"
         "A Streamable HTTP MCP gateway whose `execute` tool runs code in a per-session sandbox.\n"
         "Each option can also be set by its environment variable; flags win.\n"
         "SANDGATE_TOKEN (environment only) sets a single token for tenant \"default\".\n\n";
  for (const auto& o : options()) {
    out << "  " << o.flag << (o.is_switch ? "" : " VALUE");
    if (o.env) out << "   [" << o.env << "]";
    out << "\n      " << o.help;
    if (o.fallback && *o.fallback) out << " Default: " << o.fallback << ".";
    out << "\n";
  }
  out << "  --help, --version\n";
  return out.str();
}

// Settings that follow from others and from where the gateway runs, for serving and for
// --check-isolation alike.
void derive(Config& c) {
  if (!c.uid_base_set)
    c.host.uid_base = sandbox::automatic_uid_base(
        c.host.max_sandboxes, sandbox::read_file("/proc/self/uid_map").value_or(""),
        sandbox::read_file("/proc/self/gid_map").value_or(""));
}

std::string validate(Config& c) {
  if (!c.http.tls_cert.empty() != !c.http.tls_key.empty())
    return "--tls-cert and --tls-key go together";
  if (c.tools.timeout_default_s > c.tools.timeout_max_s)
    return "--timeout-default exceeds --timeout-max";
  if (!c.registry.replica_name.empty() && !session::is_replica_name(c.registry.replica_name))
    return "--replica-name must be a DNS label (1-63 lower-case letters, digits and '-', no '-' "
           "at either end) that is not a number (all digits, or 0x and hex digits)";
  if (c.auth.no_auth) {
    if (!is_loopback_host(c.http.listen_host))
      return "--no-auth is only allowed when listening on loopback (127.0.0.1, ::1 or localhost)";
  } else if (c.auth.token_file.empty() && c.auth.token.empty() && !c.auth.oauth.enabled()) {
    return "no token: set SANDGATE_TOKEN, --token-file or --oauth-issuer (or --no-auth on "
           "loopback)";
  }
  if (auto problem = oauth_problem(c); !problem.empty()) return problem;
  return "";
}

}  // namespace

// Why a --peer-url-template is refused ("" when it is fine). The replica name in it comes from
// the session id a client sends: the host must be `[prefix]{replica}.<suffix>` with a fixed DNS
// suffix whose last label is not numeric, so whatever the name, the host is a DNS name under
// that suffix and never an IP address ("http://{replica}:8080" with a session id
// "2130706433.<hex>" made the gateway connect to 127.0.0.1 with the client's token).
std::string peer_url_template_problem(std::string_view url) {
  const std::string expected =
      "expected http://{replica}.DNS-SUFFIX[:PORT][/PATH], e.g. "
      "http://{replica}.sandgate-peers:8080";
  constexpr std::string_view scheme = "http://", marker = "{replica}";
  if (url.substr(0, scheme.size()) != scheme) return expected;
  auto first = url.find(marker);
  if (first == std::string_view::npos || url.find(marker, first + 1) != std::string_view::npos)
    return expected + " ('{replica}' exactly once)";
  std::string_view authority = url.substr(scheme.size());
  authority = authority.substr(0, authority.find('/'));
  std::string_view host = authority.substr(0, authority.rfind(':'));
  if (host.size() != authority.size()) {
    std::string_view port = authority.substr(host.size() + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return expected + " (the port must be a number)";
  }
  auto at = host.find(marker);
  if (at == std::string_view::npos) return expected + " ('{replica}' must be in the host)";
  if (!std::all_of(host.begin(), host.begin() + at, is_label_char))
    return expected + " (only letters, digits and '-' may precede '{replica}' in its label)";
  std::string_view suffix = host.substr(at + marker.size());
  if (suffix.size() < 2 || suffix.front() != '.')
    return expected + " (a fixed DNS suffix must follow '{replica}.')";
  suffix.remove_prefix(1);
  std::string_view last;
  for (std::size_t pos = 0; pos <= suffix.size();) {
    auto dot = suffix.find('.', pos);
    auto label =
        suffix.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (label.empty() || label.size() > 63 ||
        !std::all_of(label.begin(), label.end(), is_label_char))
      return expected + " (the suffix must be DNS labels: lower-case letters, digits, '-')";
    last = label;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return expected + " (the suffix's last label must not be a number)";
  return "";
}

HttpConfig effective_http_config(const Config& config) {
  HttpConfig http = config.http;
  http.peer_secret = config.peers.secret;
  http.body_limit_bytes = effective_body_limit(config);
  return http;
}

ToolLimits effective_tool_limits(const Config& config) {
  ToolLimits tools = config.tools;
  tools.output_max_bytes = config.host.limits.output_bytes;
  tools.idle_timeout = config.registry.idle_timeout;
  return tools;
}

McpEndpointConfig mcp_endpoint_config(const Config& config) {
  McpEndpointConfig mcp;
  mcp.origins = config.origins;
  mcp.listening_on_loopback = is_loopback_host(config.http.listen_host);
  mcp.peers = config.peers;
  mcp.replica_name = config.registry.replica_name;
  mcp.owners_keep_sessions = !config.state.dir.empty();
  // A forwarded call may take as long as a call may run, plus room for its sandbox's start.
  mcp.forward_wait = std::chrono::seconds(config.tools.timeout_max_s) + std::chrono::seconds(120);
  mcp.tasks = config.tasks;
  return mcp;
}

std::uint64_t effective_body_limit(const Config& config) {
  // Files arrive in base64: 4 bytes for every 3.
  return config.http.body_limit_bytes ? config.http.body_limit_bytes
                                      : 2 * MiB + config.tools.stdin_max_bytes +
                                            (config.tools.files_in_max_bytes + 2) / 3 * 4;
}

ParseOutcome parse_config(int argc, char** argv, char** envp) {
  Config c;
  auto fail = [](std::string text) {
    return ParseOutcome{std::nullopt, std::move(text) + "\n", 2};
  };
  // Environment first, flags after: flags win.
  for (char** e = envp; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq)), value(kv.substr(eq + 1));
    if (name == "SANDGATE_TOKEN") {
      c.auth.token = value;
      continue;
    }
    for (const auto& o : options()) {
      if (!o.env || name != o.env) continue;
      try {
        o.set(c, value);
      } catch (const std::exception& ex) {
        return fail(std::string(o.env) + ": " + ex.what());
      }
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return {std::nullopt, usage(), 0};
    if (arg == "--version") return {std::nullopt, "sandgate " SANDGATE_VERSION "\n", 0};
    if (arg == "--help-markdown") return {std::nullopt, options_markdown(), 0};
    std::string name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const Option* match = nullptr;
    for (const auto& o : options())
      if (name == o.flag) match = &o;
    if (!match) return fail("unknown option " + name + " (see --help)");
    if (!match->is_switch && !inline_value) {
      if (i + 1 >= argc) return fail(name + " needs a value");
      value = argv[++i];
    }
    if (match->is_switch && !inline_value) value = "true";
    try {
      match->set(c, value);
    } catch (const std::exception& ex) {
      return fail(name + ": " + ex.what());
    }
  }
  derive(c);
  if (c.check_isolation) return {c, "", 0};
  if (auto problem = validate(c); !problem.empty()) return fail("sandgate: " + problem);
  return {c, "", 0};
}

std::vector<std::string> options_whose_shown_default_differs() {
  std::vector<std::string> differ;
  for (const auto& o : options()) {
    if (!o.set || !o.fallback || !*o.fallback) continue;
    Config c;
    try {
      o.set(c, o.fallback);
    } catch (const std::exception&) {
      continue;  // a default described in words ("half of --max-concurrent-calls")
    }
    if (!(c == Config{})) differ.push_back(o.flag);
  }
  return differ;
}

std::string options_markdown() {
  std::ostringstream out;
  out << "| flag | environment | default | meaning |\n|---|---|---|---|\n";
  for (const auto& o : options()) {
    out << "| `" << o.flag << "` | " << (o.env ? std::string("`") + o.env + "`" : "") << " | "
        << o.fallback << " | " << o.help << " |\n";
  }
  out << "| | `SANDGATE_TOKEN` | | A single token for tenant `default` (environment only). |\n";
  return out.str();
}

}  // namespace sandgate::server
