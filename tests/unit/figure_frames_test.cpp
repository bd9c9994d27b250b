// The gateway's parsing of figure frames from a sandbox: any split of the bytes, lengths it
// must not trust, and the limits a collector keeps.
#include "sandbox/figure_frames.hpp"

#include <catch2/catch.hpp>
#include <cstring>

using namespace sandgate::sandbox;

namespace {

std::string header(std::uint32_t magic, std::uint32_t seq, std::uint32_t length,
                   std::uint32_t reason = 0) {
  std::uint32_t words[4] = {magic, seq, length, reason};
  return std::string(reinterpret_cast<const char*>(words), sizeof words);
}

std::string png(std::uint32_t width, std::uint32_t height, std::size_t size = 40) {
  auto be = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string bytes =
      std::string("\x89PNG\r\n\x1a\n", 8) + be(13) + "IHDR" + be(width) + be(height);
  bytes.resize(size, '\0');
  return bytes;
}

std::string frame(std::uint32_t seq, const std::string& payload) {
  return header(figure_wire::kImageMagic, seq, static_cast<std::uint32_t>(payload.size())) +
         payload;
}

}  // namespace

TEST_CASE("figure frames: parsed the same however the reads split them", "[unit][figures]") {
  const std::string reply = header(0x50524753, 5, 0, 0);
  const std::string stream = frame(5, png(10, 20)) + frame(4, png(30, 40)) +
                             header(figure_wire::kImageMagic, 5, 0, 0) + frame(5, png(50, 60)) +
                             reply + "after the reply";
  for (std::size_t chunk : {1, 3, 16, 17, 1000}) {
    INFO("chunk " << chunk);
    FrameReader reader(1 << 20);
    FigureCollector figures;
    std::size_t at = 0;
    std::optional<std::array<char, 16>> other;
    while (!other && at < stream.size()) {
      std::size_t n = std::min({chunk, stream.size() - at, reader.wanted()});
      REQUIRE(n > 0);
      at += reader.take(stream.data() + at, n, 5, &figures);
      other = reader.take_other();
    }
    REQUIRE(other);
    CHECK(std::memcmp(other->data(), reply.data(), 16) == 0);
    CHECK(stream.substr(at) == "after the reply");  // never read past the reply
    auto images = figures.take_images();
    REQUIRE(images.size() == 2);  // the frame of call 4 is not this call's
    CHECK(images[0].width == 10);
    CHECK(images[1].height == 60);
    CHECK(figures.note() == "Figures not returned: 1 over the limit of 8 per call.");
  }
}

TEST_CASE("figure frames: a length over the cap stops the reader at its header",
          "[unit][figures]") {
  FrameReader reader(1000);
  FigureCollector figures;
  std::string bytes = header(figure_wire::kImageMagic, 1, 0xFFFFFFFFu) + std::string(64, 'x');
  CHECK(reader.take(bytes.data(), bytes.size(), 1, &figures) == 16);
  CHECK(reader.wanted() == 0);
  CHECK(reader.take_other());
  CHECK(figures.take_images().empty());
}

TEST_CASE("figure frames: the collector keeps PNGs within count, pixels and bytes",
          "[unit][figures]") {
  FigureCollector figures(FigureLimits{3, 100, 240});
  figures.add(png(100, 100, 80));
  figures.add(png(101, 5));  // too wide
  figures.add("GIF89a and more bytes than a PNG header needs to be.............");
  figures.add(png(0, 5));       // no pixels: not a PNG we keep
  figures.add(png(5, 5, 170));  // over the bytes left (160)
  figures.add(png(5, 5, 120));
  figures.add_unsent(static_cast<std::uint32_t>(figure_wire::Unsent::over_bytes));
  figures.add(png(5, 5, 10));  // too short for its header
  figures.add(png(1, 1));
  figures.add(png(1, 1));  // over the count of 3
  figures.drop_malformed();
  auto images = figures.take_images();
  REQUIRE(images.size() == 3);
  CHECK(images[1].png.size() == 120);
  CHECK(figures.note() ==
        "Figures not returned: 1 over the limit of 3 per call; 1 larger than 100x100 pixels; 2 "
        "over the 240 bytes of images per call; 3 not a PNG. The figure channel carried malformed "
        "data; what followed it was ignored.");
}
