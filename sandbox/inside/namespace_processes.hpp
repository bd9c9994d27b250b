#pragma once
// The supervisor's view of one nested pid namespace (a call's or an interpreter's), through the
// sandbox's /proc: used to stop what one interpreter call started without ending the
// interpreter itself.
#include <sys/types.h>

#include <cstdint>

namespace sandgate::sandbox {

// Kills every process of the pid namespace whose init is `init` (a pid of the supervisor's
// namespace) that started at or after `since_boottime_ns` (CLOCK_BOOTTIME), sparing the init
// and the namespace's pid 2 (the interpreter, started before any call). Repeats while it finds
// some, since a dying fork loop may still add one. Then sends SIGINT to pid 2, which interrupts
// the call's code. Best effort: a process that escapes dies with the interpreter if the
// interpreter does not answer the interrupt in time.
void interrupt_interpreter(pid_t init, std::uint64_t since_boottime_ns);

}  // namespace sandgate::sandbox
