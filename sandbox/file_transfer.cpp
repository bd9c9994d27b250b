#include "file_transfer.hpp"

#include <cstring>

namespace sandgate::sandbox {
namespace {

constexpr std::uint32_t kMagic = 0x54464753;  // "SGFT"

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads fixed-size values and byte runs from a buffer, never past its end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T& value) {
    if (bytes_.size() - at_ < sizeof value) return false;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return true;
  }
  bool take(std::uint64_t size, std::string& out) {
    if (bytes_.size() - at_ < size) return false;
    out.assign(bytes_.data() + at_, static_cast<std::size_t>(size));
    at_ += static_cast<std::size_t>(size);
    return true;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

bool valid_op(std::uint32_t op) {
  return op >= 1 && op <= 5;
}

}  // namespace

const char* file_status_text(FileStatus status) {
  switch (status) {
    case FileStatus::ok:
      return "ok";
    case FileStatus::not_found:
      return "no such file";
    case FileStatus::is_directory:
      return "is a directory";
    case FileStatus::not_regular:
      return "not a regular file (a FIFO, socket or device)";
    case FileStatus::outside_work:
      return "leads out of /work (a symlink or path outside the workspace)";
    case FileStatus::too_large:
      return "too large";
    case FileStatus::invalid_path:
      return "not a valid path under /work";
    default:
      return "failed";
  }
}

std::optional<std::string> work_relative_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxTransferPath) return std::nullopt;
  if (path.find('\0') != std::string_view::npos) return std::nullopt;
  if (path.front() == '/') {
    constexpr std::string_view work = "/work";
    if (path.substr(0, work.size()) != work) return std::nullopt;
    path.remove_prefix(work.size());
    if (!path.empty() && path.front() != '/') return std::nullopt;  // "/workshop"
  }
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") return std::nullopt;
    if (part.size() > 255) return std::nullopt;
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out.append(part);
    }
    start = end + 1;
  }
  if (out.empty()) return std::nullopt;  // /work itself
  return out;
}

std::string encode_request(const TransferRequest& request) {
  std::string out;
  put(out, kMagic);
  put(out, static_cast<std::uint32_t>(request.op));
  put(out, static_cast<std::uint32_t>(request.remove_after ? 1 : 0));
  put(out, request.max_files);
  put(out, request.max_bytes_each);
  put(out, request.max_bytes_total);
  put(out, static_cast<std::uint32_t>(request.files.size()));
  for (const auto& [path, content] : request.files) {
    put(out, static_cast<std::uint32_t>(path.size()));
    put(out, static_cast<std::uint64_t>(content.size()));
    out += path;
    out += content;
  }
  return out;
}

std::optional<TransferRequest> decode_request(std::string_view bytes) {
  Reader in(bytes);
  std::uint32_t magic = 0, op = 0, remove = 0, count = 0;
  TransferRequest r;
  if (!in.get(magic) || magic != kMagic || !in.get(op) || !valid_op(op) || !in.get(remove) ||
      !in.get(r.max_files) || !in.get(r.max_bytes_each) || !in.get(r.max_bytes_total) ||
      !in.get(count) || count > kMaxTransferFiles)
    return std::nullopt;
  r.op = static_cast<TransferOp>(op);
  r.remove_after = remove != 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t path_size = 0;
    std::uint64_t content_size = 0;
    std::pair<std::string, std::string> file;
    if (!in.get(path_size) || path_size > kMaxTransferPath || !in.get(content_size) ||
        !in.take(path_size, file.first) || !in.take(content_size, file.second))
      return std::nullopt;
    r.files.push_back(std::move(file));
  }
  if (!in.done()) return std::nullopt;
  return r;
}

std::string encode_reply_entry(const TransferredFile& file) {
  std::string out;
  put(out, static_cast<std::uint32_t>(file.status));
  put(out, static_cast<std::int32_t>(file.error));
  put(out, file.size);
  put(out, static_cast<std::uint32_t>(file.path.size()));
  put(out, static_cast<std::uint64_t>(file.content.size()));
  out += file.path;
  out += file.content;
  return out;
}

std::optional<std::vector<TransferredFile>> decode_reply(std::string_view bytes,
                                                         const TransferRequest& request) {
  std::size_t max_files =
      request.op == TransferOp::read_dir ? request.max_files : request.files.size();
  bool reads = request.op != TransferOp::write;
  std::uint64_t total = 0;
  std::vector<TransferredFile> files;
  Reader in(bytes);
  while (!in.done()) {
    if (files.size() >= max_files) return std::nullopt;
    TransferredFile f;
    std::uint32_t status = 0, path_size = 0;
    std::int32_t error = 0;
    std::uint64_t content_size = 0;
    if (!in.get(status) || status > static_cast<std::uint32_t>(FileStatus::failed) ||
        !in.get(error) || !in.get(f.size) || !in.get(path_size) || path_size > kMaxTransferPath ||
        !in.get(content_size))
      return std::nullopt;
    f.status = static_cast<FileStatus>(status);
    f.error = error;
    // Content only for a file read whole, within both caps, and never longer than its size.
    if (content_size > 0 &&
        (!reads || f.status != FileStatus::ok || content_size > request.max_bytes_each ||
         content_size > request.max_bytes_total - total || content_size != f.size))
      return std::nullopt;
    total += content_size;
    if (!in.take(path_size, f.path) || !in.take(content_size, f.content)) return std::nullopt;
    // The path must be one we asked about (read, write) or a name in the directory (read_dir).
    auto confined = work_relative_path(f.path);
    if (!confined || *confined != f.path) return std::nullopt;
    if (request.op != TransferOp::read_dir && f.path != request.files[files.size()].first)
      return std::nullopt;
    if (request.op == TransferOp::read_dir) {
      const std::string& dir = request.files.at(0).first;
      if (f.path.size() <= dir.size() + 1 || f.path.compare(0, dir.size(), dir) != 0 ||
          f.path[dir.size()] != '/' || f.path.find('/', dir.size() + 1) != std::string::npos)
        return std::nullopt;
    }
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace sandgate::sandbox
