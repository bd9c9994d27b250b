#pragma once
// Where hibernated sandboxes' /work archives wait for their session's next call.
//
// One file per session, named by a hash of its id (never the raw id: ids are bearer-ish names
// and must not leak through a directory listing), mode 0400, written to a temporary name,
// fsync'd and renamed so that a crash leaves the old file or the new one, never a torn one.
// Archives move as descriptors (copied inside the kernel from the sandbox's memfd; handed back
// as a read-only descriptor of the file), so the gateway never holds their bytes, and the
// disk I/O runs outside the store's lock: metrics and session ends never wait for an fsync.
// The bytes are opaque: packed and unpacked only inside sandboxes (sandbox/work_archive_*);
// this store never parses them. Bounded in total: storing past `max_bytes` drops the oldest
// archives first (their sessions resume with an empty /work and are told so).
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace sandgate::session {

// Where hibernated archives (and, with an explicit directory, the saved registry) live.
struct StateConfig {
  std::string dir;  // --state-dir; empty: a private directory (default_state_dir), not kept
  std::uint64_t max_bytes = 4096ull << 20;  // --state-max-mb: all tenants' archives together

  bool operator==(const StateConfig&) const = default;
};

class StateStore {
 public:
  // `dir` is created (0700) when missing; `remove_dir_at_end`: the store made it and removes
  // it (with what is left in it) when destroyed. Archives a previous gateway left there are
  // removed, unless `keep_archives`: then they wait for adopt(), which keeps those of the
  // sessions the saved registry brings back. Temporaries (torn writes) are always removed.
  // Throws std::system_error when the directory cannot be used.
  StateStore(std::string dir, std::uint64_t max_bytes, bool remove_dir_at_end,
             bool keep_archives = false);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Told (file name, bytes) of each archive dropped to make room: for the log.
  std::function<void(const std::string&, std::uint64_t)> on_drop;

  // Stores (replaces) the session's archive, of `tenant`. To stay within max_bytes it drops the
  // oldest archive of the tenant that would hold the most (this one counted with what it
  // brings), so no tenant's archives push out those of a tenant holding less. False with
  // `error` when it cannot: larger than max_bytes, not fitting beside what tenants holding less
  // keep, a disk error.
  bool put(const std::string& session_id, const std::string& bytes, std::string& error,
           const std::string& tenant = {});
  // put(), the archive being `size` bytes of `source` from its offset 0.
  bool put(const std::string& session_id, int source, std::uint64_t size, std::string& error,
           const std::string& tenant = {});
  // The session's archive, or nullopt when there is none (never stored, dropped, damaged).
  std::optional<std::string> get(const std::string& session_id);
  // The same, as a read-only descriptor of the stored file (what resuming hands a sandbox:
  // the file is 0400, so not even its owner's uid can reopen it for writing).
  std::optional<UniqueFd> open(const std::string& session_id);
  void remove(const std::string& session_id);
  // After a restart: takes over the archives a previous gateway left for these sessions
  // (regular files of this user; oldest by modification time), removes every other archive,
  // then drops as put() does while over max_bytes. `tenants[i]` is session_ids[i]'s tenant
  // (none given: one tenant). Returns how many were taken over.
  std::size_t adopt(const std::vector<std::string>& session_ids,
                    const std::vector<std::string>& tenants = {});
  bool has(const std::string& session_id) const;

  const std::string& dir() const { return dir_; }
  std::string file_name(const std::string& session_id) const;  // "<hex>.sgz"
  std::uint64_t bytes() const;
  std::size_t count() const;
  std::size_t left_over() const { return left_over_; }  // removed at start (or by adopt)

  // Where the archives' disk I/O (a write and an fsync of up to --work-mb) runs: threads of
  // the store's own, never the gateway's executor threads or the strand that meters sandboxes.
  boost::asio::any_io_executor io_executor() { return io_.get_executor(); }

  // Counters for /metrics.
  std::atomic<std::uint64_t> hibernations{0}, resumes{0}, dropped{0};

 private:
  void remove_locked(const std::string& name);
  // Until `incoming` more bytes of `tenant` fit within max_bytes: drops the oldest archive of
  // the tenant that would hold the most. False when that is `tenant` with nothing left to drop.
  bool make_room_locked(std::uint64_t incoming, const std::string& tenant);
  // The common part of both put()s: room made and `size` bytes reserved under the lock, the
  // file written by `write` outside it, then recorded.
  bool store(const std::string& session_id, std::uint64_t size, const std::string& tenant,
             std::string& error, const std::function<bool(int)>& write);

  std::string dir_;
  int dir_fd_ = -1;
  std::uint64_t max_bytes_;
  bool remove_dir_at_end_;
  std::size_t left_over_ = 0;

  mutable std::mutex mutex_;
  struct Entry {
    std::uint64_t size = 0;
    std::uint64_t order = 0;  // when stored: lower is older
    std::string tenant;
  };
  std::map<std::string, Entry> entries_;  // by file name
  std::uint64_t next_order_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t reserved_ = 0;      // of archives being written: counted against max_bytes
  boost::asio::thread_pool io_{2};  // joined first thing in the destructor
};

// The private directory used when no --state-dir is given: `hibernate.<pid>` (0700) under
// $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/sandgate when it can be made,
// else $TMPDIR or /tmp/sandgate. Such directories of gateways no longer running are removed.
std::string default_state_dir();

}  // namespace sandgate::session
