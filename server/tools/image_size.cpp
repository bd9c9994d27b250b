#include "image_size.hpp"

namespace sandgate::server {

namespace {

std::uint32_t byte_at(std::string_view b, std::size_t i) {
  return static_cast<unsigned char>(b[i]);
}
std::uint32_t big16(std::string_view b, std::size_t i) {
  return byte_at(b, i) << 8 | byte_at(b, i + 1);
}
std::uint32_t little16(std::string_view b, std::size_t i) {
  return byte_at(b, i) | byte_at(b, i + 1) << 8;
}
std::uint32_t little24(std::string_view b, std::size_t i) {
  return little16(b, i) | byte_at(b, i + 2) << 16;
}
std::uint32_t big32(std::string_view b, std::size_t i) {
  return big16(b, i) << 16 | big16(b, i + 2);
}

std::optional<ImageSize> sized(std::uint32_t width, std::uint32_t height) {
  if (width == 0 || height == 0) return std::nullopt;
  return ImageSize{width, height};
}

// Signature (8), then the IHDR chunk: length 13 (4), "IHDR" (4), width (4), height (4).
std::optional<ImageSize> png(std::string_view b) {
  if (b.size() < 24 || big32(b, 8) != 13 || b.substr(12, 4) != "IHDR") return std::nullopt;
  return sized(big32(b, 16), big32(b, 20));
}

// "GIF8?a", then the logical screen's width and height (little-endian 16 bits each).
std::optional<ImageSize> gif(std::string_view b) {
  if (b.size() < 10) return std::nullopt;
  return sized(little16(b, 6), little16(b, 8));
}

// Markers from SOI on; the first start-of-frame (SOF0-15 but DHT, JPG and DAC) holds the size:
// length (2), precision (1), height (2), width (2).
std::optional<ImageSize> jpeg(std::string_view b) {
  std::size_t i = 2;
  while (i + 4 <= b.size()) {
    if (byte_at(b, i) != 0xff) return std::nullopt;
    std::uint32_t marker = byte_at(b, i + 1);
    if (marker == 0xff) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {  // no length follows
      i += 2;
      continue;
    }
    if (marker == 0xd9 || marker == 0xda) return std::nullopt;  // end, or scan data before a frame
    std::uint32_t length = big16(b, i + 2);
    if (length < 2) return std::nullopt;
    const bool frame =
        marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (frame) {
      if (length < 7 || i + 9 > b.size()) return std::nullopt;
      return sized(big16(b, i + 7), big16(b, i + 5));
    }
    i += 2 + length;
  }
  return std::nullopt;
}

// "RIFF" size "WEBP", then the first chunk (its data from byte 20): a lossy frame (VP8), a
// lossless one (VP8L) or the extended header (VP8X) with the canvas size.
std::optional<ImageSize> webp(std::string_view b) {
  if (b.size() < 30) return std::nullopt;
  std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {
    // Frame tag (3), start code 9d 01 2a (3), then 14-bit width and height.
    if (byte_at(b, 23) != 0x9d || byte_at(b, 24) != 0x01 || byte_at(b, 25) != 0x2a)
      return std::nullopt;
    return sized(little16(b, 26) & 0x3fff, little16(b, 28) & 0x3fff);
  }
  if (chunk == "VP8L") {
    // Signature 0x2f, then width - 1 and height - 1 in 14 bits each, least significant first.
    if (byte_at(b, 20) != 0x2f) return std::nullopt;
    std::uint32_t bits =
        byte_at(b, 21) | byte_at(b, 22) << 8 | byte_at(b, 23) << 16 | byte_at(b, 24) << 24;
    return sized((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1);
  }
  if (chunk == "VP8X") {
    // Flags (4), then canvas width - 1 and height - 1 in 24 bits each.
    return sized(little24(b, 24) + 1, little24(b, 27) + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ImageSize> declared_image_size(std::string_view bytes, std::string_view mime) {
  if (mime == "image/png") return png(bytes);
  if (mime == "image/gif") return gif(bytes);
  if (mime == "image/jpeg") return jpeg(bytes);
  if (mime == "image/webp") return webp(bytes);
  return std::nullopt;
}

}  // namespace sandgate::server
