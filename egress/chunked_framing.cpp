#include "egress/chunked_framing.hpp"

#include <algorithm>

namespace sandgate::egress {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::size_t ChunkedFraming::feed(const char* data, std::size_t n) {
  std::size_t i = 0;
  while (i < n && state_ != State::done && state_ != State::malformed) {
    const char c = data[i];
    switch (state_) {
      case State::size: {
        ++line_;
        int digit = hex_value(c);
        if (digit >= 0) {
          if (size_ >> 56) {  // beyond any body the caps would let through
            state_ = State::malformed;
            return i;
          }
          size_ = size_ * 16 + static_cast<std::uint64_t>(digit);
          size_digits_ = true;
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::extension;
        } else if (c == '\r') {
          state_ = State::size_lf;
        } else {
          state_ = State::malformed;
          return i;
        }
        ++i;
        break;
      }
      case State::extension:
        ++line_;
        if (c == '\r') state_ = State::size_lf;
        ++i;
        break;
      case State::size_lf:
        if (c != '\n' || !size_digits_) {
          state_ = State::malformed;
          return i;
        }
        ++i;
        line_ = 0;
        if (size_ == 0) {
          state_ = State::trailer;
        } else {
          left_ = size_;
          state_ = State::data;
        }
        size_ = 0;
        size_digits_ = false;
        break;
      case State::data: {
        std::size_t take = static_cast<std::size_t>(
            std::min<std::uint64_t>(left_, static_cast<std::uint64_t>(n - i)));
        i += take;
        left_ -= take;
        if (left_ == 0) state_ = State::data_cr;
        break;
      }
      case State::data_cr:
        if (c != '\r') {
          state_ = State::malformed;
          return i;
        }
        state_ = State::data_lf;
        ++i;
        break;
      case State::data_lf:
        if (c != '\n') {
          state_ = State::malformed;
          return i;
        }
        state_ = State::size;
        ++i;
        break;
      case State::trailer:
        if (c == '\r') {
          state_ = State::trailer_lf;
        } else {
          ++line_;
          ++trailers_;
        }
        ++i;
        break;
      case State::trailer_lf:
        if (c != '\n') {
          state_ = State::malformed;
          return i;
        }
        ++i;
        // An empty line ends the trailers, and the body.
        state_ = line_ == 0 ? State::done : State::trailer;
        line_ = 0;
        break;
      default:
        break;
    }
    if (line_ > kMaxLine || trailers_ > kMaxTrailers) {
      state_ = State::malformed;
      return i;
    }
  }
  return i;
}

}  // namespace sandgate::egress
