#include "cgroup_kill.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <system_error>
#include <thread>

#include "cgroup_tree.hpp"
#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> child_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) out.push_back(entry.path());
  return out;
}

// Freezes a v1 freezer cgroup, signals its members, thaws it. A frozen process cannot exit, so
// a pid listed while frozen is still that process when it is signalled; it dies on thawing.
void freeze_and_kill(const fs::path& dir) {
  try {
    write_file(dir / "freezer.state", "FROZEN");
  } catch (const std::system_error&) {
    return;
  }
  bool frozen = false;
  for (int attempt = 0; attempt < 200 && !frozen; ++attempt) {
    frozen = read_file(dir / "freezer.state").value_or("") == "FROZEN\n";
    if (!frozen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Still FREEZING (a process stuck in the kernel): signalling by pid would not be safe.
  if (frozen)
    for (pid_t p : cgroup_procs(dir)) ::kill(p, SIGKILL);
  try {
    write_file(dir / "freezer.state", "THAWED");
  } catch (const std::system_error&) {
  }
}

// Kills everything in a cgroup and below, where the hierarchy offers a way that names no pid:
// cgroup.kill (v2, the whole subtree at once) or the v1 freezer. Other v1 hierarchies hold the
// same processes as the sandbox's killer cgroup, which kills them; nothing is signalled by a
// pid read from their cgroup.procs.
void kill_members(const fs::path& dir) {
  if (fs::exists(dir / "cgroup.kill")) {
    try {
      write_file(dir / "cgroup.kill", "1");
    } catch (const std::system_error&) {
    }
    return;
  }
  for (const auto& child : child_dirs(dir)) kill_members(child);
  if (fs::exists(dir / "freezer.state")) freeze_and_kill(dir);
}

// Removes a cgroup and its children once their processes are gone, retrying (and killing
// again) while the kernel reaps.
void remove_tree(const fs::path& dir) {
  for (const auto& child : child_dirs(dir)) remove_tree(child);
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (attempt % 20 == 19) kill_members(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

// Kills first in every directory (the killer's reaches the processes the others list too),
// then removes them.
void kill_and_remove(const std::vector<fs::path>& dirs) {
  for (const auto& d : dirs) kill_members(d);
  for (const auto& d : dirs) remove_tree(d);
}

}  // namespace sandgate::sandbox
