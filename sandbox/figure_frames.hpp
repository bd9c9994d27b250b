#pragma once
// Figures (PNG images) a Python program hands to the gateway, and the frames they cross the
// sandbox boundary in: 16 bytes — magic "SGIM", the call's sequence number, the PNG's length,
// a reason — then the PNG. A zero length stands for a figure the sandbox side counted but did
// not send; the reason says why (over the count, over the bytes). Every byte comes from the
// sandbox: a frame longer than the per-call bytes breaks the channel before anything is read
// into memory, and an image is kept only if it is a PNG whose header gives a size within the
// limits.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::sandbox {

struct FigureLimits {
  std::size_t max_count = 8;        // images per call
  std::uint32_t max_side = 2000;    // pixels, width and height
  std::size_t max_bytes = 4 << 20;  // PNG bytes per call, all images together
};

struct Image {
  std::string png;
  std::uint32_t width = 0, height = 0;
};

namespace figure_wire {
inline constexpr std::uint32_t kImageMagic = 0x4D494753;  // "SGIM"
inline constexpr std::size_t kHeaderSize = 16;
enum class Unsent : std::uint32_t { over_count = 0, over_bytes = 1 };
}  // namespace figure_wire

// A PNG's width and height from its signature and IHDR chunk; nullopt when it is not a PNG.
std::optional<std::pair<std::uint32_t, std::uint32_t>> png_size(const std::string& png);

// Keeps one call's figures within the limits and counts what it drops, and why.
class FigureCollector {
 public:
  explicit FigureCollector(FigureLimits limits = {}) : limits_(limits) {}
  // Whether a figure of `length` bytes could still be kept; if not, it is counted as dropped
  // now and its bytes need not be held at all.
  bool admit(std::size_t length);
  void add(std::string png);
  void add_unsent(std::uint32_t reason);  // a figure the sandbox side did not send
  void drop_malformed() { malformed_ = true; }
  std::vector<Image> take_images() { return std::move(images_); }
  // What was dropped, in words for the model; empty when nothing was.
  std::string note() const;

 private:
  FigureLimits limits_;
  std::vector<Image> images_;
  std::size_t kept_bytes_ = 0;
  std::size_t over_count_ = 0, too_large_ = 0, over_side_ = 0, over_bytes_ = 0, not_png_ = 0;
  bool malformed_ = false;
};

// Parses a channel's bytes into image frames, wherever the reads happen to split them. It
// holds its state between reads, so a read cancelled at a call's timeout loses nothing and the
// interrupt's read goes on from there. A header that is not an image frame's, or one whose
// length is over the cap, stops it: the caller takes it (the interpreter's reply, or a breach
// of its protocol) or gives up (garbage on a fresh process's channel).
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}
  // How many bytes to read next: never past the current header or payload, so that a reader
  // of the interpreter's channel stops exactly after the reply. 0 while a header waits.
  std::size_t wanted() const;
  // Takes up to n bytes and returns how many it took (fewer once a header that is not an image
  // frame's is complete). Frames of `seq` go to `sink`; others (or all, without a sink) are
  // read and dropped.
  std::size_t take(const char* data, std::size_t n, std::uint32_t seq, FigureCollector* sink);
  // The complete header that was not an image frame's, if any; taking it lets reading go on.
  std::optional<std::array<char, figure_wire::kHeaderSize>> take_other();

 private:
  void start_frame(std::uint32_t seq, FigureCollector* sink);

  std::size_t max_frame_bytes_;
  std::array<char, figure_wire::kHeaderSize> header_{};
  std::size_t header_filled_ = 0;
  bool other_ = false;  // header_ holds a header that is not an image frame's
  bool in_payload_ = false;
  bool keep_ = false;
  std::uint32_t reason_ = 0;
  std::uint32_t payload_left_ = 0;
  std::string payload_;
};

}  // namespace sandgate::sandbox
