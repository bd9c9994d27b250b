#include "environments.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "common/logging.hpp"

namespace sandgate::environment {
namespace asio = boost::asio;

const char* state_name(State state) {
  switch (state) {
    case State::building:
      return "building";
    case State::ready:
      return "ready";
    case State::failed:
      return "failed";
  }
  return "unknown";
}

Environments::Environments(asio::any_io_executor executor, LayerStore store, BuildServices services,
                           std::size_t builds_at_once)
    : executor_(std::move(executor)),
      services_(std::move(services)),
      builds_at_once_(builds_at_once == 0 ? 1 : builds_at_once),
      store_(std::move(store)) {}

void Environments::set_build_observer(BuildObserver observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

void Environments::load(std::map<std::string, Definition> definitions) {
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Status> next;
    queue_.clear();
    for (auto& [name, definition] : definitions) {
      Status status;
      status.hash = layer_hash(definition);
      status.definition = std::move(definition);
      auto old = statuses_.find(name);
      if (old != statuses_.end() && old->second.hash == status.hash &&
          old->second.state != State::failed) {
        // Unchanged (its description or pool bounds may have): as it was, building or ready.
        status.state = old->second.state;
        status.layer = old->second.layer;
      } else if (auto layer = store_.find(status.hash)) {
        status.state = State::ready;
        status.layer = std::move(layer);
      } else {
        status.state = State::building;
      }
      if (status.state == State::building && !building_.count(status.hash)) queue_.push_back(name);
      next.emplace(name, std::move(status));
    }
    statuses_ = std::move(next);
    start_builds_locked();
    if (!sweeping_ && !stopped_) {
      sweeping_ = true;
      asio::co_spawn(executor_, sweep_unused_layers(), asio::detached);
    }
  }
  update_pools();
  remove_unused_layers();
}

void Environments::update_pools() {
  if (!services_.host || !services_.warm_pools) return;
  std::vector<sandbox::LayerPool> pools;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    // One pool a layer: environments whose definitions build the same layer share its ready
    // sandboxes (the larger bounds, every preload).
    for (const auto& [name, status] : statuses_) {
      const auto& d = status.definition;
      if (status.state != State::ready || (d.pool_min == 0 && d.pool_max == 0)) continue;
      const std::string& dir = status.layer->dir;
      auto same = std::find_if(pools.begin(), pools.end(),
                               [&dir](const sandbox::LayerPool& p) { return p.layer_dir == dir; });
      if (same == pools.end()) {
        pools.push_back({dir, {}});
        same = pools.end() - 1;
      }
      same->pool.size = std::max(same->pool.size, d.pool_min);
      same->pool.max_size = std::max(same->pool.max_size, d.pool_max);
      for (const auto& module : d.preload)
        if (std::find(same->pool.preload.begin(), same->pool.preload.end(), module) ==
            same->pool.preload.end())
          same->pool.preload.push_back(module);
    }
  }
  services_.host->set_layer_pools(std::move(pools));
}

asio::awaitable<void> Environments::sweep_unused_layers() {
  std::weak_ptr<Environments> weak = weak_from_this();
  asio::steady_timer timer(executor_);
  for (;;) {
    timer.expires_after(std::chrono::seconds(10));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    auto self = weak.lock();
    if (ec || !self) co_return;
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
    }
    remove_unused_layers();
  }
}

void Environments::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  queue_.clear();
}

void Environments::start_builds_locked() {
  while (!stopped_ && building_.size() < builds_at_once_ && !queue_.empty()) {
    std::string name = queue_.front();
    queue_.erase(queue_.begin());
    auto it = statuses_.find(name);
    if (it == statuses_.end() || it->second.state != State::building ||
        building_.count(it->second.hash))
      continue;
    building_.insert(it->second.hash);
    asio::co_spawn(executor_, run_build(it->second.definition, it->second.hash), asio::detached);
  }
}

asio::awaitable<void> Environments::run_build(Definition definition, std::string hash) {
  auto self = shared_from_this();
  auto started = std::chrono::steady_clock::now();
  log_event(LogLevel::info, "environment_build_started",
            {{"environment", definition.name}, {"layer", hash.substr(0, 12)}});
  BuildOutcome outcome;
  try {
    outcome = co_await build_layer(definition, hash, store_, services_);
  } catch (const std::exception& e) {
    outcome.reason = std::string("the build failed: ") + e.what();
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  finish_build(definition, hash, outcome, seconds);
}

void Environments::finish_build(const Definition& definition, const std::string& hash,
                                const BuildOutcome& outcome, double seconds) {
  BuildObserver observer;
  {
    std::lock_guard lock(mutex_);
    building_.erase(hash);
    if (!outcome.layer) {
      try {
        store_.record_failure(hash, {definition.name, outcome.reason, outcome.output});
      } catch (const std::exception& e) {
        log_event(LogLevel::warn, "environment_failure_not_recorded",
                  {{"environment", definition.name}, {"error", e.what()}});
      }
    }
    // Only the environment's current definition takes the result: one changed meanwhile
    // has its own build.
    auto it = statuses_.find(definition.name);
    if (it != statuses_.end() && it->second.hash == hash) {
      it->second.state = outcome.layer ? State::ready : State::failed;
      it->second.layer = outcome.layer;
      it->second.reason = outcome.reason;
    }
    observer = observer_;
    start_builds_locked();
  }
  // Metadata only: the output may hold anything the setup printed; it is in the store's record.
  nlohmann::json fields = {
      {"environment", definition.name}, {"layer", hash.substr(0, 12)}, {"seconds", seconds}};
  if (outcome.layer) {
    fields["bytes"] = outcome.layer->size_bytes;
    log_event(LogLevel::info, "environment_ready", fields);
  } else {
    // The reason is the gateway's own words (a step and its exit status), never the output.
    fields["reason"] = outcome.reason;
    log_event(LogLevel::warn, "environment_build_failed", fields);
  }
  if (observer) observer(definition.name, outcome.layer ? "ready" : "failed", seconds);
  update_pools();
  remove_unused_layers();
}

void Environments::remove_unused_layers() {
  std::set<std::string> in_use;
  if (services_.host) in_use = services_.host->layers_in_use();
  std::lock_guard lock(mutex_);
  std::set<std::string> wanted = building_;
  for (const auto& [name, status] : statuses_) wanted.insert(status.hash);
  for (const auto& hash : store_.remove_unused(wanted, in_use))
    log_event(LogLevel::info, "environment_layer_removed", {{"layer", hash.substr(0, 12)}});
}

std::optional<Status> Environments::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = statuses_.find(name);
  if (it == statuses_.end()) return std::nullopt;
  return it->second;
}

std::vector<Status> Environments::all() const {
  std::lock_guard lock(mutex_);
  std::vector<Status> out;
  for (const auto& [name, status] : statuses_) out.push_back(status);
  return out;
}

bool Environments::settled() const {
  std::lock_guard lock(mutex_);
  for (const auto& [name, status] : statuses_)
    if (status.state == State::building) return false;
  return true;
}

namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::variant<Choice, std::string> Environments::choose(
    const std::vector<std::string>& allowed, const std::string& asked,
    const std::string& session_environment) const {
  std::vector<std::string> mine = allowed;
  if (mine.empty()) mine.push_back(std::string(kBase));
  std::string name = !asked.empty()                 ? asked
                     : !session_environment.empty() ? session_environment
                                                    : mine.front();
  if (std::find(mine.begin(), mine.end(), name) == mine.end())
    return "the environment '" + name +
           "' is not one this caller may use; its environments: " + listed(mine);
  if (!session_environment.empty() && name != session_environment)
    return "this session's sandbox runs the environment '" + session_environment +
           "', and a session keeps one environment for its whole life: leave out `environment` "
           "(or name '" +
           session_environment + "'), or start a new session for '" + name + "'";
  if (name == kBase) return Choice{name, ""};
  std::lock_guard lock(mutex_);
  auto it = statuses_.find(name);
  if (it == statuses_.end())
    return "the environment '" + name +
           "' is not defined on this gateway (the operator's environments file lacks it); use " +
           "another of: " + listed(mine);
  switch (it->second.state) {
    case State::building:
      return "the environment '" + name +
             "' is still being built; try again in a minute, or use another of: " + listed(mine);
    case State::failed:
      return "the environment '" + name +
             "' failed to build (the operator has the reason); use another of: " + listed(mine);
    case State::ready:
      break;
  }
  return Choice{name, it->second.layer->dir};
}

std::vector<std::pair<std::string, std::string>> Environments::described(
    const std::vector<std::string>& allowed) const {
  std::vector<std::pair<std::string, std::string>> out;
  std::lock_guard lock(mutex_);
  for (const auto& name : allowed) {
    if (name == kBase) {
      out.emplace_back(name,
                       "the system as it is (Python, Node, bash and their standard libraries)");
      continue;
    }
    auto it = statuses_.find(name);
    std::string description = it == statuses_.end() ? "" : it->second.definition.description;
    out.emplace_back(name, description);
  }
  return out;
}

}  // namespace sandgate::environment
