// A session's calls: in turn, within the gateway's slots, in the session's sandbox (made or
// resumed when needed), with their files, and told in the session's terms.
#include "session.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

void Session::account_for_locked(sandbox::RunResult& run,
                                 const std::shared_ptr<sandbox::Sandbox>& ran_in) {
  // A sandbox still the session's is not settled yet; one let go of is (exactly once).
  run.spend_usd = account_.settled_usd() + (sandbox_ == ran_in ? ran_in->spend_usd() : 0.0);
  if (run.end_reason == sandbox::EndReason::spend_cap) {
    // The sandbox's cap was what remained of the session's: the session's is spent.
    run.failure = owner_text() + " reached its " + usd_text(account_.cap_usd()) +
                  " spend cap (spent " + usd_text(run.spend_usd) + ")";
  } else if (run.end_reason == sandbox::EndReason::lifetime) {
    run.failure = owner_text() + "'s lifetime of " + std::to_string(account_.lifetime().count()) +
                  " s is over";
  }
}

void Session::cancel(const std::string& call_key) {
  std::shared_ptr<sandbox::CallControl> control;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(call_key);
    if (it == calls_.end()) return;
    control = it->second;
  }
  control->cancel();
}

void Session::tell_ended_locked(ExecuteResult& out) const {
  out.status = ExecuteStatus::session_ended;
  out.message = end_why_;
}

bool Session::budget_allows(ExecuteResult& out) const {
  std::shared_ptr<const UsageReporting> usage;
  ledger::Budget budget;
  {
    std::lock_guard lock(mutex_);
    usage = usage_;
    if (terms_) budget = terms_->budget();
  }
  if (!usage || !usage->budgets) return true;
  std::optional<ledger::BudgetSpent> spent;
  try {
    // Outside the session's lock: the first ask of a tenant in a day reads the store, and
    // waits for a save under way.
    spent = usage->budgets->refusal(tenant_, budget, ledger::Clock::now());
  } catch (const ledger::LedgerError&) {
    // Fail closed: a budget that cannot be read is not known to have room.
    out.status = ExecuteStatus::sandbox_error;
    out.message = "the gateway cannot read this tenant's budget right now; try again shortly";
    return false;
  }
  if (!spent) return true;
  out.status = ExecuteStatus::budget_spent;
  out.message = ledger::budget_spent_text(*spent);
  return false;
}

Session::SandboxNeed Session::sandbox_need(ExecuteResult& out) {
  std::lock_guard lock(mutex_);
  if (ended_) {
    // A call that waited its turn while the session ended: no sandbox is made for it.
    tell_ended_locked(out);
    return {};
  }
  auto now = Clock::now();
  std::string closed = account_.closed_reason(now);
  // A live sandbox may outlive the session's lifetime by under a second (its own is whole
  // seconds): the session's is what counts.
  if (sandbox_ && !sandbox_->ended() && !closed.empty())
    sandbox_->end(sandbox::EndReason::lifetime, closed);
  if (sandbox_ && !sandbox_->ended()) return {sandbox_, std::nullopt};
  // Ended (cap, lifetime, failure, hibernation): its spend stays with the session, and the
  // next sandbox gets what remains of the session's cap and lifetime.
  settle_locked(sandbox_);
  sandbox_.reset();
  closed = account_.closed_reason(now);
  if (!closed.empty()) {
    out.status = ExecuteStatus::limit_reached;
    out.message = owner_text() + " can run no more code: " + closed;
    return {};
  }
  auto fresh = account_.remaining(limits_, now);
  fresh.layer_dir = environment_layer_;
  return {nullptr, fresh};
}

std::shared_ptr<sandbox::Sandbox> Session::adopt_fresh(std::shared_ptr<sandbox::Sandbox> fresh,
                                                       bool resumed, std::string refused,
                                                       ExecuteResult& out) {
  std::lock_guard lock(mutex_);
  if (resumed) hibernated_ = false;
  if (ended_) {
    // DELETE, expiry or shutdown arrived while the sandbox was being made: that explains more
    // than a sandbox refused because of it (shutdown).
    if (fresh) fresh->end(sandbox::EndReason::closed, end_why_);
    settle_locked(fresh);
    tell_ended_locked(out);
    return nullptr;
  }
  if (!fresh) {
    out.status = ExecuteStatus::sandbox_error;
    out.message = std::move(refused);
    return nullptr;
  }
  sandbox_ = fresh;
  return fresh;
}

asio::awaitable<std::shared_ptr<sandbox::Sandbox>> Session::sandbox_for_call(ExecuteResult& out) {
  if (!budget_allows(out)) co_return nullptr;
  SandboxNeed need = sandbox_need(out);
  // No fresh one is needed: the live sandbox, or null when the call does not run.
  if (!need.fresh_limits) co_return need.live;
  sandbox::Limits limits = *need.fresh_limits;
  std::shared_ptr<sandbox::Sandbox> fresh;
  std::string refused;
  // Held until the fresh sandbox is the session's (adopt_fresh below), when it counts as live.
  SandboxPlace place;
  if (tenant_sandboxes_ && share_.sandboxes != TenantShare::kUnlimited) {
    place = co_await tenant_sandboxes_->place_for(*this, share_.sandboxes);
    if (!place)
      refused = "this tenant already holds its share of live sandboxes (" +
                std::to_string(share_.sandboxes) +
                "), each in use by a call or a read; try again when one of them ends";
  }
  if (refused.empty()) {
    try {
      fresh = co_await host_.create(limits);
    } catch (const sandbox::SandboxError& e) {
      refused = e.what();
    }
  }
  if (fresh) {
    start_usage_log(*fresh);
    auto executor = co_await asio::this_coro::executor;
    start_egress(fresh, executor);
    start_tools(fresh, executor);
  }
  bool resuming = false;
  if (fresh && store_) {
    std::lock_guard lock(mutex_);
    resuming = hibernated_ && !ended_;
  }
  // Only once a fresh sandbox exists: a refused one keeps the archive for the next try.
  if (resuming) {
    fresh = co_await resume(std::move(fresh), limits, out);
    if (!fresh) co_return nullptr;
  }
  co_return adopt_fresh(std::move(fresh), resuming, std::move(refused), out);
}

asio::awaitable<std::optional<sandbox::TransferResult>> Session::read_files(
    std::shared_ptr<sandbox::Sandbox> expected, sandbox::FileReadRequest what,
    const TenantBound* shared) {
  touch();
  // In turn with calls: a sandbox runs one thing at a time, and a read sees the files as the
  // call before it left them.
  auto turn = co_await call_order_.acquire();
  if (!turn) {
    sandbox::TransferResult busy;
    busy.failure = "this session already has too many calls waiting";
    co_return busy;
  }
  {
    std::lock_guard lock(mutex_);
    if (ended_ || !expected || sandbox_ != expected || expected->ended()) co_return std::nullopt;
  }
  // The shared permit before the sandbox's use: a read waiting for a permit leaves its sandbox
  // free to be made room from; the use is then waited for at most for a pack under way.
  CallSlots::Permit shared_turn;
  if (shared) {
    shared_turn = co_await shared->slots.acquire(tenant_, shared->tenant_cap);
    if (!shared_turn) {
      sandbox::TransferResult busy;
      busy.failure = "the gateway is busy reading other files; try again shortly";
      co_return busy;
    }
  }
  auto use = co_await sandbox_use_.acquire();
  {
    std::lock_guard lock(mutex_);
    if (!use || ended_ || sandbox_ != expected || expected->ended()) co_return std::nullopt;
  }
  co_return co_await expected->read_files(std::move(what));
}

void Session::forget_ended_sandbox(const std::shared_ptr<sandbox::Sandbox>& ended) {
  std::lock_guard lock(mutex_);
  if (sandbox_ == ended) {
    settle_locked(sandbox_);
    sandbox_.reset();
  }
}

asio::awaitable<bool> Session::write_call_files(std::shared_ptr<sandbox::Sandbox> sandbox,
                                                std::vector<sandbox::FileIn> in,
                                                ExecuteResult& out) {
  out.files_in = co_await sandbox->write_files(std::move(in));
  bool all = out.files_in.done;
  for (const auto& f : out.files_in.files) all = all && f.status == sandbox::FileStatus::ok;
  if (all) co_return true;
  out.status = ExecuteStatus::files_refused;
  if (sandbox->ended()) forget_ended_sandbox(sandbox);
  co_return false;
}

asio::awaitable<void> Session::run_call(sandbox::RunRequest request, CallFiles files,
                                        std::shared_ptr<sandbox::CallControl> control,
                                        ExecuteResult& out) {
  auto sandbox = co_await sandbox_for_call(out);
  if (!sandbox) co_return;
  // The files first: the code may read them. A call whose files could not all be written
  // does not run (its code would work on files that are not there).
  if (!files.in.empty()) {
    bool written = co_await write_call_files(sandbox, std::move(files.in), out);
    if (!written) co_return;
  }
  out.run = co_await sandbox->run(std::move(request), control);
  count_call(sandbox, out.run);
  if (out.run.outcome == sandbox::RunOutcome::sandbox_ended) {
    forget_ended_sandbox(sandbox);
    std::lock_guard lock(mutex_);
    account_for_locked(out.run, sandbox);
    co_return;
  }
  {
    std::lock_guard lock(mutex_);
    account_for_locked(out.run, sandbox);
  }
  if (!files.out.paths.empty() || !files.out.directory.empty()) {
    out.files_out = co_await sandbox->read_files(std::move(files.out));
    if (sandbox->ended()) forget_ended_sandbox(sandbox);
  }
  out.sandbox = sandbox;
}

asio::awaitable<ExecuteResult> Session::execute(sandbox::RunRequest request, std::string call_key,
                                                CallFiles files,
                                                std::shared_ptr<sandbox::CallControl> control) {
  ExecuteResult out;
  touch();
  if (!control) control = std::make_shared<sandbox::CallControl>();
  {
    std::lock_guard lock(mutex_);
    if (ended_) {
      tell_ended_locked(out);
      co_return out;
    }
    calls_[call_key] = control;
  }
  // Declared before the turn and the slot: they are given back before the call is forgotten.
  struct Forget {
    Session* self;
    const std::string& key;
    ~Forget() {
      std::lock_guard lock(self->mutex_);
      self->calls_.erase(key);
      self->touch();
    }
  } forget{this, call_key};

  // Calls of one session run one at a time, in the order they arrived.
  auto turn = co_await call_order_.acquire();
  if (!turn) {
    out.status = ExecuteStatus::busy;
    out.message = "this session already has too many calls waiting";
    co_return out;
  }
  // Then a gateway slot, within this tenant's share: calls of other tenants are not kept
  // waiting behind all of this tenant's.
  auto slot = co_await gateway_slots_.acquire(tenant_, share_.calls);
  if (!slot) {
    out.status = ExecuteStatus::busy;
    out.message = "the gateway is busy: too many calls are waiting";
    co_return out;
  }
  if (control->cancelled()) {
    out.status = ExecuteStatus::cancelled;
    co_return out;
  }
  // Only now does the call use the sandbox: while it waited for its slot, the sandbox could be
  // hibernated for room (the wait here is at most for such a pack to finish).
  auto use = co_await sandbox_use_.acquire();
  if (!use) {
    out.status = ExecuteStatus::busy;
    out.message = "this session already has too many calls waiting";
    co_return out;
  }
  if (control->cancelled()) {  // while a pack held the sandbox
    out.status = ExecuteStatus::cancelled;
    co_return out;
  }
  // `out` lives in this frame, which the await keeps until run_call is done.
  co_await run_call(std::move(request), std::move(files), control, out);
  co_return out;
}

}  // namespace sandgate::session
