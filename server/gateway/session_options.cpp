// The options of sessions and sandbox handles: the caps on them, idle expiry, hibernation and
// the state directory where hibernated sandboxes and the saved registry are kept.
#include <stdexcept>

#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

constexpr std::uint64_t MiB = 1 << 20;

}  // namespace

std::vector<Option> session_options() {
  return {
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
      {"--state-max-mb", "SANDGATE_STATE_MAX_MB", "4096",
       "All hibernated archives together, MiB; beyond, the oldest archive of the tenant "
       "holding the most is dropped, never one of a tenant holding less (an archive that would "
       "need that is not written: its sandbox stays live). A dropped archive's session resumes "
       "with an empty /work and is told so.",
       [](Config& c, const std::string& v) { c.state.max_bytes = to_u64(v, 1, 1 << 30) * MiB; }},
  };
}

}  // namespace sandgate::server::options_detail
