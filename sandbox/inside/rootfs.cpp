#include "rootfs.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "common/unique_fd.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/protocol.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

// The new root is assembled on a tmpfs mounted over /tmp of this (private) mount namespace.
constexpr const char* kNewRoot = "/tmp";

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void check(int rc, const std::string& what) {
  if (rc != 0) fail(what);
}

std::string in_root(const std::string& path) {
  return std::string(kNewRoot) + path;
}

void make_dir(const std::string& path, mode_t mode = 0755) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) fail("mkdir " + path);
}

void mount_tmpfs(const std::string& target, const std::string& options, unsigned long flags) {
  check(::mount("tmpfs", target.c_str(), "tmpfs", flags, options.c_str()), "mount tmpfs " + target);
}

// Flags of the source mount that a user namespace may not drop on remount (they are locked).
unsigned long locked_flags(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// Binds a host path read-only into the new root; the mount point is created to match.
void bind_read_only(const std::string& host_path, bool optional) {
  struct stat st {};
  if (::stat(host_path.c_str(), &st) != 0) {
    if (optional) return;
    fail("stat " + host_path);
  }
  std::string target = in_root(host_path);
  fs::create_directories(fs::path(target).parent_path());
  if (S_ISDIR(st.st_mode)) {
    make_dir(target);
  } else {
    UniqueFd f(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (!f) fail("create " + target);
  }
  // Not recursive: submounts of the host (its /usr/local, say) stay out of the sandbox.
  check(::mount(host_path.c_str(), target.c_str(), nullptr, MS_BIND, nullptr), "bind " + host_path);
  check(::mount(nullptr, target.c_str(), nullptr,
                MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | locked_flags(target),
                nullptr),
        "remount read-only " + host_path);
}

// Top-level /bin, /lib… are symlinks into /usr on merged-usr hosts, directories elsewhere.
void mirror_top_level(const std::string& name) {
  std::string host = "/" + name;
  struct stat st {};
  if (::lstat(host.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode)) {
    auto target = fs::read_symlink(host);
    check(::symlink(target.c_str(), in_root(host).c_str()), "symlink " + host);
  } else if (S_ISDIR(st.st_mode)) {
    bind_read_only(host, false);
  }
}

void write_text(const std::string& path, const std::string& text, mode_t mode = 0644) {
  UniqueFd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!f || ::write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    fail("write " + path);
  // The umask must not take bits the file needs (an executable's).
  check(::fchmod(f.get(), mode), "chmod " + path);
}

// The tool channel's socket, bound in the new root before any program runs (so none can take
// the path) and before the root turns read-only; anyone in the sandbox may connect (mode 0666):
// only this sandbox's processes see it.
UniqueFd listen_for_tools() {
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) fail("tool channel socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string path = in_root(protocol::kToolChannelSocket);
  if (path.size() >= sizeof address.sun_path) fail("tool channel path");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  check(::bind(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address),
        "bind the tool channel");
  check(::chmod(path.c_str(), 0666), "chmod the tool channel");
  check(::listen(s.get(), 64), "listen on the tool channel");
  return s;
}

void build_etc(const RootfsPlan& plan) {
  make_dir(in_root("/etc"));
  std::string uid = std::to_string(plan.program_uid), gid = std::to_string(plan.program_gid);
  write_text(in_root("/etc/passwd"),
             "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:" + uid + ":" + gid +
                 ":sandbox:/work:/bin/bash\n" +
                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  write_text(in_root("/etc/group"), "root:x:0:\nsandbox:x:" + gid + ":\nnogroup:x:65534:\n");
  write_text(in_root("/etc/nsswitch.conf"), "passwd: files\ngroup: files\nhosts: files\n");
  write_text(in_root("/etc/hosts"), "127.0.0.1 localhost sandbox\n::1 localhost\n");
  write_text(in_root("/etc/hostname"), "sandbox\n");
  // What the runtimes and their libraries read; optional ones are bound when the host has them.
  bind_read_only("/etc/ld.so.cache", false);
  for (const char* p : {"/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/localtime",
                        "/etc/mime.types", "/etc/matplotlibrc", "/etc/fonts", "/etc/python3",
                        "/etc/python3.11", "/etc/ld.so.conf", "/etc/ld.so.conf.d"})
    bind_read_only(p, true);
}

// The layer is reached through its descriptor (the supervisor's ids may not traverse the
// gateway's state directory); nosuid and nodev whatever its files say.
void bind_layer(const RootfsPlan& plan) {
  std::string target = in_root(kLayerMountPoint);
  make_dir(target);
  std::string source = "/proc/self/fd/" + std::to_string(plan.layer_fd);
  check(::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr), "bind the layer");
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | locked_flags(target);
  if (!plan.layer_writable) flags |= MS_RDONLY;
  check(::mount(nullptr, target.c_str(), nullptr, flags, nullptr), "remount the layer");
  ::close(plan.layer_fd);
}

void build_dev() {
  std::string dev = in_root("/dev");
  make_dir(dev);
  mount_tmpfs(dev, "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC);
  for (const char* node : {"null", "zero", "full", "random", "urandom"}) {
    std::string target = dev + "/" + node, host = std::string("/dev/") + node;
    UniqueFd f(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666));
    if (!f) fail("create " + target);
    check(::mount(host.c_str(), target.c_str(), nullptr, MS_BIND, nullptr), "bind " + host);
  }
  check(::symlink("/proc/self/fd", (dev + "/fd").c_str()), "symlink /dev/fd");
  check(::symlink("/proc/self/fd/0", (dev + "/stdin").c_str()), "symlink /dev/stdin");
  check(::symlink("/proc/self/fd/1", (dev + "/stdout").c_str()), "symlink /dev/stdout");
  check(::symlink("/proc/self/fd/2", (dev + "/stderr").c_str()), "symlink /dev/stderr");
  make_dir(dev + "/shm");
  make_dir(dev + "/pts");
}

// What the OCI runtimes hide from a container's /proc (runc's and crun's default maskedPaths
// and readonlyPaths), plus the kernel's symbol table. Only what this kernel has.
void mask_proc() {
  for (const char* file :
       {"/proc/kallsyms", "/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/sysrq-trigger",
        "/proc/interrupts", "/proc/kpagecount", "/proc/kpageflags", "/proc/kpagecgroup"}) {
    std::string target = in_root(file);
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    check(::mount("/dev/null", target.c_str(), nullptr, MS_BIND, nullptr), "mask " + target);
    // nodev: the mask cannot be opened at all (EACCES), so a write to /proc/sysrq-trigger is
    // refused rather than vanishing into /dev/null — read-only alone does not stop writes to a
    // device node. A container's /dev/null is a bind with flags (noexec…) that a user namespace
    // may not drop: keep them.
    check(::mount(nullptr, target.c_str(), nullptr,
                  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | locked_flags(target),
                  nullptr),
          "remount " + target);
  }
  for (const char* dir : {"/proc/acpi", "/proc/asound", "/proc/scsi"}) {
    std::string target = in_root(dir);
    if (!fs::is_directory(target)) continue;
    mount_tmpfs(target, "mode=0555,size=4k", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
  }
  for (const char* dir : {"/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq"}) {
    std::string target = in_root(dir);
    if (!fs::is_directory(target)) continue;
    check(::mount(target.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr),
          "bind " + target);
    check(::mount(nullptr, target.c_str(), nullptr,
                  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr),
          "remount read-only " + target);
  }
}

}  // namespace

UniqueFd build_rootfs(const RootfsPlan& plan) {
  // Nothing we mount from here on may propagate back to the host.
  check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make / private");
  mount_tmpfs(kNewRoot, "mode=0755,size=1m", MS_NOSUID | MS_NODEV);

  make_dir(in_root("/usr"));
  bind_read_only("/usr", false);
  // /usr/local would leak host tools (a pyenv, say) into the sandbox: mask it.
  if (fs::is_directory(in_root("/usr/local")))
    mount_tmpfs(in_root("/usr/local"), "mode=0755,size=4k", MS_NOSUID | MS_NODEV | MS_RDONLY);
  for (const char* name : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"})
    mirror_top_level(name);
  build_etc(plan);
  build_dev();
  if (plan.layer_fd >= 0) bind_layer(plan);
  for (const auto& file : plan.files) {
    fs::create_directories(fs::path(in_root(file.path)).parent_path());
    write_text(in_root(file.path), std::string(file.text), file.mode);
  }
  UniqueFd tool_listener;
  if (plan.tool_channel) tool_listener = listen_for_tools();

  std::string owner =
      ",uid=" + std::to_string(plan.program_uid) + ",gid=" + std::to_string(plan.program_gid);
  make_dir(in_root("/work"));
  mount_tmpfs(in_root("/work"), "mode=0755,size=" + std::to_string(plan.work_bytes) + owner,
              MS_NOSUID | MS_NODEV);
  make_dir(in_root("/tmp"));
  mount_tmpfs(in_root("/tmp"), "mode=1777,size=" + std::to_string(plan.tmp_bytes),
              MS_NOSUID | MS_NODEV);
  mount_tmpfs(in_root("/dev/shm"), "mode=1777,size=" + std::to_string(plan.tmp_bytes),
              MS_NOSUID | MS_NODEV | MS_NOEXEC);
  make_dir(in_root(kCodeDir));
  mount_tmpfs(in_root(kCodeDir), "mode=0755,size=8m", MS_NOSUID | MS_NODEV);
  make_dir(in_root("/root"), 0700);
  make_dir(in_root("/proc"));
  // A private /proc for the sandbox's pid namespace: host processes are not in it. Programs
  // run as another uid than the supervisor and the calls' inits (or, unprivileged, the same uid
  // but those are not dumpable): hidepid=invisible leaves those out of /proc altogether.
  check(::mount("proc", in_root("/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "hidepid=invisible"),
        "mount /proc");
  mask_proc();
  // /dev is complete: make it read-only (the node binds stay writable as files).
  check(::mount(nullptr, in_root("/dev").c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr),
        "remount /dev read-only");

  make_dir(in_root("/.oldroot"));
  check(static_cast<int>(::syscall(SYS_pivot_root, kNewRoot, in_root("/.oldroot").c_str())),
        "pivot_root");
  check(::chdir("/"), "chdir /");
  check(::umount2("/.oldroot", MNT_DETACH), "detach old root");
  check(::rmdir("/.oldroot"), "rmdir /.oldroot");
  // The root itself (/etc, the mount points) becomes read-only last.
  check(::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                nullptr),
        "remount / read-only");
  return tool_listener;
}

}  // namespace sandgate::sandbox
