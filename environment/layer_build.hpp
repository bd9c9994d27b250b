#pragma once
// One environment's build (issue #43): its setup in an ordinary sandbox — every isolation rule
// holds — with the layer writable at /env and egress to the definition's list only; then, once
// that sandbox has ended, the layer sealed (the gateway's, read-only, no set-id bits) and its
// verify command run in a fresh sandbox that has the finished layer alone, read-only, and no
// egress: proof that the layer is enough. A failure at any step stores nothing.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>

#include "definition.hpp"
#include "egress/connection_shares.hpp"
#include "egress/proxy_config.hpp"
#include "layer_store.hpp"
#include "sandbox/host.hpp"

namespace sandgate::environment {

// What a build uses of the gateway: its sandboxes and its egress proxy's settings and shares.
struct BuildServices {
  sandbox::SandboxHost* host = nullptr;
  std::shared_ptr<const egress::ProxyConfig> proxy;
  std::shared_ptr<egress::ConnectionShares> shares;
  // Whether ready environments get ready sandboxes of their own (not for a build ahead).
  bool warm_pools = true;
};

struct BuildOutcome {
  std::optional<LayerRecord> layer;  // set when it was built and verified
  std::string reason;                // why not, in words (for the operator)
  std::string output;                // the setup's and verify's output, bounded
};

boost::asio::awaitable<BuildOutcome> build_layer(Definition definition, std::string hash,
                                                 LayerStore& store, BuildServices services);

// The limits a build's sandboxes get: the gateway's, with room for a package manager's
// downloads and unpacking (its /work and /tmp, its memory) and a lifetime past the timeout.
sandbox::Limits build_limits(const sandbox::Limits& gateway, const Definition& definition);

}  // namespace sandgate::environment
