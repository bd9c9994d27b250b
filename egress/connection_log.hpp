#pragma once
// What one sandbox's calls reached through its egress proxy, and what they were refused (issue
// #44): a record per connection, kept by the call that opened it, for the call's result (the
// model sees that a host is not allowed instead of guessing from a timeout). Metadata only:
// method, host, port, how it went and why, bytes each way, the name of the secret applied.
// Bounded: kPerCall records of a call (the rest counted), the last kCallsKept calls. Thread-safe:
// relays write on their strand, the call's result reads from its own.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sandgate::egress {

class ConnectionLog {
 public:
  static constexpr std::size_t kPerCall = 50;
  static constexpr std::size_t kCallsKept = 4;

  struct Entry {
    std::uint64_t call = 0;
    std::string method;  // CONNECT or the plain request's (the last one, through a termination)
    std::string host;
    std::uint16_t port = 0;
    std::string outcome = "open";  // open, relayed, refused, capped, failed
    std::string reason;            // why it was refused or ended, when not simply relayed
    std::string secret;            // the name of the secret applied, if any (never its value)
    std::uint64_t bytes_up = 0, bytes_down = 0;
  };
  struct CallReport {
    std::vector<Entry> entries;
    std::size_t more = 0;  // records beyond kPerCall, not kept
  };

  // A new record for a connection of call `call`; null when the call has its kPerCall already.
  std::shared_ptr<Entry> open(std::uint64_t call, const std::string& method,
                              const std::string& host, std::uint16_t port);
  // Changes a record (from open()) under the log's lock; a null record is ignored.
  template <class Change>
  void update(const std::shared_ptr<Entry>& entry, Change&& change) {
    if (!entry) return;
    std::lock_guard lock(mutex_);
    change(*entry);
  }
  CallReport of_call(std::uint64_t call) const;

 private:
  struct Call {
    std::uint64_t number = 0;
    std::vector<std::shared_ptr<Entry>> entries;
    std::size_t more = 0;
  };
  mutable std::mutex mutex_;
  std::deque<Call> calls_;  // oldest first
};

}  // namespace sandgate::egress
