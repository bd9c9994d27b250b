#pragma once
// Saves metered usage off the request path, on a thread of its own. Sessions hand over the final
// totals of sandboxes that end (put); every `interval` the writer asks for the live sandboxes'
// totals (the collect hook) and saves everything in one transaction. Nothing waits on the disk
// but this thread.
//
// A save that fails keeps its records for the next (a stretch's newer totals replace its older
// ones, so what waits is bounded by the stretches there are, not by how long the store is out).
// stop() saves once more: nothing handed over before it is lost. What a SIGKILL loses is what
// was metered since the last save began: at most `interval` and one save's time.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ledger/ledger_store.hpp"
#include "ledger/usage_record.hpp"

namespace sandgate::ledger {

// Where a session's ended sandboxes' final records go.
class UsageSink {
 public:
  virtual ~UsageSink() = default;
  virtual void put(UsageRecord record) = 0;
};

class UsageWriter final : public UsageSink {
 public:
  using Collect = std::function<std::vector<UsageRecord>()>;
  // How a save went, for the gateway's log and metrics (the ledger logs nothing itself).
  struct SaveOutcome {
    bool saved = false;
    std::size_t records = 0;
    std::string error;  // when not saved
  };
  using Observer = std::function<void(const SaveOutcome&)>;

  // At most `max_pending` stretches wait for a save (about 200 bytes each): a store out for a
  // long time with sandboxes coming and going must not grow the gateway's memory without bound.
  // Beyond it a new stretch's record is dropped and counted (dropped()).
  static constexpr std::size_t kMaxPending = 100'000;
  UsageWriter(std::shared_ptr<LedgerStore> store, std::chrono::milliseconds interval,
              std::size_t max_pending = kMaxPending);
  ~UsageWriter() override;
  UsageWriter(const UsageWriter&) = delete;
  UsageWriter& operator=(const UsageWriter&) = delete;

  // Starts the thread. `collect` is called on it, outside the writer's locks, and must stay
  // callable until stop() returns.
  void start(Collect collect, Observer observer = {});
  void put(UsageRecord record) override;
  // Collects and saves now, on the caller's thread; whether everything was saved.
  bool save_now();
  // Ends the thread after a last collect and save. Idempotent.
  void stop();
  // Records waiting for a save that succeeds.
  std::size_t pending() const;
  // Records of new stretches dropped because max_pending were waiting.
  std::size_t dropped() const;

 private:
  void run();
  // Keeps `record` unless a later total of its stretch is already waiting.
  void merge_locked(UsageRecord record);

  const std::shared_ptr<LedgerStore> store_;
  const std::chrono::milliseconds interval_;
  const std::size_t max_pending_;
  Collect collect_;
  Observer observer_;
  std::mutex save_order_;  // one collect-and-save at a time
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, UsageRecord> pending_;  // by stretch
  std::size_t dropped_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sandgate::ledger
