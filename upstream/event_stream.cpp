#include "upstream/event_stream.hpp"

#include <stdexcept>

namespace sandgate::upstream {

std::vector<std::string> EventStream::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (char c : bytes) {
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line_done(events);
      continue;
    }
    if (line_.size() >= max_event_bytes_)
      throw std::length_error("an event stream line passed the bound");
    line_.push_back(c);
  }
  return events;
}

void EventStream::line_done(std::vector<std::string>& events) {
  std::string line;
  line.swap(line_);
  if (line.empty()) {  // the blank line: the event is complete
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  std::string_view field(line);
  std::string_view value;
  if (auto colon = field.find(':'); colon != std::string_view::npos) {
    value = field.substr(colon + 1);
    field = field.substr(0, colon);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field != "data") return;  // event, id, retry and unknown fields carry nothing for MCP
  if (data_.size() + value.size() + 1 > max_event_bytes_)
    throw std::length_error("an event passed the bound");
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

}  // namespace sandgate::upstream
