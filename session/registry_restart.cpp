// The registry's part in surviving a restart: what it saves, how it serves saved sessions
// again, and how it lets go of its sessions at a graceful stop without losing their files.
// Kept apart from registry.cpp: none of it is on the path of an ordinary request.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "registry.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

namespace {

using WallClock = std::chrono::system_clock;

// The wall-clock time of steady_clock's epoch, taken once: times converted with it do not
// jitter between checkpoints (each would otherwise look like a change to write).
WallClock::time_point wall_at_steady_epoch() {
  static const WallClock::time_point anchor = [] {
    auto steady =
        std::chrono::duration_cast<WallClock::duration>(Session::Clock::now().time_since_epoch());
    return WallClock::now() - steady;
  }();
  return anchor;
}

std::int64_t to_unix_ms(Session::Clock::time_point t) {
  auto wall = wall_at_steady_epoch() +
              std::chrono::duration_cast<WallClock::duration>(t.time_since_epoch());
  return std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
}

// A saved wall-clock time as a steady one: how long ago it was, now. A time in the future (the
// clock was set back) counts as now.
Session::Clock::time_point from_unix_ms(std::int64_t ms, Session::Clock::time_point steady_now,
                                        WallClock::time_point wall_now) {
  auto then = WallClock::time_point(std::chrono::milliseconds(ms));
  auto ago = std::max(WallClock::duration::zero(), wall_now - then);
  return steady_now - std::chrono::duration_cast<Session::Clock::duration>(ago);
}

// Several hibernations at once at a graceful stop: each mostly waits for its sandbox to pack.
constexpr std::size_t kStopHibernationsAtOnce = 4;

struct HibernationBatch {
  explicit HibernationBatch(asio::any_io_executor executor) : all_done(executor) {}
  std::vector<std::shared_ptr<Session>> todo;
  std::size_t next = 0, done = 0, workers = 0;
  asio::steady_timer all_done;
};

// One of the batch's workers: all run on the registry's executor, one step at a time.
asio::awaitable<void> hibernate_worker(std::shared_ptr<HibernationBatch> batch,
                                       Session::Clock::time_point deadline) {
  while (batch->next < batch->todo.size() && Session::Clock::now() < deadline) {
    auto session = batch->todo[batch->next++];
    bool hibernated = co_await session->hibernate();
    if (hibernated) ++batch->done;
  }
  if (--batch->workers == 0) batch->all_done.cancel();
}

}  // namespace

SavedRegistry Registry::save() const {
  SavedRegistry out;
  out.replica = config_.replica_name;
  for (const auto& s : snapshot()) {
    if (s->ended()) continue;
    auto state = s->saved_state();
    SavedSession saved;
    saved.id = s->id();
    saved.kind = s->kind();
    saved.tenant = s->tenant();
    saved.created_unix_ms = to_unix_ms(s->created());
    saved.last_used_unix_ms = to_unix_ms(s->last_used());
    saved.spend_usd = state.spend_usd;
    saved.environment = state.environment;
    saved.sandbox = state.live         ? SavedSandbox::live
                    : state.hibernated ? SavedSandbox::hibernated
                                       : SavedSandbox::none;
    out.sessions.push_back(std::move(saved));
  }
  std::sort(out.sessions.begin(), out.sessions.end(),
            [](const SavedSession& a, const SavedSession& b) { return a.id < b.id; });
  return out;
}

namespace {

std::vector<const SavedSession*> most_recently_used_first(const std::vector<SavedSession>& all) {
  std::vector<const SavedSession*> by_use;
  for (const auto& entry : all) by_use.push_back(&entry);
  std::stable_sort(by_use.begin(), by_use.end(), [](const auto* a, const auto* b) {
    return a->last_used_unix_ms > b->last_used_unix_ms;
  });
  return by_use;
}

// A saved session's times (on this boot's clocks), spend, and what became of its files.
RestoredSession restored_account(const SavedSession& entry, Session::Clock::time_point steady_now,
                                 WallClock::time_point wall_now) {
  RestoredSession restored;
  restored.created = from_unix_ms(entry.created_unix_ms, steady_now, wall_now);
  restored.last_used =
      std::max(restored.created, from_unix_ms(entry.last_used_unix_ms, steady_now, wall_now));
  restored.spent_usd = entry.spend_usd;
  restored.had_sandbox = entry.sandbox != SavedSandbox::none;
  restored.environment = entry.environment;
  if (entry.sandbox == SavedSandbox::live)
    restored.lost_files_why =
        "the gateway stopped while its sandbox was live, so its files could not be kept";
  else if (entry.sandbox == SavedSandbox::hibernated)
    restored.lost_files_why = "its files were not found when the gateway restarted";
  return restored;
}

}  // namespace

RestoreReport Registry::restore(const SavedRegistry& saved,
                                const std::function<tenant::Terms(const std::string&)>& tenant_of) {
  RestoreReport report;
  auto steady_now = Session::Clock::now();
  auto wall_now = WallClock::now();
  // The most recently used first: where the caps (smaller now, or a file written by hand) do
  // not let every session back, those in use come back.
  for (const SavedSession* saved_entry : most_recently_used_first(saved.sessions)) {
    const SavedSession& entry = *saved_entry;
    auto tenant = tenant_of(entry.tenant);
    if (!tenant) {
      ++report.unknown_tenant;
      continue;
    }
    RestoredSession restored = restored_account(entry, steady_now, wall_now);
    if (steady_now - restored.last_used >= config_.idle_timeout) {
      ++report.expired;  // the sweep would end it at once
      continue;
    }
    // The tenant's policy now, as create() would apply it.
    SessionTerms terms = terms_for(*tenant);
    auto session = std::make_shared<Session>(
        entry.id, tenant->name, terms.limits, host_, gateway_slots_, terms.share,
        config_.calls_queued_per_session, entry.kind, store_, &restored, this);
    equip(*session, terms, tenant);
    bool added = false, over_cap = false;
    {
      std::lock_guard lock(mutex_);
      // The same caps as create(): a restart never admits more than a new session would get.
      over_cap = sessions_.size() >= config_.max_sessions ||
                 tenant_count_locked(tenant->name) >= tenant->max_sessions;
      added = !stopped_ && !over_cap && admit_locked(session);
    }
    if (over_cap) {
      session->end_keeping_archive("not restored");  // adopt() then drops its archive
      ++report.over_cap;
      continue;
    }
    if (!added) {
      // Not this one's archive to delete: it may be the live session's of the same id.
      session->end_keeping_archive("not restored");
      ++report.duplicate;
      continue;
    }
    report.ids.push_back(entry.id);
    report.tenants.push_back(entry.tenant);
    ++(entry.kind == SessionKind::handle ? report.handles : report.sessions);
    report.with_sandbox += restored.had_sandbox;
  }
  return report;
}

asio::awaitable<std::size_t> Registry::hibernate_all_idle(Session::Clock::time_point deadline) {
  if (!store_) co_return 0;
  auto batch = std::make_shared<HibernationBatch>(sweep_timer_.get_executor());
  for (auto& s : snapshot())
    if (!s->busy() && s->has_live_sandbox()) batch->todo.push_back(std::move(s));
  if (batch->todo.empty()) co_return 0;
  batch->workers = std::min(kStopHibernationsAtOnce, batch->todo.size());
  batch->all_done.expires_at(Session::Clock::time_point::max());
  for (std::size_t i = 0, n = batch->workers; i < n; ++i)
    asio::co_spawn(sweep_timer_.get_executor(), hibernate_worker(batch, deadline), asio::detached);
  // The workers share this executor: none can finish between this check and the wait.
  if (batch->workers > 0) co_await batch->all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return batch->done;
}

void Registry::release_all(const std::string& why) {
  for (auto& [id, s] : stop_and_take_all()) s->end_keeping_archive(why);
}

}  // namespace sandgate::session
