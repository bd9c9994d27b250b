#pragma once
// The gateway's upstream MCP servers (issue #45), as the `--upstreams` file last defined them:
// each with its tool catalog (tool_catalog.hpp) and the gate its calls in flight pass
// (slot_gate.hpp: the upstream's max_concurrency, each tenant's share of it). A reload replaces
// the set; an upstream whose definition did not change keeps its catalog and gate, so calls in
// flight keep their places. Thread-safe.
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "upstream/definition.hpp"
#include "upstream/slot_gate.hpp"
#include "upstream/tool_catalog.hpp"

namespace sandgate::upstream {

struct Upstream {
  std::shared_ptr<const UpstreamDefinition> definition;
  std::shared_ptr<ToolCatalog> catalog;
  std::shared_ptr<SlotGate> gate;
};

class Upstreams {
 public:
  // `single_tenant`: one tenant may use all of each upstream's concurrency; else half.
  Upstreams(boost::asio::any_io_executor executor, UpstreamSet set, bool single_tenant);

  // Null when the set has no such upstream (any more).
  std::shared_ptr<const Upstream> find(const std::string& name) const;
  std::vector<std::string> names() const;
  void replace(UpstreamSet set);

 private:
  std::shared_ptr<const Upstream> make(std::shared_ptr<const UpstreamDefinition> definition) const;

  boost::asio::any_io_executor executor_;
  const bool single_tenant_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Upstream>> upstreams_;
};

}  // namespace sandgate::upstream
