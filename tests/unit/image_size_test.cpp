// The size an image declares, read from hostile headers, and what a returned image that
// declares too many pixels (or none) becomes.
#include "server/tools/image_size.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "server/tools/file_results.hpp"

using namespace sandgate;
using server::declared_image_size;

namespace {

std::string big32(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}
std::string little16(std::uint32_t v) {
  return {char(v), char(v >> 8)};
}
std::string little24(std::uint32_t v) {
  return {char(v), char(v >> 8), char(v >> 16)};
}

std::string png(std::uint32_t w, std::uint32_t h) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + big32(13) + "IHDR" + big32(w) + big32(h) +
         std::string("\x08\x02\x00\x00\x00", 5) + big32(0);
}
std::string gif(std::uint32_t w, std::uint32_t h) {
  return "GIF89a" + little16(w) + little16(h) + std::string("\xf7\x00\x00", 3);
}
// SOI, an APP0 segment, then SOF0 with the size (height first).
std::string jpeg(std::uint32_t w, std::uint32_t h, char sof = '\xc0') {
  std::string app0 =
      std::string("\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 18);
  std::string frame = std::string("\xff", 1) + sof + std::string("\x00\x11\x08", 3) + char(h >> 8) +
                      char(h) + char(w >> 8) + char(w) + std::string(10, '\0');
  return std::string("\xff\xd8", 2) + app0 + frame;
}
std::string riff(const std::string& chunk, const std::string& data) {
  return "RIFF" + std::string(4, '\0') + "WEBP" + chunk + std::string(4, '\0') + data +
         std::string(16, '\0');
}

}  // namespace

TEST_CASE("an image's declared size is read from its header", "[unit][files]") {
  auto p = declared_image_size(png(640, 480), "image/png");
  REQUIRE(p);
  CHECK((p->width == 640 && p->height == 480));
  auto g = declared_image_size(gif(300, 200), "image/gif");
  REQUIRE(g);
  CHECK((g->width == 300 && g->height == 200));
  auto j = declared_image_size(jpeg(1024, 768), "image/jpeg");
  REQUIRE(j);
  CHECK((j->width == 1024 && j->height == 768));
  auto progressive = declared_image_size(jpeg(64, 65000, '\xc2'), "image/jpeg");
  REQUIRE(progressive);
  CHECK((progressive->width == 64 && progressive->height == 65000));
  // Lossy: frame tag, start code, 14-bit sizes.
  auto lossy = declared_image_size(
      riff("VP8 ", std::string("\x00\x00\x00\x9d\x01\x2a", 6) + little16(400) + little16(300)),
      "image/webp");
  REQUIRE(lossy);
  CHECK((lossy->width == 400 && lossy->height == 300));
  // Lossless: width - 1 and height - 1 packed in 14 bits each.
  std::uint32_t bits = (400 - 1) | (300 - 1) << 14;
  auto lossless = declared_image_size(
      riff("VP8L", std::string("\x2f", 1) + little16(bits & 0xffff) + little16(bits >> 16)),
      "image/webp");
  REQUIRE(lossless);
  CHECK((lossless->width == 400 && lossless->height == 300));
  auto extended = declared_image_size(
      riff("VP8X", std::string(4, '\0') + little24(99999) + little24(49999)), "image/webp");
  REQUIRE(extended);
  CHECK((extended->width == 100000 && extended->height == 50000));
}

TEST_CASE("a cut, malformed or sizeless image header declares no size", "[unit][files]") {
  CHECK_FALSE(declared_image_size(png(640, 480).substr(0, 20), "image/png"));
  CHECK_FALSE(declared_image_size(png(0, 480), "image/png"));
  std::string not_ihdr = png(640, 480);
  not_ihdr.replace(12, 4, "IDAT");
  CHECK_FALSE(declared_image_size(not_ihdr, "image/png"));
  CHECK_FALSE(declared_image_size("GIF89a", "image/gif"));
  // A JPEG whose scan starts before any frame, one cut inside a segment, one of garbage.
  CHECK_FALSE(declared_image_size(std::string("\xff\xd8\xff\xda\x00\x08", 6), "image/jpeg"));
  CHECK_FALSE(declared_image_size(jpeg(10, 10).substr(0, 26), "image/jpeg"));
  CHECK_FALSE(declared_image_size(
      std::string("\xff\xd8\xff\xe0\xff\xff\x00\x00", 8) + std::string(1000, 'x'), "image/jpeg"));
  CHECK_FALSE(declared_image_size(riff("VP8 ", std::string(10, '\0')), "image/webp"));
  CHECK_FALSE(declared_image_size(riff("ANIM", std::string(10, '\0')), "image/webp"));
  CHECK_FALSE(declared_image_size(png(1, 1), "image/tiff"));
}

TEST_CASE("a returned image that declares too many pixels, or no size, comes back as a file",
          "[unit][files]") {
  sandbox::TransferResult returned;
  returned.done = true;
  auto file = [](std::string path, std::string bytes) {
    return sandbox::TransferredFile{std::move(path), sandbox::FileStatus::ok, 0, bytes.size(),
                                    bytes};
  };
  returned.files = {file("ok.png", png(800, 600)), file("bomb.png", png(100000, 100000)),
                    file("bomb.gif", gif(65535, 10)), file("cut.png", png(1, 1).substr(0, 16)),
                    file("edge.jpg", jpeg(server::kReturnedImageMaxSide, 1))};
  nlohmann::json content = nlohmann::json::array();
  auto listed = server::add_returned_files(
      returned, [](const std::string& p) { return "uri:" + p; }, 1 << 20, content);
  REQUIRE(content.size() == 5);
  CHECK(content[0]["type"] == "image");
  for (int i : {1, 2, 3}) {
    INFO(listed[i].dump());
    CHECK(content[i]["type"] == "resource");
    CHECK(content[i]["resource"]["mimeType"] == "application/octet-stream");
    CHECK(listed[i]["returned"] != "image");
    CHECK(listed[i]["note"].get<std::string>().rfind("not returned as an image", 0) == 0);
  }
  CHECK(listed[1]["note"].get<std::string>().find("100000x100000") != std::string::npos);
  CHECK(content[4]["type"] == "image");
  CHECK_FALSE(listed[4].contains("note"));
}
