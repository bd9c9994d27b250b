// Hibernating a session's idle sandbox (its /work packed into the state store) and resuming
// it into a fresh sandbox on the next call.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "session.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

bool Session::can_hibernate() const {
  std::lock_guard lock(mutex_);
  return store_ && sandbox_ && !sandbox_->ended() && sandbox_.get() != pack_failed_;
}

bool Session::hibernated() const {
  std::lock_guard lock(mutex_);
  return hibernated_;
}

asio::awaitable<bool> Session::hibernate(std::string* why, bool for_room) {
  // Not hibernating now is not a failure (a call came, nothing to pack): `why` stays empty.
  auto refuse = [](const char*) { return false; };
  auto idle_sandbox = [&]() -> std::shared_ptr<sandbox::Sandbox> {
    std::lock_guard lock(mutex_);
    if (ended_ || !sandbox_ || sandbox_->ended() || sandbox_.get() == pack_failed_ ||
        (!for_room && !calls_.empty()))
      return nullptr;
    return sandbox_;
  };
  if (!store_) co_return refuse("hibernation is off");
  if (!idle_sandbox()) co_return refuse("no idle live sandbox");
  // Holding the sandbox's use: a call that gets its gateway slot meanwhile waits until the pack
  // is done, then resumes the archive. Never waiting for the use: one taken means a call or a
  // read is under way (not idle), or another hibernation of this sandbox is (two sandbox
  // creates making room at once pick the same victim): waiting would hold up whoever needs the
  // room. A call merely queued for a gateway slot does not hold it, so it pins nothing.
  auto use = sandbox_use_.try_acquire();
  if (!use) co_return refuse("the sandbox is in use");
  // Checked again: the sandbox may have ended or been replaced meanwhile.
  auto sandbox = idle_sandbox();
  if (!sandbox) co_return refuse("a call came, or the sandbox ended");
  auto packed = co_await sandbox->pack_work();
  std::string error;
  bool stored = false;
  if (packed.done) {
    // The copy and its fsync on the store's own threads: the executor this runs on also meters
    // sandboxes and answers requests.
    stored = co_await asio::co_spawn(
        store_->io_executor(),
        [&]() -> asio::awaitable<bool> {
          co_return store_->put(id_, packed.fd.get(), packed.size, error, tenant_);
        },
        asio::use_awaitable);
  }
  packed.fd.reset();  // the sandbox's memfd: its pages go now, not with the sandbox
  if (!stored) {
    std::lock_guard lock(mutex_);
    pack_failed_ = sandbox.get();
    // A session deleted (or a sandbox ended) while packing is not a failure worth a warning.
    if (why && !ended_ && !sandbox->ended()) *why = packed.done ? error : packed.failure;
    co_return false;
  }
  co_return finish_hibernation(sandbox);
}

bool Session::finish_hibernation(const std::shared_ptr<sandbox::Sandbox>& sandbox) {
  {
    std::lock_guard lock(mutex_);
    if (ended_ || sandbox_ != sandbox) {
      // Ended (or replaced) while packing: the archive is nobody's. Not a failure: no `why`.
      store_->remove(id_);
      return false;
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
  return true;
}

asio::awaitable<std::shared_ptr<sandbox::Sandbox>> Session::resume(
    std::shared_ptr<sandbox::Sandbox> fresh, sandbox::Limits limits, ExecuteResult& out) {
  // A read-only descriptor of the file: unlinked by remove() at once, read by the sandbox in
  // place (the gateway never holds the bytes), gone when the descriptor closes.
  auto archive = store_->open(id_);
  store_->remove(id_);
  {
    // The archive is gone from the store now, whatever happens next: a later call does not
    // resume (nor say its files were dropped for room).
    std::lock_guard lock(mutex_);
    hibernated_ = false;
  }
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
  co_return co_await replace_unrestored(fresh, limits, out);
}

asio::awaitable<std::shared_ptr<sandbox::Sandbox>> Session::replace_unrestored(
    std::shared_ptr<sandbox::Sandbox> failed, sandbox::Limits limits, ExecuteResult& out) {
  // Whatever part of the archive got in is not what the session had: start from an empty /work.
  failed->end(sandbox::EndReason::closed, "restore failed");
  {
    // The replacement gets what remains after the failed one's spend and time, not what
    // remained before it.
    std::lock_guard lock(mutex_);
    settle_locked(failed);
    auto now = Clock::now();
    if (std::string closed = account_.closed_reason(now); !closed.empty()) {
      out.status = ExecuteStatus::limit_reached;
      out.message = owner_text() + " can run no more code: " + closed;
      co_return nullptr;
    }
    limits = account_.remaining(limits_, now);
    limits.layer_dir = environment_layer_;
  }
  std::shared_ptr<sandbox::Sandbox> replacement;
  try {
    replacement = co_await host_.create(limits);
  } catch (const sandbox::SandboxError& e) {
    out.status = ExecuteStatus::sandbox_error;
    out.message = e.what();
    co_return nullptr;
  }
  start_usage_log(*replacement);
  auto executor = co_await asio::this_coro::executor;
  start_egress(replacement, executor);
  start_tools(replacement, executor);
  co_return replacement;
}

}  // namespace sandgate::session
