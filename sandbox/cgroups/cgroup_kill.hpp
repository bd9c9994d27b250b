#pragma once
// Ending a cgroup's processes without naming a pid (cgroup.kill, else the v1 freezer), then
// removing its directories, children first.
#include <filesystem>
#include <vector>

namespace sandgate::sandbox {

// Kills every process in each directory's subtree and removes the subtrees. Best effort.
void kill_and_remove(const std::vector<std::filesystem::path>& dirs);

}  // namespace sandgate::sandbox
