// A session's state and its ending (whole, or only its sandbox). Its calls are in
// session_call.cpp, its hibernation and resumption in session_hibernation.cpp.
#include "session.hpp"

#include "session_id.hpp"

namespace sandgate::session {

Session::Session(std::string id, std::string tenant, sandbox::Limits limits,
                 sandbox::SandboxHost& host, CallSlots& gateway_slots, TenantShare share,
                 std::size_t queue_depth, SessionKind kind, StateStore* store,
                 const RestoredSession* restored, TenantSandboxes* tenant_sandboxes)
    : id_(std::move(id)),
      tenant_(std::move(tenant)),
      kind_(kind),
      limits_(limits),
      created_(restored ? restored->created : Clock::now()),
      last_used_((restored ? restored->last_used : created_).time_since_epoch().count()),
      host_(host),
      gateway_slots_(gateway_slots),
      share_(share),
      tenant_sandboxes_(tenant_sandboxes),
      call_order_(1, queue_depth),
      sandbox_use_(1, 2),
      account_(limits_, created_),
      store_(store) {
  if (!restored) return;
  // Its spend and lifetime go on where they were; its sandbox comes back on the next call.
  account_.settle(restored->spent_usd);
  hibernated_ = restored->had_sandbox && store_ != nullptr;
  environment_ = restored->environment;
  lost_files_why_ = restored->lost_files_why;
}

Session::~Session() {
  end();
}

Session::Clock::time_point Session::last_used() const {
  return Clock::time_point(Clock::duration(last_used_.load()));
}

void Session::touch() {
  last_used_ = Clock::now().time_since_epoch().count();
}

bool Session::ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

bool Session::busy() const {
  std::lock_guard lock(mutex_);
  return !calls_.empty();
}

std::size_t Session::calls_in_flight() const {
  std::lock_guard lock(mutex_);
  return calls_.size();
}

bool Session::using_sandbox() const {
  return sandbox_use_.available() == 0;
}

std::uint64_t Session::sandbox_memory_bytes() const {
  std::lock_guard lock(mutex_);
  return sandbox_ && !sandbox_->ended() ? sandbox_->memory_bytes() : 0;
}

bool Session::has_live_sandbox() const {
  std::lock_guard lock(mutex_);
  return sandbox_ && !sandbox_->ended();
}

double Session::spend_usd() const {
  std::lock_guard lock(mutex_);
  return account_.settled_usd() + (sandbox_ ? sandbox_->spend_usd() : 0.0);
}

std::string Session::owner_text() const {
  // A handle is a sandbox to the model: it never sees a session behind it.
  return kind_ == SessionKind::handle ? "this sandbox" : "this session";
}

void Session::settle_locked(const std::shared_ptr<sandbox::Sandbox>& ended) {
  if (!ended) return;
  account_.settle(ended->spend_usd());
  if (!usage_) return;
  auto now = ledger::Clock::now();
  auto it = usage_logs_.find(ended.get());
  if (it == usage_logs_.end()) {
    // Made before usage was recorded for this session: its use from here is all there is.
    it = usage_logs_
             .emplace(ended.get(),
                      SandboxUsageLog(usage_owner(), usage_->instance + ":" + ended->id(), now))
             .first;
  }
  usage_->sink->put(it->second.final_record(ended->usage(), now));
  usage_logs_.erase(it);
}

void Session::report_usage(std::shared_ptr<const UsageReporting> reporting) {
  std::lock_guard lock(mutex_);
  usage_ = reporting && reporting->sink ? std::move(reporting) : nullptr;
}

UsageOwner Session::usage_owner() const {
  return {tenant_, std::string(log_prefix(id_)),
          kind_ == SessionKind::handle ? "handle" : "session", usage_->replica};
}

void Session::start_usage_log(const sandbox::Sandbox& fresh) {
  std::lock_guard lock(mutex_);
  if (!usage_) return;
  usage_logs_.insert_or_assign(
      &fresh,
      SandboxUsageLog(usage_owner(), usage_->instance + ":" + fresh.id(), ledger::Clock::now()));
}

void Session::count_call(const std::shared_ptr<sandbox::Sandbox>& ran_in,
                         const sandbox::RunResult& run) {
  std::lock_guard lock(mutex_);
  if (auto it = usage_logs_.find(ran_in.get()); it != usage_logs_.end())
    it->second.count_call(run.stdout_text.size() + run.stderr_text.size());
}

std::vector<ledger::UsageRecord> Session::usage_records(ledger::Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (!sandbox_) return {};
  auto it = usage_logs_.find(sandbox_.get());
  if (it == usage_logs_.end()) return {};
  auto total = sandbox_->usage();
  if (!total.ended_at) {
    usage_collected_ended_ = false;
    return it->second.records(total, now);
  }
  // Ended, not yet let go of (that waits for the session's next call): its totals are final.
  if (std::exchange(usage_collected_ended_, true)) return {};
  return {it->second.final_record(total, now)};
}

void Session::end_keeping_archive(std::string why) {
  {
    std::lock_guard lock(mutex_);
    keep_archive_ = true;
  }
  end(std::move(why));
}

Session::SavedState Session::saved_state() const {
  std::lock_guard lock(mutex_);
  SavedState out;
  out.spend_usd = account_.settled_usd() + (sandbox_ ? sandbox_->spend_usd() : 0.0);
  out.live = sandbox_ && !sandbox_->ended();
  out.hibernated = hibernated_;
  out.environment = environment_;
  return out;
}

std::string Session::environment() const {
  std::lock_guard lock(mutex_);
  return environment_;
}

bool Session::use_environment(std::string name, std::string layer_dir) {
  std::lock_guard lock(mutex_);
  if (!environment_.empty() && environment_ != name) return false;
  environment_ = std::move(name);
  environment_layer_ = std::move(layer_dir);
  return true;
}

void Session::end(std::string why) {
  std::shared_ptr<sandbox::Sandbox> sandbox;
  bool first = false;
  bool keep_archive = false;
  {
    std::lock_guard lock(mutex_);
    if (!ended_) end_why_ = why;
    first = !ended_;
    keep_archive = keep_archive_;
    ended_ = true;
    sandbox = std::move(sandbox_);
    hibernated_ = false;
  }
  // After ended_ is set: a hibernation finishing now sees it and removes its own archive. Only
  // the first end: a session kept alive past the gateway's shutdown (by a coroutine frame) may
  // be destroyed after the store.
  if (first && store_ && !keep_archive) store_->remove(id_);
  // A running call sees its sandbox end and answers with a tool error saying so; calls still
  // waiting their turn find the session ended.
  if (!sandbox) return;
  sandbox->end(sandbox::EndReason::closed, std::move(why));
  std::lock_guard lock(mutex_);
  settle_locked(sandbox);
}

bool Session::end_sandbox(std::string why) {
  std::shared_ptr<sandbox::Sandbox> sandbox;
  bool was_hibernated = false;
  {
    std::lock_guard lock(mutex_);
    sandbox = std::move(sandbox_);
    was_hibernated = std::exchange(hibernated_, false);
  }
  // A hibernated sandbox ends too: its files are not brought back by the next call.
  if (was_hibernated && store_) store_->remove(id_);
  if (!sandbox) return was_hibernated;
  bool was_live = !sandbox->ended();
  sandbox->end(sandbox::EndReason::closed, std::move(why));
  std::lock_guard lock(mutex_);
  settle_locked(sandbox);
  return was_live || was_hibernated;
}

bool Session::end_sandbox_for_budget(std::string why) {
  std::shared_ptr<sandbox::Sandbox> sandbox;
  {
    std::lock_guard lock(mutex_);
    if (!sandbox_ || sandbox_->ended()) return false;
    sandbox = sandbox_;
  }
  // Ended but not let go of, as at its own spend cap: a call running there finds why in its
  // result ("Sandbox ended: <why>"), and the session's next call settles it (sandbox_need) and
  // asks the budget again.
  sandbox->end(sandbox::EndReason::closed, std::move(why));
  return true;
}

bool Session::end_sandbox_if_idle(std::string why) {
  // Held while the sandbox is let go of: a call that gets its slot meanwhile waits, then finds
  // no sandbox and makes a fresh one.
  auto use = sandbox_use_.try_acquire();
  if (!use) return false;
  std::shared_ptr<sandbox::Sandbox> sandbox;
  {
    std::lock_guard lock(mutex_);
    // A call waiting for its slot keeps its sandbox here: ending it would lose its /work
    // unannounced (hibernating it is fine: the call resumes it, and is told).
    if (!calls_.empty() || !sandbox_ || sandbox_->ended()) return false;
    sandbox = std::move(sandbox_);
  }
  sandbox->end(sandbox::EndReason::closed, std::move(why));
  std::lock_guard lock(mutex_);
  settle_locked(sandbox);
  return true;
}

void Session::renew_terms(tenant::Terms terms) {
  std::lock_guard lock(mutex_);
  terms_ = std::move(terms);
}

}  // namespace sandgate::session
