#include "host.hpp"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <sstream>

#include "file_util.hpp"
#include "sandbox/inside/landlock.hpp"
#include "setup_report.hpp"
#include "spawn.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kProgramId = 1000;  // the programs' uid and gid inside every sandbox

bool user_namespaces_available() {
  auto max = read_file("/proc/sys/user/max_user_namespaces");
  return max && std::atoi(max->c_str()) > 0;
}

// Whether ids [first, first + count) exist in our user namespace (/proc/self/uid_map: "inside
// outside count" per line). A user-namespaced pod maps only 65536 of them.
bool ids_mapped_in(std::uint64_t first, std::uint64_t count, const std::string& id_map) {
  std::istringstream map(id_map);
  std::uint64_t inside = 0, outside = 0, length = 0, covered_to = first;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  while (map >> inside >> outside >> length) ranges.emplace_back(inside, inside + length);
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [from, to] : ranges)
    if (from <= covered_to && to > covered_to) covered_to = to;
  return covered_to >= first + count;
}

bool ids_mapped(std::uint64_t first, std::uint64_t count, const char* map_file) {
  return ids_mapped_in(first, count, read_file(map_file).value_or(""));
}

bool initial_user_namespace(const std::string& uid_map) {
  std::istringstream in(uid_map);
  std::uint64_t inside = 1, outside = 1, length = 0;
  std::string more;
  return in >> inside >> outside >> length && inside == 0 && outside == 0 &&
         length == 4294967295ull && !(in >> more);
}

IsolationReport assess(const HostConfig& config) {
  IsolationReport r;
  r.user_namespaces = user_namespaces_available();
  r.privileged = ::geteuid() == 0;
  r.seccomp = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  r.landlock_abi = landlock_abi_version();
  // A host that may run no sandbox (a harness around the HTTP layer) leaves the cgroups alone:
  // the probe creates directories that only an orderly exit removes.
  if (config.max_sandboxes == 0) {
    r.mode = "refused";
    r.problem = "this gateway runs no sandboxes (max_sandboxes is 0)";
    return r;
  }
  r.cgroups = CgroupLayout::probe(config.gateway_memory_reserve, config.memory_limit);
  if (!r.user_namespaces) {
    r.mode = "refused";
    r.problem = "user namespaces are not available (/proc/sys/user/max_user_namespaces is 0)";
  } else if (!r.seccomp) {
    r.mode = "refused";
    r.problem = "seccomp is not available in this kernel";
  } else if (auto problem =
                 uid_base_problem(config.uid_base, read_file("/proc/self/uid_map").value_or(""));
             r.privileged && !problem.empty()) {
    r.mode = "refused";
    r.problem = problem;
  } else if (r.privileged &&
             !(ids_mapped(config.uid_base, 2ull * config.max_sandboxes, "/proc/self/uid_map") &&
               ids_mapped(config.uid_base, 2ull * config.max_sandboxes, "/proc/self/gid_map"))) {
    r.mode = "refused";
    r.problem = "the sandboxes' host ids [" + std::to_string(config.uid_base) + ", " +
                std::to_string(config.uid_base + 2ull * config.max_sandboxes) +
                ") are not all mapped in the gateway's user namespace (/proc/self/uid_map): set "
                "--sandbox-uid-base and --max-sandboxes to fit (a user-namespaced pod has 65536 "
                "ids)";
  } else if (r.cgroups.complete()) {
    r.mode = "full";
  } else if (config.accept_no_cgroups) {
    r.mode = "no-cgroups";
  } else {
    r.mode = "refused";
    r.problem = "no writable cgroup for every controller (" + r.cgroups.describe() + ")" +
                (r.cgroups.problem.empty() ? "" : ": " + r.cgroups.problem) +
                "; or run with --accept-isolation=no-cgroups to accept sandboxes without "
                "memory/CPU/process limits and spend metering";
  }
  return r;
}

}  // namespace

std::uint32_t automatic_uid_base(std::uint32_t max_sandboxes, const std::string& uid_map,
                                 const std::string& gid_map) {
  constexpr std::uint32_t kOnHost = 1'000'000;
  if (initial_user_namespace(uid_map)) return kOnHost;
  std::uint64_t count = 2ull * max_sandboxes;
  // Candidates: 10000 (clear of the ids a container image's own accounts use), then where each
  // mapped range starts, then 1000.
  std::vector<std::uint64_t> candidates = {10'000};
  std::istringstream map(uid_map);
  std::uint64_t inside = 0, outside = 0, length = 0;
  while (map >> inside >> outside >> length)
    if (inside >= 10'000) candidates.push_back(inside);
  std::sort(candidates.begin() + 1, candidates.end());
  candidates.push_back(1'000);
  for (std::uint64_t base : candidates)
    if (base + count <= 4'000'000'000ull && ids_mapped_in(base, count, uid_map) &&
        ids_mapped_in(base, count, gid_map))
      return static_cast<std::uint32_t>(base);
  return kOnHost;  // nothing fits: the isolation check says which ids are missing
}

std::string uid_base_problem(std::uint32_t base, const std::string& uid_map) {
  if (base >= kMinHostUidBase || !initial_user_namespace(uid_map)) return "";
  return "the sandboxes' first host uid " + std::to_string(base) + " is below " +
         std::to_string(kMinHostUidBase) +
         ", among real accounts' ids: on a host (not in a user namespace) set "
         "--sandbox-uid-base to " +
         std::to_string(kMinHostUidBase) + " or more";
}

std::string IsolationReport::to_text() const {
  std::ostringstream out;
  out << "user namespaces: " << (user_namespaces ? "yes" : "no") << "\n"
      << "distinct host uid per sandbox: "
      << (privileged ? "yes (running as root)" : "no (unprivileged: one shared uid)") << "\n"
      << "seccomp: " << (seccomp ? "yes" : "no") << "\n"
      << "landlock: "
      << (landlock_abi > 0
              ? "ABI " + std::to_string(landlock_abi) +
                    " (used: writes only in /work, /tmp, /dev/shm; exec only from /usr, /work)"
              : std::string("no"))
      << "\n"
      << "cgroups: " << cgroups.describe() << "\n";
  if (!cgroups.notes.empty()) out << "cgroup setup: " << cgroups.notes << "\n";
  if (cgroups.memory_budget > 0)
    out << "sandbox memory budget: " << (cgroups.memory_budget >> 20) << " MiB of the "
        << (cgroups.memory_limit_above >> 20) << " MiB limit above the gateway\n";
  out << "mode: " << mode << "\n";
  if (!problem.empty()) out << "problem: " << problem << "\n";
  return out.str();
}

// Host uid pairs handed out to sandboxes; shared with each sandbox's release callback.
struct SandboxHost::Slots {
  std::mutex mutex;
  std::vector<bool> used;
  std::optional<std::uint32_t> take() {
    std::lock_guard lock(mutex);
    for (std::uint32_t i = 0; i < used.size(); ++i) {
      if (!used[i]) {
        used[i] = true;
        return i;
      }
    }
    return std::nullopt;
  }
  void give_back(std::uint32_t i) {
    std::lock_guard lock(mutex);
    used[i] = false;
  }
};

SandboxHost::SandboxHost(asio::any_io_executor executor, HostConfig config)
    : executor_(executor),
      config_(config),
      report_(assess(config)),
      slots_(std::make_shared<Slots>()),
      meter_timer_(executor) {
  slots_->used.assign(config_.max_sandboxes, false);
  swept_ = sweep_orphan_cgroups(report_.cgroups);
  asio::co_spawn(executor_, meter_loop(), asio::detached);
}

SandboxHost::~SandboxHost() {
  shutdown();
  // Last: every sandbox has been ended, so the instance cgroups are empty.
  report_.cgroups.release();
}

std::vector<std::shared_ptr<Sandbox>> SandboxHost::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Sandbox>> out;
  for (const auto& w : live_)
    if (auto s = w.lock()) out.push_back(std::move(s));
  return out;
}

std::size_t SandboxHost::live_count() const {
  std::size_t n = 0;
  for (const auto& s : snapshot()) n += s->ended() ? 0 : 1;
  return n;
}

const char* pressure_name(Pressure pressure) {
  return pressure == Pressure::memory_budget ? "memory_budget" : "sandbox_cap";
}

void SandboxHost::set_make_room(MakeRoom make_room) {
  std::lock_guard lock(mutex_);
  make_room_ = std::move(make_room);
}

void SandboxHost::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  asio::post(meter_timer_.get_executor(), [this] { meter_timer_.cancel(); });
  for (const auto& s : snapshot()) s->end(EndReason::closed, "the gateway is shutting down");
}

asio::awaitable<void> SandboxHost::meter_loop() {
  for (;;) {
    meter_timer_.expires_after(config_.meter_interval);
    co_await meter_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
      std::erase_if(live_, [](const auto& w) {
        auto s = w.lock();
        return !s || s->ended();
      });
    }
    for (const auto& s : snapshot()) s->check();
  }
}

bool SandboxHost::memory_nearly_used() const {
  // Sandboxes share the memory budget: at 90 % a new one would only push the kernel into
  // killing programs of sandboxes already running.
  const auto& layout = report_.cgroups;
  return layout.memory_budget > 0 && layout.sandbox_memory_bytes() > layout.memory_budget / 10 * 9;
}

asio::awaitable<bool> SandboxHost::make_room(Pressure pressure) {
  MakeRoom hook;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) co_return false;
    hook = make_room_;
    if (hook) ++making_room_;
  }
  if (!hook) co_return false;
  struct Done {
    SandboxHost& host;
    ~Done() {
      std::lock_guard lock(host.mutex_);
      --host.making_room_;
    }
  } done{*this};
  bool freed = co_await hook(pressure);
  co_return freed;
}

asio::awaitable<std::optional<std::uint32_t>> SandboxHost::take_slot() {
  auto slot = slots_->take();
  auto give_up_at = std::chrono::steady_clock::now() + kMakeRoomPatience;
  while (!slot && std::chrono::steady_clock::now() < give_up_at) {
    bool freed = co_await make_room(Pressure::sandbox_cap);
    slot = slots_->take();
    if (slot || freed) continue;  // freed but taken by another create: ask again
    // Nothing idle to free: worth waiting only while other creates are freeing sandboxes
    // (theirs may be the last idle ones, and a slot of theirs may come back unused).
    {
      std::lock_guard lock(mutex_);
      if (making_room_ == 0 || stopped_) break;
    }
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    slot = slots_->take();
  }
  co_return slot;
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::create(Limits limits) {
  if (!report_.usable())
    throw SandboxError("sandboxes are disabled on this host: " + report_.problem);
  // At the cap, an idle sandbox makes room (its slot comes back when it ends). Bounded: another
  // create may take the freed slot first, and every other sandbox may be in use.
  auto slot = co_await take_slot();
  if (!slot)
    throw SandboxError("the gateway runs its maximum number of sandboxes; try again later");
  auto release = [slots = slots_, i = *slot] { slots->give_back(i); };
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      release();
      throw SandboxError("the gateway is shutting down");
    }
    id = "sb" + std::to_string(next_id_++);
  }
  // Near the memory budget, idle sandboxes make room the same way; refused only when they
  // cannot (every other sandbox in use, or what they held was not enough).
  for (int attempt = 0; memory_nearly_used() && attempt < kMakeRoomAttempts; ++attempt) {
    bool freed = co_await make_room(Pressure::memory_budget);
    if (!freed) break;
  }
  if (memory_nearly_used()) {
    release();
    throw SandboxError(
        "the gateway's sandboxes are using their whole shared memory budget; try again when other "
        "sessions have ended");
  }

  SpawnedSupervisor spawned;
  CgroupSet cgroups;
  try {
    cgroups = CgroupSet(report_.cgroups, id, limits);
    SpawnRequest request;
    request.ids.privileged = report_.privileged;
    request.ids.host_root_id = config_.uid_base + 2 * *slot;
    request.ids.host_program_id = config_.uid_base + 2 * *slot + 1;
    request.ids.program_id = kProgramId;
    request.work_bytes = limits.work_bytes;
    request.tmp_bytes = limits.tmp_bytes;
    // Without distinct host uids the per-uid count would include the gateway's own processes.
    request.max_processes = report_.privileged ? limits.max_processes : 0;
    request.before_release = [&cgroups](pid_t pid) { cgroups.attach(pid); };
    spawned = spawn_supervisor(request);
  } catch (const std::exception& e) {
    cgroups.remove();
    release();
    throw SandboxError(std::string("could not create the sandbox: ") + e.what());
  }

  std::string failure = co_await await_setup_report(spawned, config_.start_timeout);

  Sandbox::Parts parts{
      id,     limits, config_.prices, spawned.pid, std::move(spawned.control), std::move(cgroups),
      release};
  auto sandbox = std::make_shared<Sandbox>(std::move(parts));
  if (!failure.empty()) {
    sandbox->end(EndReason::failed, failure);
    throw SandboxError("could not create the sandbox: " + failure);
  }
  {
    std::lock_guard lock(mutex_);
    // shutdown() ends the live sandboxes it sees; one finished after it must not outlive it.
    if (!stopped_) {
      live_.push_back(sandbox);
      co_return sandbox;
    }
  }
  sandbox->end(EndReason::closed, "the gateway is shutting down");
  throw SandboxError("the gateway is shutting down");
}

asio::awaitable<std::string> SandboxHost::self_test() {
  try {
    // The probe checks that sandboxes work at all; the spend cap and lifetime are the sessions'
    // budget. A tiny cap on a slow host (software emulation) once kept a gateway from ever
    // becoming ready: the probe's own start-up crossed it.
    Limits probe = config_.limits;
    probe.spend_cap_usd = std::max(probe.spend_cap_usd, 0.01);
    probe.lifetime = std::max(probe.lifetime, std::chrono::seconds(60));
    auto sandbox = co_await create(probe);
    RunRequest request;
    request.language = Language::bash;
    request.code = "true";
    request.timeout = std::chrono::seconds(10);
    auto result = co_await sandbox->run(request);
    sandbox->end(EndReason::closed);
    if (result.outcome != RunOutcome::completed || result.exit_code != 0)
      co_return "a probe program did not run: " + result.failure + result.stderr_text;
    co_return "";
  } catch (const std::exception& e) {
    co_return e.what();
  }
}

}  // namespace sandgate::sandbox
