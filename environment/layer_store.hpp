#pragma once
// Where built layers live (issue #43), content-addressed by their definition's hash:
//
//   ROOT/layers/HASH/        the layer, mounted read-only at /env (root's, no write or set-id bits)
//   ROOT/layers/HASH.json    what it is: its environment's name and its size; written last, so
//                            a layer without it is not one (a crash mid-commit leaves nothing used)
//   ROOT/failed/HASH.json    why the last build of that definition failed, and its output (for
//                            the operator, never a tenant)
//   ROOT/building/…          builds under way; removed at start (a gateway that crashed mid-build)
//
// Layers are also looked up, read-only, in directories built ahead (`sandgate environments build
// --into DIR` writes the same layout): an image's build stage or a shared volume.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandgate::environment {

struct LayerRecord {
  std::string hash;
  std::string name;  // the environment it was built for
  std::string dir;   // absolute: what a sandbox mounts
  std::uint64_t size_bytes = 0;
};

struct FailureRecord {
  std::string name;
  std::string reason;
  std::string output;  // the build's output, bounded
};

class LayerStore {
 public:
  LayerStore(std::string root, std::vector<std::string> built_ahead = {});

  const std::string& root() const { return root_; }
  // Makes the store's directories and removes builds a previous gateway left. Throws
  // std::runtime_error naming what failed.
  void prepare();

  // The layer built for `hash`, here or in a directory built ahead.
  std::optional<LayerRecord> find(const std::string& hash) const;
  std::optional<FailureRecord> failure(const std::string& hash) const;

  // An empty directory a build fills (mounted writable into the build's sandbox).
  std::string begin_build(const std::string& hash);
  // After the build's sandbox has ended (none of its processes is left): the tree becomes the
  // gateway's, without write bits for others, set-id bits, or anything but files, directories
  // and symbolic links; returns its size. Throws std::runtime_error when it is larger than
  // `max_bytes` or cannot be sealed.
  std::uint64_t seal(const std::string& building_dir, std::uint64_t max_bytes) const;
  // Moves a sealed build into place and records it; the failure record of `hash` goes.
  LayerRecord commit(const std::string& building_dir, const std::string& hash,
                     const std::string& name, std::uint64_t size_bytes);
  void record_failure(const std::string& hash, const FailureRecord& failure);
  // Removes a build that failed (or was abandoned).
  void discard(const std::string& building_dir) const;
  // Removes this store's layers that are neither `wanted` (the current definitions' hashes) nor
  // mounted by a live sandbox (`in_use`: layer directories); returns the hashes removed.
  std::vector<std::string> remove_unused(const std::set<std::string>& wanted,
                                         const std::set<std::string>& in_use);

 private:
  std::string root_;
  std::vector<std::string> built_ahead_;
};

}  // namespace sandgate::environment
