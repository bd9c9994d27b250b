#include "layer_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

#include "common/bounded_json.hpp"
#include "common/durable_file.hpp"
#include "common/unique_fd.hpp"

namespace sandgate::environment {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxRecordBytes = 256 << 10;
constexpr std::size_t kMaxOutputKept = 64 << 10;

bool is_hash(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<json> read_record(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(kMaxRecordBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxRecordBytes) return std::nullopt;
  auto parsed = parse_bounded_json(text, 8);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object()) return std::nullopt;
  return std::move(parsed.value);
}

void write_record(const fs::path& dir, const std::string& name, const json& record) {
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd ||
      !replace_file_durably(dir_fd.get(), name, "." + name + ".tmp", record.dump(2, ' ', false, json::error_handler_t::replace) + "\n")) {
    throw std::system_error(errno, std::generic_category(), "write " + (dir / name).string());
  }
}

void make_dir(const fs::path& dir) {
  fs::create_directories(dir);
  // Traversable by the sandboxes' ids: a sandbox's supervisor opens nothing here (the layer is
  // opened for it by the gateway's uid), but a layer's own files are read by its programs.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
}

// Takes one entry of a finished build: the gateway's, without set-id bits or write bits for
// anyone but the owner; anything that is not a file, directory or symbolic link goes.
void seal_entry(const fs::directory_entry& entry, std::uint64_t& size) {
  const auto& path = entry.path();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw std::system_error(errno, std::generic_category(), "stat in the layer");
  if (S_ISLNK(st.st_mode)) {
    if (::lchown(path.c_str(), ::geteuid(), ::getegid()) != 0)
      throw std::system_error(errno, std::generic_category(), "chown in the layer");
    return;
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    fs::remove(path);
    return;
  }
  if (::lchown(path.c_str(), ::geteuid(), ::getegid()) != 0)
    throw std::system_error(errno, std::generic_category(), "chown in the layer");
  mode_t mode = st.st_mode & 0755;
  // Readable by the programs (another uid than the one that built it); directories searchable.
  mode |= S_ISDIR(st.st_mode) ? 0555 : 0444;
  if (S_ISREG(st.st_mode) && (st.st_mode & 0111)) mode |= 0555;
  if (::chmod(path.c_str(), mode) != 0)
    throw std::system_error(errno, std::generic_category(), "chmod in the layer");
  if (S_ISREG(st.st_mode)) size += static_cast<std::uint64_t>(st.st_size);
}

}  // namespace

LayerStore::LayerStore(std::string root, std::vector<std::string> built_ahead)
    : root_(std::move(root)), built_ahead_(std::move(built_ahead)) {}

void LayerStore::prepare() {
  try {
    make_dir(root_);
    make_dir(fs::path(root_) / "layers");
    make_dir(fs::path(root_) / "failed");
    fs::remove_all(fs::path(root_) / "building");
    make_dir(fs::path(root_) / "building");
    // A commit cut short: a layer directory without its record is no layer.
    for (const auto& entry : fs::directory_iterator(fs::path(root_) / "layers")) {
      auto name = entry.path().filename().string();
      if (entry.is_directory() && is_hash(name) && !fs::exists(entry.path().string() + ".json"))
        fs::remove_all(entry.path());
    }
  } catch (const fs::filesystem_error& e) {
    throw std::runtime_error("the environments store " + root_ + ": " + e.what());
  }
}

std::optional<LayerRecord> LayerStore::find(const std::string& hash) const {
  if (!is_hash(hash)) return std::nullopt;
  std::vector<std::string> places{root_};
  places.insert(places.end(), built_ahead_.begin(), built_ahead_.end());
  for (const auto& place : places) {
    fs::path dir = fs::path(place) / "layers" / hash;
    auto record = read_record(dir.string() + ".json");
    std::error_code ec;
    if (!record || !fs::is_directory(dir, ec)) continue;
    if (record->value("hash", "") != hash) continue;
    LayerRecord out;
    out.hash = hash;
    out.name = record->value("name", "");
    out.dir = fs::absolute(dir).string();
    out.size_bytes = record->value("size_bytes", std::uint64_t{0});
    return out;
  }
  return std::nullopt;
}

std::optional<FailureRecord> LayerStore::failure(const std::string& hash) const {
  if (!is_hash(hash)) return std::nullopt;
  auto record = read_record(fs::path(root_) / "failed" / (hash + ".json"));
  if (!record) return std::nullopt;
  return FailureRecord{record->value("name", ""), record->value("reason", ""),
                       record->value("output", "")};
}

std::string LayerStore::begin_build(const std::string& hash) {
  static std::atomic<std::uint64_t> next_build{0};
  fs::path dir = fs::path(root_) / "building" / (hash + "." + std::to_string(next_build++));
  fs::remove_all(dir);
  if (::mkdir(dir.c_str(), 0755) != 0)
    throw std::system_error(errno, std::generic_category(), "make the build's layer directory");
  return dir.string();
}

std::uint64_t LayerStore::seal(const std::string& building_dir, std::uint64_t max_bytes) const {
  std::uint64_t size = 0;
  try {
    fs::directory_entry top(building_dir);
    seal_entry(top, size);
    // Never through a symbolic link: they are entries here, not directories to enter.
    for (auto it = fs::recursive_directory_iterator(building_dir);
         it != fs::recursive_directory_iterator(); ++it) {
      seal_entry(*it, size);
      if (size > max_bytes)
        throw std::runtime_error("the layer is larger than its max_size_mb (" +
                                 std::to_string(max_bytes >> 20) + " MiB)");
    }
  } catch (const fs::filesystem_error& e) {
    throw std::runtime_error(std::string("the layer could not be sealed: ") + e.what());
  }
  return size;
}

LayerRecord LayerStore::commit(const std::string& building_dir, const std::string& hash,
                               const std::string& name, std::uint64_t size_bytes) {
  fs::path layers = fs::path(root_) / "layers";
  fs::path target = layers / hash;
  std::error_code ec;
  if (fs::exists(target.string() + ".json", ec)) {
    discard(building_dir);  // built meanwhile (the same definition twice): keep the first
  } else {
    fs::remove_all(target, ec);
    fs::rename(building_dir, target);
    write_record(layers, hash + ".json",
                 {{"hash", hash}, {"name", name}, {"size_bytes", size_bytes}});
  }
  fs::remove(fs::path(root_) / "failed" / (hash + ".json"), ec);
  auto record = find(hash);
  if (!record) throw std::runtime_error("the layer was stored but cannot be found again");
  return *record;
}

void LayerStore::record_failure(const std::string& hash, const FailureRecord& failure) {
  std::string output = failure.output;
  if (output.size() > kMaxOutputKept) output = output.substr(output.size() - kMaxOutputKept);
  json record = {{"name", failure.name},
                 {"reason", failure.reason},
                 {"output", output}};
  write_record(fs::path(root_) / "failed", hash + ".json", record);
}

void LayerStore::discard(const std::string& building_dir) const {
  std::error_code ec;
  fs::remove_all(building_dir, ec);
}

std::vector<std::string> LayerStore::remove_unused(const std::set<std::string>& wanted,
                                                   const std::set<std::string>& in_use) {
  std::vector<std::string> removed;
  fs::path layers = fs::path(root_) / "layers";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(layers, ec)) {
    auto name = entry.path().filename().string();
    if (!is_hash(name) || wanted.count(name) || in_use.count(fs::absolute(entry.path()).string()))
      continue;
    // The record first: from then on the layer is not found, and a crash leaves only a
    // directory that prepare() removes.
    fs::remove(entry.path().string() + ".json", ec);
    fs::remove_all(entry.path(), ec);
    removed.push_back(name);
  }
  return removed;
}

}  // namespace sandgate::environment
