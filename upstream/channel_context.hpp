#pragma once
// What all of one tool channel's parts share (tool_channel.cpp, channel_connection.cpp,
// channel_requests.cpp): its settings, and its state, which lives on its strand.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "upstream/slot_gate.hpp"
#include "upstream/tool_channel.hpp"

namespace sandgate::upstream {

// One answer to a program's request.
struct ChannelAnswer {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

struct ChannelContext {
  ChannelContext(boost::asio::any_io_executor executor, std::shared_ptr<Upstreams> set,
                 std::vector<std::string> tenant_upstreams, std::shared_ptr<ToolAccount> owner,
                 ChannelLimits bounds, ChannelLabels for_log, ToolCallObserver told)
      : strand(boost::asio::make_strand(executor)),
        upstreams(std::move(set)),
        allowed(std::move(tenant_upstreams)),
        account(std::move(owner)),
        limits(bounds),
        labels(std::move(for_log)),
        observer(std::move(told)),
        in_flight(std::make_shared<SlotGate>(bounds.in_flight, bounds.in_flight)) {}

  boost::asio::strand<boost::asio::any_io_executor> strand;
  const std::shared_ptr<Upstreams> upstreams;
  const std::vector<std::string> allowed;
  const std::shared_ptr<ToolAccount> account;
  const ChannelLimits limits;
  const ChannelLabels labels;
  const ToolCallObserver observer;
  const std::shared_ptr<SlotGate> in_flight;  // this sandbox's calls at once

  // On the strand only.
  bool stopped = false;
  std::uint64_t counted_call = 0;  // the execute call the counts below are of
  std::uint32_t calls = 0;
  std::uint64_t bytes = 0;
  // This sandbox's client session of each upstream, made at its first call; a reload that
  // changed an upstream's definition gets a new one.
  struct Client {
    std::shared_ptr<const UpstreamDefinition> definition;
    std::shared_ptr<McpClient> client;
  };
  std::map<std::string, Client> clients;

  bool may_call(const std::string& upstream) const;
  // The counts of the execute call running now (reset when a new one started).
  void count_for_this_call();
};

// The answer to one request (channel_requests.cpp). `method` and `target` as the request line
// says; `body` at most the channel's request limit.
boost::asio::awaitable<ChannelAnswer> answer_request(std::shared_ptr<ChannelContext> channel,
                                                     std::string method, std::string target,
                                                     std::string body);
// {"error": {"kind", "message"}} with `status`.
ChannelAnswer error_answer(unsigned status, const std::string& kind, const std::string& message);

}  // namespace sandgate::upstream
