#include "session.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

Session::Session(std::string id, std::string tenant, sandbox::Limits limits,
                 sandbox::SandboxHost& host, CallSlots& gateway_slots, std::size_t tenant_call_cap,
                 std::size_t queue_depth, SessionKind kind, StateStore* store,
                 const RestoredSession* restored)
    : id_(std::move(id)),
      tenant_(std::move(tenant)),
      kind_(kind),
      limits_(limits),
      created_(restored ? restored->created : Clock::now()),
      last_used_((restored ? restored->last_used : created_).time_since_epoch().count()),
      host_(host),
      gateway_slots_(gateway_slots),
      tenant_call_cap_(tenant_call_cap),
      call_order_(1, queue_depth),
      account_(limits_, created_),
      store_(store) {
  if (!restored) return;
  // Its spend and lifetime go on where they were; its sandbox comes back on the next call.
  account_.settle(restored->spent_usd);
  hibernated_ = restored->had_sandbox && store_ != nullptr;
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
  if (ended) account_.settle(ended->spend_usd());
}

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
  return out;
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

bool Session::end_sandbox_if_idle(std::string why) {
  std::shared_ptr<sandbox::Sandbox> sandbox;
  {
    std::lock_guard lock(mutex_);
    if (!calls_.empty() || !sandbox_ || sandbox_->ended()) return false;
    sandbox = std::move(sandbox_);
  }
  sandbox->end(sandbox::EndReason::closed, std::move(why));
  std::lock_guard lock(mutex_);
  settle_locked(sandbox);
  return true;
}

bool Session::can_hibernate() const {
  std::lock_guard lock(mutex_);
  return store_ && sandbox_ && !sandbox_->ended() && sandbox_.get() != pack_failed_;
}

bool Session::hibernated() const {
  std::lock_guard lock(mutex_);
  return hibernated_;
}

asio::awaitable<bool> Session::hibernate(std::string* why) {
  // Not hibernating now is not a failure (a call came, nothing to pack): `why` stays empty.
  auto refuse = [](const char*) { return false; };
  auto idle_sandbox = [&]() -> std::shared_ptr<sandbox::Sandbox> {
    std::lock_guard lock(mutex_);
    if (ended_ || !calls_.empty() || !sandbox_ || sandbox_->ended() ||
        sandbox_.get() == pack_failed_)
      return nullptr;
    return sandbox_;
  };
  if (!store_) co_return refuse("hibernation is off");
  if (!idle_sandbox()) co_return refuse("no idle live sandbox");
  // In turn with calls: a call that arrives meanwhile waits until the pack is done. Never
  // waiting for the turn: one taken means a call or a read is under way (not idle), or another
  // hibernation of this sandbox is (two sandbox creates making room at once pick the same
  // victim): waiting would hold up whoever needs the room.
  auto turn = call_order_.try_acquire();
  if (!turn) co_return refuse("the sandbox is in use");
  // Checked again: a call may have come (and be waiting behind us) while we waited.
  auto sandbox = idle_sandbox();
  if (!sandbox) co_return refuse("a call came, or the sandbox ended");
  auto packed = co_await sandbox->pack_work();
  std::string error;
  if (!packed.done || !store_->put(id_, packed.bytes, error)) {
    std::lock_guard lock(mutex_);
    pack_failed_ = sandbox.get();
    // A session deleted (or a sandbox ended) while packing is not a failure worth a warning.
    if (why && !ended_ && !sandbox->ended()) *why = packed.done ? error : packed.failure;
    co_return false;
  }
  {
    std::lock_guard lock(mutex_);
    if (ended_ || sandbox_ != sandbox) {
      // Ended (or replaced) while packing: the archive is nobody's.
      store_->remove(id_);
      co_return refuse("the session ended meanwhile");
    }
    sandbox_.reset();
    hibernated_ = true;
  }
  sandbox->end(sandbox::EndReason::closed, "hibernated");
  {
    // Its spend stays with the session, which the next sandbox continues.
    std::lock_guard lock(mutex_);
    settle_locked(sandbox);
  }
  ++store_->hibernations;
  co_return true;
}

asio::awaitable<std::shared_ptr<sandbox::Sandbox>> Session::resume(
    std::shared_ptr<sandbox::Sandbox> fresh, sandbox::Limits limits, ExecuteResult& out) {
  auto archive = store_->get(id_);
  store_->remove(id_);
  ++store_->resumes;
  std::string lost;  // set for a restored session only, and said at most once
  {
    std::lock_guard lock(mutex_);
    lost = std::exchange(lost_files_why_, {});
  }
  if (!archive) {
    out.resumed = Resumed::without_files;
    out.resumed_why =
        lost.empty() ? "its files were dropped to keep the gateway's hibernation storage within "
                       "its cap"
                     : lost;
    co_return fresh;
  }
  auto restored = co_await fresh->restore_work(std::move(*archive));
  if (restored.done) {
    out.resumed = Resumed::with_files;
    co_return fresh;
  }
  out.resumed = Resumed::without_files;
  out.resumed_why = "its files could not be restored (" + restored.failure + ")";
  // Whatever part of the archive got in is not what the session had: start from an empty /work.
  fresh->end(sandbox::EndReason::closed, "restore failed");
  {
    std::lock_guard lock(mutex_);
    settle_locked(fresh);
  }
  try {
    co_return co_await host_.create(limits);
  } catch (const sandbox::SandboxError& e) {
    out.status = ExecuteStatus::sandbox_error;
    out.message = e.what();
    co_return nullptr;
  }
}

void Session::tell_ended_locked(ExecuteResult& out) const {
  out.status = ExecuteStatus::session_ended;
  out.message = end_why_;
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
  return {nullptr, account_.remaining(limits_, now)};
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
  SandboxNeed need = sandbox_need(out);
  // No fresh one is needed: the live sandbox, or null when the call does not run.
  if (!need.fresh_limits) co_return need.live;
  sandbox::Limits limits = *need.fresh_limits;
  std::shared_ptr<sandbox::Sandbox> fresh;
  std::string refused;
  try {
    fresh = co_await host_.create(limits);
  } catch (const sandbox::SandboxError& e) {
    refused = e.what();
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
    std::shared_ptr<sandbox::Sandbox> expected, sandbox::FileReadRequest what) {
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
  auto slot = co_await gateway_slots_.acquire(tenant_, tenant_call_cap_);
  if (!slot) {
    out.status = ExecuteStatus::busy;
    out.message = "the gateway is busy: too many calls are waiting";
    co_return out;
  }
  if (control->cancelled()) {
    out.status = ExecuteStatus::cancelled;
    co_return out;
  }
  // `out` lives in this frame, which the await keeps until run_call is done.
  co_await run_call(std::move(request), std::move(files), control, out);
  co_return out;
}

}  // namespace sandgate::session
