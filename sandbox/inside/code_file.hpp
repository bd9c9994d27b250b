#pragma once
// The supervisor's copy of a call's code into /code, where the program reads it.
#include <string>

namespace sandgate::sandbox {

// Copies the memfd's bytes into a new file at `path` (mode 0444). Whatever is at `path` already
// is unlinked first and the file is created with O_EXCL|O_NOFOLLOW: where a program shares the
// supervisor's uid (unprivileged mode; /code is then closed to it only by Landlock), a file or
// symlink it planted is neither followed nor reused. Returns 0 or errno (the call then fails).
int write_code_file(int memfd, const std::string& path);

}  // namespace sandgate::sandbox
