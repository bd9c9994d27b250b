#pragma once
// The gateway's environments (issue #43): the operator's definitions, each one's state (building,
// ready with its layer, failed with the reason), the builds (at most a few at once, in the
// background), and which environment a tenant's call runs in.
//
// Thread-safe: the tools read it from any thread; load() runs on the gateway's executor.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "definition.hpp"
#include "environments_config.hpp"
#include "layer_build.hpp"
#include "layer_store.hpp"

namespace sandgate::environment {

enum class State { building, ready, failed };
const char* state_name(State state);

struct Status {
  Definition definition;
  std::string hash;
  State state = State::building;
  std::string reason;                // failed: why (the operator's; never shown to tenants)
  std::optional<LayerRecord> layer;  // ready
};

// The environment a call runs in: its name ("base": the system as it is) and the layer a new
// sandbox mounts ("" for base).
struct Choice {
  std::string name;
  std::string layer_dir;
  bool operator==(const Choice&) const = default;
};

// Told of each build's end: the environment, "ready" or "failed", and how long it took.
using BuildObserver =
    std::function<void(const std::string& name, const std::string& outcome, double seconds)>;

class Environments : public std::enable_shared_from_this<Environments> {
 public:
  Environments(boost::asio::any_io_executor executor, LayerStore store, BuildServices services,
               std::size_t builds_at_once = 1);

  // The definitions, at start and on each reload: one whose layer is stored (here or built
  // ahead) is ready at once; the others are built. A build under way for a definition that
  // changed finishes, unused. Layers no definition and no live sandbox uses are removed.
  void load(std::map<std::string, Definition> definitions);
  void set_build_observer(BuildObserver observer);
  // Builds no more (the gateway stops); builds under way end with their sandboxes.
  void stop();

  std::optional<Status> find(const std::string& name) const;
  std::vector<Status> all() const;
  // Whether every environment is ready or failed (none building): /readyz waits for this.
  bool settled() const;

  // Which environment a call of a tenant allowed `allowed` (its first is its default; empty:
  // base only) runs in, when it asks for `asked` ("" : whatever its session runs, else the
  // default) and its session runs `session_environment` ("" : not decided yet). The error, in
  // words the model can act on, when it may not.
  std::variant<Choice, std::string> choose(const std::vector<std::string>& allowed,
                                           const std::string& asked,
                                           const std::string& session_environment) const;
  // The environments of a tenant allowed `allowed`, with their descriptions, for the model.
  std::vector<std::pair<std::string, std::string>> described(
      const std::vector<std::string>& allowed) const;

 private:
  void start_builds_locked();
  boost::asio::awaitable<void> run_build(Definition definition, std::string hash);
  void finish_build(const Definition& definition, const std::string& hash,
                    const BuildOutcome& outcome, double seconds);
  void remove_unused_layers();
  // The host's pools for the ready environments now (their preload, their bounds).
  void update_pools();
  // Removes unused layers every kSweepInterval until stop(): a layer outlives the last sandbox
  // that used it by at most that long.
  boost::asio::awaitable<void> sweep_unused_layers();

  boost::asio::any_io_executor executor_;
  BuildServices services_;
  const std::size_t builds_at_once_;
  mutable std::mutex mutex_;
  LayerStore store_;  // its writes happen on the executor's builds and load (under mutex_)
  std::map<std::string, Status> statuses_;
  std::vector<std::string> queue_;  // names whose current definition waits to be built
  std::set<std::string> building_;  // hashes being built now
  BuildObserver observer_;
  bool stopped_ = false;
  bool sweeping_ = false;
};

}  // namespace sandgate::environment
