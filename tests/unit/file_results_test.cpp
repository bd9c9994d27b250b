// What a returned file becomes in a tool result (server/tools/file_results): an image, a
// resource, a link or the reason it was not returned.
#include "server/tools/file_results.hpp"

#include <catch2/catch.hpp>

#include "sandbox/file_transfer.hpp"

using namespace sandgate;
using sandbox::FileStatus;

TEST_CASE("returned files become images, resources, links or reasons", "[unit][files]") {
  sandbox::TransferResult returned;
  returned.done = true;
  // A PNG header declaring 1x1 pixels (an image is returned as one only with a readable size).
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x01\0\0\0\x01", 24);
  returned.files = {{"plot.png", FileStatus::ok, 0, png.size(), png},
                    {"notes.md", FileStatus::ok, 0, 2, "hi"},
                    {"raw.bin", FileStatus::ok, 0, 2, std::string("\0\1", 2)},
                    {"big.csv", FileStatus::too_large, 0, 5000, ""},
                    {"huge.bin", FileStatus::too_large, 0, 1 << 30, ""},
                    {"dir", FileStatus::is_directory, 0, 0, ""}};
  nlohmann::json content = nlohmann::json::array();
  auto listed = server::add_returned_files(
      returned, [](const std::string& p) { return "uri:" + p; }, 1 << 20, content);
  REQUIRE(content.size() == 6);
  CHECK(content[0]["type"] == "image");
  CHECK(content[0]["mimeType"] == "image/png");
  CHECK(content[1]["resource"]["mimeType"] == "text/markdown");
  CHECK(content[1]["resource"]["text"] == "hi");
  CHECK(content[2]["resource"]["blob"] == "AAE=");
  CHECK(content[3]["type"] == "resource_link");
  CHECK(content[3]["mimeType"] == "text/csv");
  CHECK(content[3]["size"] == 5000);
  CHECK(content[4]["text"].get<std::string>().find("more than") != std::string::npos);
  CHECK(content[5]["text"] == "/work/dir was not returned: is a directory.");
  CHECK(listed[3]["returned"] == "link");
  CHECK(listed[5]["error"] == "is a directory");
  CHECK_FALSE(listed[0].contains("data"));
}
