#include "transfer_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "common/durable_file.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/file_transfer.hpp"
#include "work_archive_process.hpp"

namespace sandgate::sandbox {
namespace {

constexpr std::uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

int open_beneath(int work, const std::string& path, std::uint64_t flags, std::uint64_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = kResolve;
  long fd;
  do fd = ::syscall(SYS_openat2, work, path.c_str(), &how, sizeof how);
  while (fd < 0 && errno == EINTR);
  return static_cast<int>(fd);
}

FileStatus status_for(int error) {
  switch (error) {
    case ENOENT:
      return FileStatus::not_found;
    case EISDIR:
      return FileStatus::is_directory;
    case EXDEV:
    case ELOOP:
      return FileStatus::outside_work;
    case ENXIO:
    case ENODEV:
      return FileStatus::not_regular;
    case ENOTDIR:
      return FileStatus::not_found;  // a component is a file
    default:
      return FileStatus::failed;
  }
}

bool read_all(int fd, std::string& out, std::size_t size) {
  out.resize(size);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, out.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // shrunk meanwhile (a background process): what there was
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return true;
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Creates the directories leading to `path`, one component at a time, each made in a parent
// that was itself opened beneath /work.
int make_parents(int work, const std::string& path) {
  std::size_t at = 0;
  while ((at = path.find('/', at)) != std::string::npos) {
    std::string dir = path.substr(0, at++);
    UniqueFd existing(open_beneath(work, dir, O_PATH | O_DIRECTORY));
    if (existing) continue;
    if (errno != ENOENT) return errno;
    UniqueFd parent(open_beneath(work, parent_of(dir), O_PATH | O_DIRECTORY));
    if (!parent) return errno;
    if (::mkdirat(parent.get(), name_of(dir).c_str(), 0755) != 0 && errno != EEXIST) return errno;
  }
  return 0;
}

TransferredFile write_one(int work, const std::string& path, const std::string& content) {
  TransferredFile out{path, FileStatus::ok, 0, 0, {}};
  auto fail = [&](int error) {
    out.status = status_for(error);
    out.error = error;
    return out;
  };
  if (work_relative_path(path) != path) {
    out.status = FileStatus::invalid_path;
    return out;
  }
  if (int e = make_parents(work, path)) return fail(e);
  // O_NONBLOCK: opening a FIFO planted at the path must not wait for a reader.
  UniqueFd fd(open_beneath(work, path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY, 0644));
  if (!fd) return fail(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(errno);
  if (!S_ISREG(st.st_mode)) {
    out.status = FileStatus::not_regular;
    return out;
  }
  if (::ftruncate(fd.get(), 0) != 0) return fail(errno);
  if (!write_all(fd.get(), content)) return fail(errno);
  out.size = content.size();
  return out;
}

// Reads one file within the caps; `budget` is what is left of the call's total.
TransferredFile read_one(int work, const std::string& path, std::uint64_t max_each,
                         std::uint64_t& budget, bool remove_after) {
  TransferredFile out{path, FileStatus::ok, 0, 0, {}};
  if (work_relative_path(path) != path) {
    out.status = FileStatus::invalid_path;
    return out;
  }
  UniqueFd fd(open_beneath(work, path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    out.error = errno;
    out.status = status_for(errno);
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    out.error = errno;
    out.status = FileStatus::failed;
    return out;
  }
  if (S_ISDIR(st.st_mode)) {
    out.status = FileStatus::is_directory;
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.status = FileStatus::not_regular;
    return out;
  }
  out.size = static_cast<std::uint64_t>(st.st_size);
  // A huge (or sparse) file is never read: only its size is told.
  if (out.size > max_each || out.size > budget) {
    out.status = FileStatus::too_large;
    return out;
  }
  if (!read_all(fd.get(), out.content, static_cast<std::size_t>(out.size))) {
    out.error = errno;
    out.status = FileStatus::failed;
    out.content.clear();
    return out;
  }
  out.size = out.content.size();
  budget -= out.size;
  if (remove_after) {
    UniqueFd parent(open_beneath(work, parent_of(path), O_PATH | O_DIRECTORY));
    if (parent) ::unlinkat(parent.get(), name_of(path).c_str(), 0);
  }
  return out;
}

// The regular files of one directory, by name, at most `max_files`.
std::vector<std::string> list_regular_files(int work, const std::string& dir,
                                            std::uint32_t max_files, int& error) {
  std::vector<std::string> names;
  int fd = open_beneath(work, dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    error = errno;
    return names;
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    error = errno;
    ::close(fd);
    return names;
  }
  // Bounded while listing too: a directory of a million files is not sorted in memory.
  constexpr std::size_t kListCap = 10000;
  while (dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    names.push_back(std::move(name));
    if (names.size() >= kListCap) break;
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  if (names.size() > max_files) names.resize(max_files);
  for (auto& name : names) name = dir + "/" + name;
  return names;
}

}  // namespace

int serve_transfer(int request_fd, int reply_fd) {
  struct stat st {};
  if (::fstat(request_fd, &st) != 0) return errno;
  std::string bytes;
  if (::lseek(request_fd, 0, SEEK_SET) != 0 ||
      !read_all(request_fd, bytes, static_cast<std::size_t>(st.st_size)))
    return errno;
  auto request = decode_request(bytes);
  if (!request) return EINVAL;
  bytes.clear();
  bytes.shrink_to_fit();
  UniqueFd work(::open("/work", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!work) return errno;

  auto send = [&](const TransferredFile& file) {
    std::string entry = encode_reply_entry(file);
    return write_all(reply_fd, entry);
  };
  std::uint64_t budget = request->max_bytes_total;
  switch (request->op) {
    case TransferOp::write:
      for (const auto& [path, content] : request->files)
        if (!send(write_one(work.get(), path, content))) return EIO;
      break;
    case TransferOp::read:
      for (const auto& [path, content] : request->files)
        if (!send(
                read_one(work.get(), path, request->max_bytes_each, budget, request->remove_after)))
          return EIO;
      break;
    case TransferOp::pack:
      return pack_work(reply_fd);
    case TransferOp::unpack:
      if (!request->files.empty()) return EINVAL;
      return unpack_work(reply_fd);
    case TransferOp::read_dir: {
      if (request->files.size() != 1) return EINVAL;
      int error = 0;
      auto names =
          list_regular_files(work.get(), request->files[0].first, request->max_files, error);
      if (error != 0) return error;
      for (const auto& path : names)
        if (!send(
                read_one(work.get(), path, request->max_bytes_each, budget, request->remove_after)))
          return EIO;
      break;
    }
  }
  return 0;
}

}  // namespace sandgate::sandbox
