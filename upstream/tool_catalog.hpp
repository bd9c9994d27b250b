#pragma once
// The tool lists of the gateway's upstreams (issue #45), kept per upstream for every tenant: a
// list is asked for once, kept for its ttl, and asked for again after it or once any client of
// that upstream saw notifications/tools/list_changed (invalidate). Listing uses a client session
// of the catalog's own, never one of a tenant's sandboxes.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "upstream/definition.hpp"
#include "upstream/mcp_client.hpp"

namespace sandgate::upstream {

class ToolCatalog {
 public:
  static std::shared_ptr<ToolCatalog> create(boost::asio::any_io_executor executor,
                                             std::shared_ptr<const UpstreamDefinition> definition);
  virtual ~ToolCatalog() = default;
  // The current list (fetched if none is kept or it is stale); throws UpstreamError. Several
  // callers at once share one request.
  virtual boost::asio::awaitable<std::shared_ptr<const ToolList>> tools(
      std::chrono::steady_clock::time_point deadline) = 0;
  // The next tools() asks the upstream again.
  virtual void invalidate() = 0;
  virtual const UpstreamDefinition& definition() const = 0;
};

}  // namespace sandgate::upstream
