#pragma once
// Where a chunked message body ends (RFC 9112 7.1), found while its bytes are relayed as they
// are (issue #44): a terminated TLS connection is kept alive across requests, so the relay must
// know where one answer ends and must not pass on what follows it. Bounded: a chunk-size line
// (with its extensions) and each trailer line within kMaxLine, the trailers within kMaxTrailers.
#include <cstddef>
#include <cstdint>

namespace sandgate::egress {

class ChunkedFraming {
 public:
  static constexpr std::size_t kMaxLine = 4096;
  static constexpr std::size_t kMaxTrailers = 16 * 1024;

  // How many of these `n` bytes belong to the body (all of them until its end; fewer when it
  // ends inside them). Once malformed() or done(), takes nothing more.
  std::size_t feed(const char* data, std::size_t n);
  bool done() const { return state_ == State::done; }
  bool malformed() const { return state_ == State::malformed; }

 private:
  enum class State {
    size,
    extension,
    size_lf,
    data,
    data_cr,
    data_lf,
    trailer,
    trailer_lf,
    done,
    malformed
  };
  State state_ = State::size;
  std::uint64_t size_ = 0;
  bool size_digits_ = false;
  std::uint64_t left_ = 0;  // of the current chunk's data
  std::size_t line_ = 0;    // bytes of the current line so far
  std::size_t trailers_ = 0;
};

}  // namespace sandgate::egress
