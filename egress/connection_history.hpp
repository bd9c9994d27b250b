#pragma once
// Every tenant's recent connections through the egress proxy, for the operator (issue #44:
// `sandgate connections`): the same metadata as the call's network report and the
// `egress_connection` log line — when, which session, method, host, port, how it went and why,
// bytes each way, the name of the secret applied — never a value, a path or a body.
//
// In memory, per replica, lost at restart (the log lines are the durable record). Bounded: the
// last kPerTenant connections of each tenant, none older than kKept, kTotal in all (past that,
// the tenant holding the most loses its oldest first, so that a busy tenant cannot push out the
// others' records). Thread-safe: relays add on their strands, the admin channel reads.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "egress/relay.hpp"

namespace sandgate::egress {

class ConnectionHistory {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kPerTenant = 2000;
  // About 300 bytes each: at most ~6 MiB of the gateway's memory reserve, whatever tenants send.
  static constexpr std::size_t kTotal = 20000;
  static constexpr std::chrono::hours kKept{24};

  struct Record {
    std::chrono::system_clock::time_point started;  // wall clock, for the operator's eyes
    Clock::time_point ended{};                      // set by add(): what the period counts from
    std::uint64_t duration_ms = 0;
    std::string tenant;
    std::string session;  // the session's log prefix
    std::string method;   // CONNECT or the plain request's
    std::string host;     // "-" when the request never named one
    std::uint16_t port = 0;
    std::string outcome;  // relayed, refused, capped, failed
    std::string reason;   // why it was refused or ended, when not simply relayed
    std::string secret;   // the name of the secret applied, if any
    std::uint64_t bytes_up = 0, bytes_down = 0;
  };

  struct Query {
    std::string tenant;   // empty: every tenant's
    std::string session;  // a log prefix; empty: every session's
    // Only those that ended this recently; zero: all that are kept.
    std::chrono::seconds since{0};
  };

  // Records a connection that ended at `now`.
  void add(Record record, Clock::time_point now = Clock::now());
  // The same, from what the relay tells its observer (relay.hpp).
  void add(const ConnectionEnd& end);
  // What `query` names, oldest first (by when each ended).
  std::vector<Record> find(const Query& query, Clock::time_point now = Clock::now()) const;
  std::size_t size() const;

 private:
  void forget_expired_locked(Clock::time_point now);
  void trim_busiest_locked();

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::deque<Record>> by_tenant_;  // each oldest first
  std::size_t total_ = 0;
  Clock::time_point last_sweep_{};
};

}  // namespace sandgate::egress
