// Fuzz target: the saved session registry a restarted gateway reads back from its state
// directory. Any input is either refused whole with a problem, or yields entries that each pass
// the checks (ids of their kind naming the file's replica, sane tenants, times and spend) and
// that read back identically once written again.
#include <cmath>
#include <cstdlib>

#include "session/saved_sessions.hpp"
#include "session/session_id.hpp"

using namespace sandgate::session;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_saved_registry(text);
  if (!parsed.registry) {
    if (parsed.problem.empty()) std::abort();
    return 0;
  }
  for (const auto& s : parsed.registry->sessions) {
    bool shaped =
        s.kind == SessionKind::handle ? looks_like_handle(s.id) : looks_like_session_id(s.id);
    if (!shaped || owner_replica(s.id) != parsed.registry->replica) std::abort();
    if (s.tenant.empty() || !std::isfinite(s.spend_usd) || s.spend_usd < 0) std::abort();
    if (s.created_unix_ms < 0 || s.last_used_unix_ms < 0) std::abort();
  }
  auto again = parse_saved_registry(serialize(*parsed.registry));
  if (!again.registry || again.skipped != 0 || !(*again.registry == *parsed.registry)) std::abort();
  return 0;
}
