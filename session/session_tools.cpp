// A session's side of code mode (issue #45): a tool channel for each sandbox made for a tenant
// with upstreams, charging each call's price to that sandbox's spend and bounded by its calls.
#include <boost/asio/any_io_executor.hpp>

#include "session.hpp"
#include "session_id.hpp"
#include "upstream/tool_channel.hpp"

namespace sandgate::session {
namespace {

// The channel's view of its sandbox: the running call and its deadline, and the meter a tool
// call's price is charged to. Weak: a channel never keeps an ended sandbox alive.
class SandboxToolAccount final : public upstream::ToolAccount {
 public:
  // `tally` null: the session records no usage (no ledger).
  SandboxToolAccount(std::weak_ptr<sandbox::Sandbox> sandbox, std::shared_ptr<ToolUseTally> tally)
      : sandbox_(std::move(sandbox)), tally_(std::move(tally)) {}
  std::uint64_t call_number() const override {
    auto sandbox = sandbox_.lock();
    return sandbox ? sandbox->calls_started() : 0;
  }
  std::chrono::steady_clock::time_point call_deadline() const override {
    auto sandbox = sandbox_.lock();
    return sandbox ? sandbox->running_call_deadline()
                   : std::chrono::steady_clock::time_point::min();
  }
  bool charge(double usd) override {
    auto sandbox = sandbox_.lock();
    return sandbox && sandbox->charge_usd(usd);
  }
  void record_call(const std::string& upstream, double usd) override {
    if (tally_) tally_->add(upstream, usd);
  }

 private:
  std::weak_ptr<sandbox::Sandbox> sandbox_;
  std::shared_ptr<ToolUseTally> tally_;
};

}  // namespace

void Session::allow_tools(std::shared_ptr<const upstream::ChannelGrant> grant) {
  std::lock_guard lock(mutex_);
  tools_ = std::move(grant);
}

void Session::start_tools(const std::shared_ptr<sandbox::Sandbox>& fresh,
                          const boost::asio::any_io_executor& executor) {
  std::shared_ptr<const upstream::ChannelGrant> grant;
  std::shared_ptr<ToolUseTally> tally;
  {
    std::lock_guard lock(mutex_);
    grant = tools_;
    if (auto log = usage_logs_.find(fresh.get()); log != usage_logs_.end())
      tally = log->second.tool_use();
  }
  UniqueFd listener = fresh->take_tool_listener();
  if (!grant || !listener) return;
  upstream::ChannelLabels labels{tenant_, std::string(log_prefix(id_)), fresh->id()};
  auto channel = upstream::ToolChannel::start(
      executor, std::move(listener), *grant,
      std::make_shared<SandboxToolAccount>(fresh, std::move(tally)), std::move(labels));
  fresh->when_ended([channel] { channel->stop(); });
}

}  // namespace sandgate::session
