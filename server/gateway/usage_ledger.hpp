#pragma once
// The gateway's usage ledger (--ledger, issue #28): opened at start (in --state-dir, or the
// PostgreSQL database replicas share), fed by the registry's sessions through a writer on a
// thread of its own, and stopped — after a last save — once every session has let go of its
// sandbox. The tenants' budgets count what it saves.
#include <functional>
#include <memory>
#include <string>

#include "ledger/budgets.hpp"
#include "ledger/usage_writer.hpp"
#include "server/gateway/config.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

class UsageLedger {
 public:
  // With --ledger off, or without --state-dir, nothing is written (said in the log): usage is
  // kept in memory, where tenant budgets count from this start on. Throws std::runtime_error
  // saying why the ledger cannot be used: the gateway does not start, and a file that is not a
  // sandgate ledger is left as it is. A tenant's budgets come with its calls (its terms).
  // A tenant's label on the spend metric (a bounded set).
  using SpendLabel = std::function<std::string(const std::string& tenant)>;
  static std::unique_ptr<UsageLedger> open(const Config& config, session::Registry& registry,
                                           Metrics& metrics, SpendLabel spend_label);
  ~UsageLedger();
  UsageLedger(const UsageLedger&) = delete;
  UsageLedger& operator=(const UsageLedger&) = delete;

  // A last save, then the writer's thread ends; the registry is not asked again. Idempotent.
  void stop();

 private:
  UsageLedger(std::shared_ptr<ledger::UsageWriter> writer, std::shared_ptr<ledger::Budgets> budgets)
      : writer_(std::move(writer)), budgets_(std::move(budgets)) {}
  std::shared_ptr<ledger::UsageWriter> writer_;
  std::shared_ptr<ledger::Budgets> budgets_;
  bool lost_told_ = false;
  bool released_ = false;
};

}  // namespace sandgate::server
