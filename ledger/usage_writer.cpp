#include "ledger/usage_writer.hpp"

#include <exception>
#include <utility>

namespace sandgate::ledger {

UsageWriter::UsageWriter(std::shared_ptr<LedgerStore> store, std::chrono::milliseconds interval,
                         std::size_t max_pending)
    : store_(std::move(store)), interval_(interval), max_pending_(max_pending) {}

UsageWriter::~UsageWriter() {
  stop();
}

void UsageWriter::start(Collect collect, Observer observer) {
  collect_ = std::move(collect);
  observer_ = std::move(observer);
  thread_ = std::thread([this] { run(); });
}

void UsageWriter::merge_locked(UsageRecord record) {
  auto [it, added] = pending_.try_emplace(record.stretch, record);
  if (added) {
    if (pending_.size() > max_pending_) {
      pending_.erase(it);
      ++dropped_;
    }
    return;
  }
  // A live total collected before the sandbox's final one was put may arrive after it (even in
  // the same millisecond): a final record is never replaced by a live one; otherwise the later
  // end wins, never the later arrival.
  const UsageRecord& kept = it->second;
  if (kept.final && !record.final) return;
  if ((record.final && !kept.final) || record.ended >= kept.ended) it->second = std::move(record);
}

void UsageWriter::put(UsageRecord record) {
  std::lock_guard lock(mutex_);
  merge_locked(std::move(record));
}

std::size_t UsageWriter::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

std::size_t UsageWriter::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

bool UsageWriter::save_now() {
  std::lock_guard order(save_order_);
  std::vector<UsageRecord> live;
  try {
    if (collect_) live = collect_();
  } catch (const std::exception&) {
    // What could be collected waits for the next pass; the final records put are saved.
  }
  std::map<std::string, UsageRecord> batch;
  {
    std::lock_guard lock(mutex_);
    for (auto& r : live) merge_locked(std::move(r));
    batch.swap(pending_);
  }
  if (batch.empty()) {
    // Nothing to save, but the store still hears the tick: budgets kept across replicas give
    // back what quiet tenants hold (an empty batch writes nothing).
    try {
      store_->save({});
    } catch (const std::exception&) {
    }
    return true;
  }
  std::vector<UsageRecord> records;
  records.reserve(batch.size());
  for (const auto& [stretch, record] : batch) records.push_back(record);
  SaveOutcome outcome;
  outcome.records = records.size();
  try {
    store_->save(records);
    outcome.saved = true;
  } catch (const std::exception& e) {
    outcome.error = e.what();
    // Back into the queue, where a newer total put meanwhile still wins.
    std::lock_guard lock(mutex_);
    for (auto& [stretch, record] : batch) merge_locked(std::move(record));
  }
  if (observer_) observer_(outcome);
  return outcome.saved;
}

void UsageWriter::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    save_now();
    lock.lock();
  }
}

void UsageWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  save_now();
}

}  // namespace sandgate::ledger
