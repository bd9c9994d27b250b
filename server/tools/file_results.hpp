#pragma once
// How the files an execute call asked back become content of its CallToolResult: images as
// image content, small text as embedded text resources, small binary as blob resources,
// larger files as resource links (served by resources/read), and a file that cannot be
// returned as a line saying why. structuredContent lists them all without their bytes.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/sandbox.hpp"

namespace sandgate::server {

// Mints the resource URI of a path relative to /work.
using MintUri = std::function<std::string(const std::string& path)>;

// The image type `bytes` start with (png, jpeg, gif, webp), or "".
std::string image_mime(std::string_view bytes);

// Moves each file's bytes into `content`; returns structuredContent's `files` list.
// `link_max_bytes`: the largest file a resource link may stand for (what resources/read serves).
nlohmann::json add_returned_files(sandbox::TransferResult& returned, const MintUri& mint,
                                  std::uint64_t link_max_bytes, nlohmann::json& content);

}  // namespace sandgate::server
