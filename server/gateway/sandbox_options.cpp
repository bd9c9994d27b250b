// The options of sandboxes: each one's limits, spend and prices, how many live at once and in
// what memory, the ready pool, their uids and the isolation accepted.
#include <stdexcept>

#include "sandbox/file_util.hpp"
#include "sandbox/ready_pool.hpp"
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

constexpr std::uint64_t MiB = 1 << 20;

}  // namespace

std::vector<Option> sandbox_options() {
  return {
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
  };
}

}  // namespace sandgate::server::options_detail
