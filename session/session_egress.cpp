// A session's side of egress (issue #30): a relay for each sandbox made for a tenant with an
// allow-list, charging the bytes it relays to that sandbox's spend.
#include <boost/asio/any_io_executor.hpp>

#include "egress/relay.hpp"
#include "session.hpp"
#include "session_id.hpp"

namespace sandgate::session {
namespace {

// The relay's view of its sandbox: the meter its bytes are charged to and the count of calls
// its per-call cap follows. Weak: a relay never keeps an ended sandbox alive.
class SandboxEgressAccount final : public egress::RelayAccount {
 public:
  explicit SandboxEgressAccount(std::weak_ptr<sandbox::Sandbox> sandbox)
      : sandbox_(std::move(sandbox)) {}
  bool charge(std::uint64_t bytes) override {
    auto sandbox = sandbox_.lock();
    return sandbox && sandbox->charge_egress(bytes);
  }
  std::uint64_t call_number() const override {
    auto sandbox = sandbox_.lock();
    return sandbox ? sandbox->calls_started() : 0;
  }

 private:
  std::weak_ptr<sandbox::Sandbox> sandbox_;
};

}  // namespace

void Session::allow_egress(std::shared_ptr<const egress::TenantEgress> policy,
                           std::shared_ptr<const egress::ProxyConfig> proxy,
                           std::shared_ptr<egress::ConnectionShares> shares,
                           egress::ConnectionObserver observer) {
  std::lock_guard lock(mutex_);
  egress_ = std::move(policy);
  egress_proxy_ = std::move(proxy);
  egress_shares_ = std::move(shares);
  egress_observer_ = std::move(observer);
}

void Session::start_egress(const std::shared_ptr<sandbox::Sandbox>& fresh,
                           const boost::asio::any_io_executor& executor) {
  std::shared_ptr<const egress::TenantEgress> policy;
  std::shared_ptr<const egress::ProxyConfig> proxy;
  std::shared_ptr<egress::ConnectionShares> shares;
  egress::ConnectionObserver observer;
  {
    std::lock_guard lock(mutex_);
    policy = egress_;
    proxy = egress_proxy_;
    shares = egress_shares_;
    observer = egress_observer_;
  }
  UniqueFd listener = fresh->take_egress_listener();
  if (!policy || !proxy || !shares || !listener) return;
  // The session as every other log line names it (ledger, execute): its log prefix.
  egress::RelayLabels labels{tenant_, std::string(log_prefix(id_)), fresh->id()};
  auto log = std::make_shared<egress::ConnectionLog>();
  {
    std::lock_guard lock(mutex_);
    egress_log_ = log;
  }
  auto relay = egress::Relay::start(executor, std::move(listener), std::move(policy),
                                    std::make_shared<SandboxEgressAccount>(fresh), std::move(proxy),
                                    std::move(shares), std::move(labels), std::move(observer),
                                    std::move(log));
  fresh->when_ended([relay] { relay->stop(); });
}

egress::ConnectionLog::CallReport Session::egress_report(std::uint64_t call) const {
  std::shared_ptr<egress::ConnectionLog> log;
  {
    std::lock_guard lock(mutex_);
    log = egress_log_;
  }
  return log ? log->of_call(call) : egress::ConnectionLog::CallReport{};
}

}  // namespace sandgate::session
