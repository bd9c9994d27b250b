#pragma once
// The supervisor: the first process of a sandbox, living inside its namespaces for the sandbox's
// whole life. It builds the root filesystem once, then forks one "call init" per run request:
// the init of a fresh pid namespace nested in the sandbox's, which starts the program and stays
// to reap what the program leaves behind. Killing a call's init kills the call's whole tree
// (setsid and double-forked children included); background processes of finished calls live on.

namespace sandgate::sandbox {

// True when argv asks this binary to act as a supervisor (see protocol::kSupervisorArgv0).
bool is_supervisor_invocation(int argc, char** argv);

// Never returns.
[[noreturn]] void supervisor_main(int argc, char** argv);

}  // namespace sandgate::sandbox
