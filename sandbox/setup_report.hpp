#pragma once
// The first thing a new supervisor says: that its sandbox is built, or why not.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "spawn.hpp"

namespace sandgate::sandbox {

// Waits up to `timeout` for the supervisor's report. Returns "" when the sandbox is ready,
// otherwise what went wrong, in words an operator can act on. A supervisor that died is
// reaped here and its pid set to -1.
boost::asio::awaitable<std::string> await_setup_report(SpawnedSupervisor& spawned,
                                                       std::chrono::milliseconds timeout);

// A supervisor's failure with what grants the missing permission added where it is known: a
// mount step of the sandbox's root refused with EACCES (only an LSM answers a mount that way;
// a missing capability or seccomp says EPERM) names the shipped AppArmor profile.
std::string explain_setup_failure(std::string failure);

}  // namespace sandgate::sandbox
