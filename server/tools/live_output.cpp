#include "live_output.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cmath>

#include "common/utf8.hpp"
#include "terminal_safe.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using sandbox::OutputStream;

namespace {

// Kept free of text for the line that counts what was left out.
constexpr std::size_t kNotShownReserve = 64;

// How many bytes at the end of `bytes` are the start of a character whose rest has not been
// read yet (0 when it ends on a whole character, or on bytes that will never be one).
std::size_t unfinished_tail(std::string_view bytes) {
  for (std::size_t k = 1; k <= std::min<std::size_t>(3, bytes.size()); ++k) {
    auto c = static_cast<unsigned char>(bytes[bytes.size() - k]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > k ? k : 0;
  }
  return 0;
}

std::size_t char_length(unsigned char lead) {
  return lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}

std::size_t index_of(OutputStream which) {
  return which == OutputStream::err ? 1 : 0;
}

}  // namespace

LiveOutput::LiveOutput(std::shared_ptr<CallEvents> events, asio::any_io_executor executor)
    : events_(std::move(events)), timer_(std::move(executor)), started_(Clock::now()) {}

sandbox::OutputObserver LiveOutput::observer() {
  return [self = shared_from_this()](OutputStream which, std::string_view bytes) {
    self->observe(which, bytes);
  };
}

std::size_t LiveOutput::room_locked() const {
  const std::size_t limit = kMessageBytes - kNotShownReserve;
  return text_.size() < limit ? limit - text_.size() : 0;
}

void LiveOutput::observe(OutputStream which, std::string_view bytes) {
  std::lock_guard lock(mutex_);
  if (finished_ || bytes.empty()) return;
  std::string& partial = partial_[index_of(which)];
  const std::size_t room = room_locked();
  if (room == 0) {
    not_shown_ += partial.size() + bytes.size();
    partial.clear();
  } else {
    // Only what can be shown is looked at (a flood's 64 KiB reads are mostly counted); the
    // margin covers a character cut at the bound.
    std::string chunk = std::move(partial);
    partial.clear();
    const std::size_t looked_at = std::min(bytes.size(), room + 8);
    chunk.append(bytes.substr(0, looked_at));
    std::size_t unseen = bytes.size() - looked_at;
    if (unseen == 0) {
      std::size_t tail = unfinished_tail(chunk);
      partial.assign(chunk, chunk.size() - tail, tail);
      chunk.resize(chunk.size() - tail);
    } else {
      not_shown_ += unseen;
    }
    append_locked(which, terminal_safe(sanitize_utf8(chunk), after_cr_[index_of(which)]));
  }
  schedule_locked();
}

void LiveOutput::append_locked(OutputStream which, std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t length =
        std::min(char_length(static_cast<unsigned char>(text[at])), text.size() - at);
    const bool new_line = which != last_stream_ && !line_start_;
    const bool mark = which == OutputStream::err && (line_start_ || new_line);
    // The gateway's own lines start with '[' ("[stderr] ", "[… N bytes not shown live]"): a
    // program's line that does is shown after a backslash, so it cannot pass for one of them.
    // (The start of a message counts as the start of a line: it is read on its own.)
    const bool escape = (line_start_ || new_line || text_.empty()) && !mark && text[at] == '[';
    const std::size_t needed =
        length + (new_line ? 1 : 0) + (mark ? kStderrMark.size() : 0) + (escape ? 1 : 0);
    if (needed > room_locked()) break;
    if (new_line) text_ += '\n';
    if (mark) text_ += kStderrMark;
    if (escape) text_ += '\\';
    text_.append(text.substr(at, length));
    line_start_ = text[at] == '\n';
    last_stream_ = which;
    at += length;
  }
  not_shown_ += text.size() - at;
}

void LiveOutput::schedule_locked() {
  if (scheduled_ || finished_) return;
  scheduled_ = true;
  // The timer is armed on its executor; this may run on the sandbox's I/O thread.
  asio::post(timer_.get_executor(), [self = shared_from_this()] {
    Clock::time_point when;
    {
      std::lock_guard lock(self->mutex_);
      when = std::max(self->last_sent_ + kMinGap, Clock::now() + kGather);
    }
    self->timer_.expires_at(when);
    self->timer_.async_wait([self](boost::system::error_code) {
      std::lock_guard lock(self->mutex_);
      self->scheduled_ = false;
      if (!self->finished_) self->send_locked();
    });
  });
}

double LiveOutput::next_progress_locked() {
  auto elapsed = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
  last_progress_ = std::max(std::floor(elapsed), last_progress_ + 1);
  return last_progress_;
}

void LiveOutput::send_locked() {
  if (text_.empty() && not_shown_ == 0) return;
  std::string message = std::move(text_);
  text_.clear();
  if (not_shown_ > 0) {
    if (!message.empty() && message.back() != '\n') message += '\n';
    message += "[… " + std::to_string(not_shown_) + " bytes not shown live]\n";
    not_shown_ = 0;
    line_start_ = true;
  }
  // A stderr line that goes on in the next message is marked there again.
  if (last_stream_ == OutputStream::err) line_start_ = true;
  last_sent_ = Clock::now();
  // Under the lock: the counter's order is the order the events see.
  events_->progress(next_progress_locked(), std::nullopt, std::move(message));
}

void LiveOutput::tick(std::string message) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  events_->progress(next_progress_locked(), std::nullopt, std::move(message));
}

void LiveOutput::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  // A character still waiting for its end will not get it: shown as a replacement character.
  for (OutputStream which : {OutputStream::out, OutputStream::err}) {
    std::string& partial = partial_[index_of(which)];
    if (!partial.empty()) append_locked(which, sanitize_utf8(partial));
    partial.clear();
  }
  send_locked();
  finished_ = true;
}

}  // namespace sandgate::server
