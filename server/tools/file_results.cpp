#include "file_results.hpp"

#include <cstring>

#include "common/base64.hpp"
#include "common/utf8.hpp"
#include "file_resources.hpp"
#include "image_size.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

std::string name_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(std::string_view bytes, std::string_view prefix) {
  return bytes.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string image_mime(std::string_view bytes) {
  using namespace std::string_view_literals;
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n"sv)) return "image/png";
  if (starts_with(bytes, "\xff\xd8\xff"sv)) return "image/jpeg";
  if (starts_with(bytes, "GIF87a"sv) || starts_with(bytes, "GIF89a"sv)) return "image/gif";
  if (bytes.size() >= 12 && starts_with(bytes, "RIFF"sv) && bytes.substr(8, 4) == "WEBP"sv)
    return "image/webp";
  return "";
}

namespace {

// A file read whole: an image as an image, text as an embedded text resource, anything else as
// an embedded blob; the text and blob ones get a URI to read them again.
void return_inline(sandbox::TransferredFile& file, const MintUri& mint, json& entry,
                   json& content) {
  std::string image = image_mime(file.content);
  std::string named = mime_for_name(file.path);
  std::string uri = mint(file.path);
  if (!image.empty()) {
    // An image only when its header declares a size a client can decode: a small file may
    // declare billions of pixels. Otherwise it is returned as the bytes it is.
    auto size = declared_image_size(file.content, image);
    if (!size || size->width > kReturnedImageMaxSide || size->height > kReturnedImageMaxSide) {
      entry["note"] = size
                          ? "not returned as an image: it declares " + std::to_string(size->width) +
                                "x" + std::to_string(size->height) + " pixels, more than " +
                                std::to_string(kReturnedImageMaxSide) + " on a side"
                          : "not returned as an image: its header gives no size";
      image.clear();
      named = "application/octet-stream";  // never an image type a client would decode
    }
  }
  if (!image.empty()) {
    entry["mimeType"] = image;
    entry["returned"] = "image";
    content.push_back(
        {{"type", "image"}, {"data", base64_encode(file.content)}, {"mimeType", image}});
  } else if (is_valid_utf8(file.content) && file.content.find('\0') == std::string::npos) {
    std::string mime = named.empty() ? "text/plain" : named;
    entry["mimeType"] = mime;
    entry["returned"] = "text";
    entry["uri"] = uri;
    content.push_back(
        {{"type", "resource"},
         {"resource", {{"uri", uri}, {"mimeType", mime}, {"text", std::move(file.content)}}}});
  } else {
    std::string mime = named.empty() ? "application/octet-stream" : named;
    entry["mimeType"] = mime;
    entry["returned"] = "blob";
    entry["uri"] = uri;
    content.push_back(
        {{"type", "resource"},
         {"resource", {{"uri", uri}, {"mimeType", mime}, {"blob", base64_encode(file.content)}}}});
  }
}

// A file too large to include: a resource_link to read with resources/read.
void return_link(const sandbox::TransferredFile& file, const MintUri& mint, json& entry,
                 json& content) {
  std::string named = mime_for_name(file.path);
  std::string mime = named.empty() ? "application/octet-stream" : named;
  std::string uri = mint(file.path);
  entry["mimeType"] = mime;
  entry["returned"] = "link";
  entry["uri"] = uri;
  content.push_back({{"type", "resource_link"},
                     {"uri", uri},
                     {"name", name_of(file.path)},
                     {"mimeType", mime},
                     {"size", file.size},
                     {"description", "Too large to include: read it with resources/read."}});
}

}  // namespace

json add_returned_files(sandbox::TransferResult& returned, const MintUri& mint,
                        std::uint64_t link_max_bytes, json& content) {
  json listed = json::array();
  if (!returned.done) {
    content.push_back({{"type", "text"},
                       {"text", "The files asked for could not be returned: " + returned.failure}});
    return listed;
  }
  for (auto& file : returned.files) {
    json entry = {{"path", "/work/" + file.path}, {"size", file.size}};
    auto refuse = [&](const std::string& why) {
      entry["returned"] = "error";
      entry["error"] = why;
      content.push_back(
          {{"type", "text"}, {"text", "/work/" + file.path + " was not returned: " + why + "."}});
    };
    if (file.status == sandbox::FileStatus::ok) {
      return_inline(file, mint, entry, content);
    } else if (file.status == sandbox::FileStatus::too_large) {
      if (file.size > link_max_bytes)
        refuse("it is " + std::to_string(file.size) + " bytes, more than the " +
               std::to_string(link_max_bytes) + " bytes a resource may have");
      else
        return_link(file, mint, entry, content);
    } else {
      std::string why = sandbox::file_status_text(file.status);
      if (file.status == sandbox::FileStatus::failed && file.error != 0)
        why += std::string(" (") + std::strerror(file.error) + ")";
      refuse(why);
    }
    listed.push_back(std::move(entry));
  }
  return listed;
}

}  // namespace sandgate::server
