#pragma once
// A gateway's instance directory in each cgroup hierarchy, named after the gateway process so that
// a later start can tell whether its owner still runs (and sweep it if not).
#include <string>

namespace sandgate::sandbox {

constexpr const char* kInstancePrefix = "sandgate-";

// "sandgate-<pid>-<start time>-<n>": n tells apart several sandbox hosts in one process.
std::string instance_name();
// Whether the gateway that named a directory "sandgate-<pid>-<start>-…" is still running.
bool owner_alive(const std::string& name);

}  // namespace sandgate::sandbox
