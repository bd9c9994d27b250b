#pragma once
// Reading the tokens file from disk, and judging who else could read or change it.
//
// Writable by group or others: refused. Whoever can write the file can add a token of their
// own and become a tenant, so the gateway will not start with it, nor reload it (the file's
// mode bits do not matter on a read-only mount, a Kubernetes Secret's). Readable by group or
// others: a warning only. The file holds SHA-256 digests, never tokens; a long random token
// cannot be recovered from its digest, but a short or guessable one can be tried offline.
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "token_store.hpp"

namespace sandgate::auth {

struct ModeVerdict {
  std::string refusal;  // set: do not use the file
  std::string warning;  // set: use it, and say this loudly
};
// `mode` as from stat(2); `read_only_mount`: the file system is mounted read-only.
ModeVerdict judge_token_file_mode(const std::filesystem::path& path, mode_t mode,
                                  bool read_only_mount);

struct LoadedTokens {
  TokenStore store;
  std::string warning;  // from judge_token_file_mode, empty when none
};
// Reads, judges and parses the file, each tenant from `defaults`. Throws std::runtime_error
// saying why it is not used.
LoadedTokens load_token_file(const std::filesystem::path& path, const Tenant& defaults = {});

}  // namespace sandgate::auth
