#pragma once
// The pixel size an image file declares in its header (PNG, JPEG, GIF, WebP), read as hostile
// bytes: a file of a few hundred bytes can declare a picture of billions of pixels, which a
// client decoding it as an image would try to allocate. Only what the header says is read; the
// image is never decoded.
#include <cstdint>
#include <optional>
#include <string_view>

namespace sandgate::server {

struct ImageSize {
  std::uint32_t width = 0, height = 0;
};

// Returned files are images to the model up to this side (what the model providers' APIs
// accept); larger, or with a header that cannot be read, they are returned as plain files.
inline constexpr std::uint32_t kReturnedImageMaxSide = 8000;

// The size declared by an image of `mime` (image/png, image/jpeg, image/gif, image/webp);
// nullopt when the header is cut short, malformed or of another type.
std::optional<ImageSize> declared_image_size(std::string_view bytes, std::string_view mime);

}  // namespace sandgate::server
