#pragma once
// The gateway's end of one persistent interpreter (see inside/interpreters/ for the drivers): the
// pipes the supervisor handed to it at start, and the framing of what crosses them. Every byte
// the interpreter writes is untrusted: replies have a fixed size and are checked.
#include <cstdint>
#include <string>
#include <string_view>

#include "call_io.hpp"
#include "figure_frames.hpp"

namespace sandgate::sandbox {

namespace interpreter_wire {
inline constexpr std::uint32_t kRequestMagic = 0x51524753;  // "SGRQ"
inline constexpr std::uint32_t kReplyMagic = 0x50524753;    // "SGRP"
enum class ReplyKind : std::uint32_t { finished = 0, interrupted = 1 };

// Little-endian, like the hosts sandgate runs on; the drivers pack it explicitly.
struct RequestHeader {
  std::uint32_t magic, seq, code_len, stdin_len;
};
struct Reply {
  std::uint32_t magic, seq, kind;
  std::int32_t value;  // finished: 0, or 1 after an uncaught exception
};
static_assert(sizeof(RequestHeader) == 16 && sizeof(Reply) == 16);
// Python's figures come before the reply on the same channel, as image frames
// (figure_frames.hpp) of the same size of header, told apart by their magic.
static_assert(sizeof(Reply) == figure_wire::kHeaderSize);

std::string request_frame(std::uint32_t seq, std::string_view code, std::string_view stdin_data);
}  // namespace interpreter_wire

struct Interpreter {
  Interpreter(const boost::asio::any_io_executor& executor, std::uint32_t call_id)
      : id(call_id),
        requests(executor),
        replies(executor),
        stdout_pipe(executor),
        stderr_pipe(executor),
        status(executor) {}

  std::uint32_t id;  // the supervisor's name for its init (a call id)
  std::uint32_t next_seq = 1;
  Descriptor requests;  // gateway -> interpreter: request frames
  Descriptor replies;   // interpreter -> gateway: image frames, then one Reply per request
  // Where the reading of `replies` stands: kept across a read cancelled at a call's timeout.
  FrameReader reader{FigureLimits{}.max_bytes};
  Descriptor stdout_pipe, stderr_pipe;
  Descriptor status;  // written once by its init when the interpreter process ends
};

}  // namespace sandgate::sandbox
