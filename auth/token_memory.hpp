#pragma once
// What the gateway remembers about tokens it has judged, by their SHA-256 (never the token):
// at most `capacity` entries, each until its own expiry. When full, the entry used least
// recently goes, one at a time: a burst of new tokens pushes out the idle ones, never every
// token at once (clearing the whole memory made every client's token be verified again).
// Not thread-safe: the owner locks.
#include <chrono>
#include <cstddef>
#include <cstring>
#include <list>
#include <unordered_map>
#include <utility>

#include "auth/token_store.hpp"

namespace sandgate::auth {

template <class Value>
class TokenMemory {
 public:
  using Clock = std::chrono::system_clock;

  explicit TokenMemory(std::size_t capacity) : capacity_(capacity) {}

  // The value remembered for this digest and not expired at `now`; null otherwise. A hit
  // counts as a use. Valid until the next call that changes the memory.
  const Value* find(const Digest& digest, Clock::time_point now) {
    auto it = index_.find(digest);
    if (it == index_.end()) return nullptr;
    if (it->second->expires <= now) {
      order_.erase(it->second);
      index_.erase(it);
      return nullptr;
    }
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }

  void remember(const Digest& digest, Value value, Clock::time_point expires) {
    if (capacity_ == 0) return;
    if (auto it = index_.find(digest); it != index_.end()) {
      it->second->value = std::move(value);
      it->second->expires = expires;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    if (index_.size() >= capacity_) {
      index_.erase(order_.back().digest);
      order_.pop_back();
    }
    order_.push_front(Entry{digest, std::move(value), expires});
    index_.emplace(digest, order_.begin());
  }

  void forget(const Digest& digest) {
    if (auto it = index_.find(digest); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
  }

  std::size_t size() const { return index_.size(); }

 private:
  struct Entry {
    Digest digest;
    Value value;
    Clock::time_point expires;
  };
  struct DigestHash {
    // A SHA-256's first bytes are as good a hash as any.
    std::size_t operator()(const Digest& d) const {
      std::size_t h;
      std::memcpy(&h, d.data(), sizeof h);
      return h;
    }
  };

  const std::size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<Digest, typename std::list<Entry>::iterator, DigestHash> index_;
};

}  // namespace sandgate::auth
