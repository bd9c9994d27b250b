#pragma once
// One sandbox's tool channel (issue #45, code mode): answers its programs on the unix socket its
// supervisor handed over (protocol::kToolChannelSocket inside the sandbox), one small HTTP/1.1
// request each:
//   POST /call {"server": S, "tool": T, "arguments": {…}}  → {"result": CallToolResult}
//   GET  /list                                            → {"servers": [{name, description,
//                                                              tools: [{name, description,
//                                                              inputSchema, outputSchema}]}]}
//   GET  /reference[/S]                                   → the tools' signatures, as text
// or {"error": {"kind", "message"}} with a 4xx/5xx status. Only the tenant's upstreams and their
// allowed tools are callable; no URL or credential ever comes from or goes to the sandbox. The
// gateway makes each call as the MCP client of the upstream (one client session per upstream per
// sandbox), within the execute call's deadline and the channel's bounds; a program that goes
// away (its call cancelled or timed out: the sandbox kills it) cancels its upstream calls.
//
// All of a channel's work runs on one strand of the given executor; stop() may be called from any
// thread (the sandbox's end, under its lock: it only posts). Knows nothing of sandboxes: what it
// needs of one it asks its ToolAccount.
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "upstream/upstreams.hpp"

namespace sandgate::upstream {

// What a channel asks of whoever owns the sandbox it serves (session/).
class ToolAccount {
 public:
  virtual ~ToolAccount() = default;
  // Changes whenever a new execute call starts in the sandbox: the per-call bounds count from it.
  virtual std::uint64_t call_number() const = 0;
  // When the running execute call must end; time_point::min() when none runs (then no tool call
  // is made: a program left running between calls may not make them).
  virtual std::chrono::steady_clock::time_point call_deadline() const = 0;
  // Charges a tool call's price to the sandbox's spend; false when it has ended or reached its
  // spend cap with this.
  virtual bool charge(double usd) = 0;
  // A call the gateway sent to `upstream`, whatever came back, and the price charged for it
  // (0 when none was): the sandbox's usage counts it (the ledger's tool calls by upstream).
  virtual void record_call(const std::string& upstream, double usd) = 0;
};

// Per execute call (all its programs together) and per sandbox.
struct ChannelLimits {
  std::uint32_t calls_per_execute = 500;          // tool calls one execute call may make
  std::uint32_t in_flight = 16;                   // tool calls at once, per sandbox
  std::uint64_t bytes_per_execute = 32ull << 20;  // answers' bytes one execute call may get
  std::uint32_t connections = 64;                 // open connections per sandbox

  bool operator==(const ChannelLimits&) const = default;
};

// One tool call as the gateway's metrics and log see it: metadata only.
struct ToolCallReport {
  std::string tenant;
  std::string upstream;
  std::string tool;
  // "ok", "tool_error" (the tool answered isError), "refused" (by the channel: not allowed, a
  // bound), or an UpstreamError kind ("unreachable", "timeout", "cancelled", "too_large",
  // "protocol", "refused").
  std::string outcome;
  std::chrono::milliseconds duration{0};
  std::uint64_t bytes = 0;
  double usd = 0;
};
using ToolCallObserver = std::function<void(const ToolCallReport&)>;

// What a tenant's sandboxes may call and within which bounds: the same for each of its sandboxes.
struct ChannelGrant {
  std::shared_ptr<Upstreams> upstreams;
  std::vector<std::string> allowed;  // the tenant's upstream names (TenantTerms::upstreams)
  ChannelLimits limits;
  ToolCallObserver observer;  // may be empty; told on the channel's strand: quick, thread-safe
};

struct ChannelLabels {
  std::string tenant;
  std::string session;  // a prefix of the session's id
  std::string sandbox;
};

class ToolChannel {
 public:
  // Starts answering on `listener` (a listening unix socket; the channel owns it from now on).
  static std::shared_ptr<ToolChannel> start(boost::asio::any_io_executor executor,
                                            UniqueFd listener, const ChannelGrant& grant,
                                            std::shared_ptr<ToolAccount> account,
                                            ChannelLabels labels);
  virtual ~ToolChannel() = default;
  // Closes the listener and every connection, cancels the calls in flight, ends the upstream
  // client sessions.
  virtual void stop() = 0;
};

}  // namespace sandgate::upstream
