#include "chunked_event_sink.hpp"

#include <atomic>

namespace sandgate::server {

std::uint64_t next_event_id() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

}  // namespace sandgate::server
