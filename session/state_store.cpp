#include "state_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "common/durable_file.hpp"

namespace sandgate::session {
namespace {

constexpr const char* kSuffix = ".sgz";
constexpr const char* kTempSuffix = ".tmp";

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Makes `dir` (and its parents) and checks that it is a directory of ours, not a symlink.
void make_private_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    errno = ec.value();
    fail("state directory " + dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) fail("state directory " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    errno = ENOTDIR;
    fail("state directory " + dir + " is not a directory of this user");
  }
  if (::chmod(dir.c_str(), 0700) != 0) fail("chmod 0700 " + dir);
}

}  // namespace

StateStore::StateStore(std::string dir, std::uint64_t max_bytes, bool remove_dir_at_end,
                       bool keep_archives)
    : dir_(std::move(dir)), max_bytes_(max_bytes), remove_dir_at_end_(remove_dir_at_end) {
  make_private_dir(dir_);
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd_ < 0) fail("open " + dir_);
  // Archives (and temporaries) of an earlier gateway: nothing here can resume them.
  int listing = ::dup(dir_fd_);
  DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (d == nullptr) fail("list " + dir_);
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    bool archive = ends_with(name, kSuffix);
    if ((archive && !keep_archives) || name.find(kTempSuffix) != std::string::npos)
      stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale)
    if (::unlinkat(dir_fd_, name.c_str(), 0) == 0) ++left_over_;
}

StateStore::~StateStore() {
  // The writes under way finish first: they use the directory this then removes.
  io_.join();
  std::lock_guard lock(mutex_);
  if (remove_dir_at_end_) {
    for (const auto& [name, entry] : entries_) ::unlinkat(dir_fd_, name.c_str(), 0);
    ::rmdir(dir_.c_str());
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string StateStore::file_name(const std::string& session_id) const {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(session_id.data(), session_id.size(), digest, &size, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 16 && i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out + kSuffix;
}

void StateStore::remove_locked(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  total_ -= it->second.size;
  entries_.erase(it);
  ::unlinkat(dir_fd_, name.c_str(), 0);
}

bool StateStore::make_room_locked(std::uint64_t incoming, const std::string& tenant) {
  // Planned on sizes first, so that an archive which cannot fit drops nothing.
  std::map<std::string, std::uint64_t> held;  // by tenant, the incoming one with what it brings
  for (const auto& [name, entry] : entries_) held[entry.tenant] += entry.size;
  held[tenant] += incoming;
  std::vector<std::map<std::string, Entry>::const_iterator> by_age;
  for (auto it = entries_.cbegin(); it != entries_.cend(); ++it) by_age.push_back(it);
  std::sort(by_age.begin(), by_age.end(),
            [](auto a, auto b) { return a->second.order < b->second.order; });
  std::vector<std::string> drops;
  std::uint64_t total = total_ + reserved_ + incoming;
  while (total > max_bytes_) {
    // The tenant that would hold the most (on a tie, the incoming one: it pushes out no equal).
    std::string most = tenant;
    std::uint64_t most_bytes = held[tenant];
    for (const auto& [who, bytes] : held) {
      if (bytes > most_bytes) {
        most = who;
        most_bytes = bytes;
      }
    }
    auto oldest = std::find_if(by_age.begin(), by_age.end(),
                               [&](auto it) { return it->second.tenant == most; });
    if (oldest == by_age.end()) return false;
    drops.push_back((*oldest)->first);
    held[most] -= (*oldest)->second.size;
    total -= (*oldest)->second.size;
    by_age.erase(oldest);
  }
  for (const auto& name : drops) {
    std::uint64_t size = entries_.at(name).size;
    remove_locked(name);
    ++dropped;
    if (on_drop) on_drop(name, size);
  }
  return true;
}

std::size_t StateStore::adopt(const std::vector<std::string>& session_ids,
                              const std::vector<std::string>& tenants) {
  std::map<std::string, std::string> wanted;  // file name -> tenant
  for (std::size_t i = 0; i < session_ids.size(); ++i)
    wanted[file_name(session_ids[i])] = i < tenants.size() ? tenants[i] : std::string();
  struct Found {
    std::string name;
    std::uint64_t size;
    struct timespec mtime;
  };
  std::vector<Found> found;
  std::vector<std::string> stale;
  int listing = ::dup(dir_fd_);
  DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (d == nullptr) return 0;
  ::rewinddir(d);  // a dup shares its offset: the constructor's listing left it at the end
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!ends_with(name, kSuffix)) continue;
    struct stat st {};
    // Only what this gateway's predecessor wrote: a regular file of this user, never a link.
    bool ours = ::fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
    if (ours && wanted.count(name))
      found.push_back({name, static_cast<std::uint64_t>(st.st_size), st.st_mtim});
    else
      stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale)
    if (::unlinkat(dir_fd_, name.c_str(), 0) == 0) ++left_over_;
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  std::lock_guard lock(mutex_);
  for (const auto& f : found) {
    entries_[f.name] = Entry{f.size, next_order_++, wanted[f.name]};
    total_ += f.size;
  }
  // A smaller --state-max-mb than the previous gateway's: archives go as they would have.
  make_room_locked(0, "");
  return found.size();
}

bool StateStore::has(const std::string& session_id) const {
  std::lock_guard lock(mutex_);
  return entries_.count(file_name(session_id)) > 0;
}

bool StateStore::store(const std::string& session_id, std::uint64_t size, const std::string& tenant,
                       std::string& error, const std::function<bool(int)>& write) {
  if (size > max_bytes_) {
    error = "the archive is larger than the state directory's cap (--state-max-mb)";
    return false;
  }
  std::string name = file_name(session_id);
  std::string temp = name + kTempSuffix;
  {
    std::lock_guard lock(mutex_);
    remove_locked(name);
    if (!make_room_locked(size, tenant)) {
      error =
          "the archive does not fit in the state directory's cap (--state-max-mb) beside what "
          "other tenants, holding less, keep there";
      return false;
    }
    reserved_ += size;
  }
  // Outside the lock: one session hibernates at a time, so nobody else writes this name.
  // Read-only once written: a sandbox handed the file's descriptor cannot reopen it to write.
  bool written = sandgate::replace_file_durably_with(
      dir_fd_, name, temp, [&](int fd) { return write(fd) && ::fchmod(fd, 0400) == 0; });
  int saved = errno;
  std::lock_guard lock(mutex_);
  reserved_ -= size;
  if (!written) {
    error = std::string("cannot write the archive file: ") + std::strerror(saved);
    return false;
  }
  // Renamed over whatever had the name: an entry recorded meanwhile (never expected: one
  // session hibernates at a time) is this file now.
  if (auto it = entries_.find(name); it != entries_.end()) {
    total_ -= it->second.size;
    entries_.erase(it);
  }
  entries_[name] = Entry{size, next_order_++, tenant};
  total_ += size;
  return true;
}

bool StateStore::put(const std::string& session_id, const std::string& bytes, std::string& error,
                     const std::string& tenant) {
  return store(session_id, bytes.size(), tenant, error,
               [&bytes](int fd) { return sandgate::write_all(fd, bytes); });
}

bool StateStore::put(const std::string& session_id, int source, std::uint64_t size,
                     std::string& error, const std::string& tenant) {
  return store(session_id, size, tenant, error,
               [&](int fd) { return sandgate::copy_all(source, fd, size); });
}

std::optional<UniqueFd> StateStore::open(const std::string& session_id) {
  std::string name = file_name(session_id);
  std::uint64_t size = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    size = it->second.size;
  }
  UniqueFd fd(::openat(dir_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  // Exactly what was stored, or nothing: a file changed behind our back is not trusted.
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) != size)
    return std::nullopt;
  return fd;
}

std::optional<std::string> StateStore::get(const std::string& session_id) {
  auto fd = open(session_id);
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return std::nullopt;
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd->get(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  return out;
}

void StateStore::remove(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  remove_locked(file_name(session_id));
}

std::uint64_t StateStore::bytes() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::size_t StateStore::count() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::string default_state_dir() {
  std::vector<std::string> parents;
  if (const char* s = std::getenv("STATE_DIRECTORY"); s && *s == '/') {
    std::string first = s;
    parents.push_back(first.substr(0, first.find(':')));  // systemd may list several
  }
  parents.push_back("/var/lib/sandgate");
  const char* tmp = std::getenv("TMPDIR");
  parents.push_back(std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/sandgate");
  for (const auto& parent : parents) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    struct stat st {};
    if (ec || ::lstat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid() || ::access(parent.c_str(), W_OK) != 0)
      continue;
    // Leftovers of gateways that are gone (killed without a clean exit).
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
      std::string name = entry.path().filename();
      if (name.rfind("hibernate.", 0) != 0) continue;
      char* end = nullptr;
      long pid = std::strtol(name.c_str() + 10, &end, 10);
      if (pid <= 0 || *end != '\0' || pid == ::getpid()) continue;
      if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        std::filesystem::remove_all(entry.path(), ec);
    }
    return parent + "/hibernate." + std::to_string(::getpid());
  }
  errno = EACCES;
  fail("no writable directory for hibernated sandboxes (set --state-dir)");
}

}  // namespace sandgate::session
