#pragma once
// A strict, bounded reader of a `text/event-stream` body (the Streamable HTTP response stream):
// the `data:` lines of each event joined with '\n', handed on at the blank line that ends it.
// Comments, `id:`, `event:` and `retry:` are read and dropped (MCP events are all JSON-RPC
// messages; streams are not resumed). The stream comes from an upstream, so a line or an event
// longer than the bound is an error rather than a growing buffer.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::upstream {

class EventStream {
 public:
  explicit EventStream(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  // Feeds the next bytes of the body; returns the data of every event completed by them. Throws
  // std::length_error when a line or an event passes the bound.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  void line_done(std::vector<std::string>& events);

  std::size_t max_event_bytes_;
  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was a CR: a LF right after it ends no second line
};

}  // namespace sandgate::upstream
