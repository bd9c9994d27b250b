#pragma once
// Builds the sandbox's root filesystem inside its own mount namespace and pivots into it.
// Runs in the supervisor, as root of the sandbox's user namespace, before any program runs.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

struct RootfsPlan {
  std::uint64_t work_bytes;
  std::uint64_t tmp_bytes;
  uid_t program_uid;  // owner of /work and /tmp inside the sandbox
  gid_t program_gid;
  // Files written into the (read-only) root, with their directories: absolute path, contents,
  // mode.
  struct File {
    std::string path;
    std::string text;  // owned: a file made from what the supervisor read (the CA bundle) too
    mode_t mode = 0644;
  };
  std::vector<File> files;
  // Bind and listen on protocol::kToolChannelSocket (issue #45), before the root turns read-only.
  bool tool_channel = false;
  // An environment's layer (protocol::kLayerFd, or -1: none), bound at kLayerMountPoint
  // read-only — or writable for its build — and closed once bound.
  int layer_fd = -1;
  bool layer_writable = false;
};

// Where the supervisor writes each call's program (read-only for the program).
constexpr const char* kCodeDir = "/code";

// Python's own support files (sitecustomize, the figure backend), on every program's PYTHONPATH.
constexpr const char* kPythonSupportDir = "/sandgate/python";

// With egress: the certificates its programs' TLS clients trust (SSL_CERT_FILE and the other
// variables of program_launch.cpp): the system's store, plus the gateway CA's certificate when
// the gateway terminates TLS for hosts carrying a secret (issue #44). Never a key.
constexpr const char* kEgressCaBundle = "/sandgate/ca/bundle.pem";

// The tool channel's programs (issue #45): sandgate-tool for bash on every program's PATH, and
// sandgate_tools for JavaScript on NODE_PATH (Python's is in kPythonSupportDir).
constexpr const char* kToolsBinDir = "/sandgate/bin";
constexpr const char* kToolsNodeDir = "/sandgate/node";

// Throws std::system_error naming the failing step. Returns the tool channel's listening socket
// when the plan asks for one (else an empty descriptor).
UniqueFd build_rootfs(const RootfsPlan& plan);

}  // namespace sandgate::sandbox
