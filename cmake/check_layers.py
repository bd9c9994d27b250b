#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, executable: every project #include must point to the
including file's own layer or to one below it. Run by the build (a violation fails it) and by
ctest. Usage: check_layers.py SOURCE_DIR"""
import pathlib
import re
import sys

# Each layer, by the folder its files are in, and the layers it may include. The most specific
# folder wins (server/http before server). Keep in step with docs/architecture.md.
SANDBOX = {"sandbox", "sandbox/inside", "sandbox/cgroups", "sandbox/shared"}
MAY_INCLUDE = {
    "common": set(),
    # tenant/: one tenant resolved (limits, shares, budgets, egress), built by auth, read below.
    "tenant": {"egress", "ledger", "common"},
    "auth": {"tenant", "egress", "common"},
    # ledger/: usage records and their store; fed by sessions, read by the gateway (issue #28).
    "ledger": {"common"},
    # egress/: the sandboxes' forward proxy (issue #30); knows nothing of sandboxes or sessions.
    "egress": {"common"},
    # sandbox/: the gateway's side; inside/ runs in the sandbox (supervisor, rootfs, seccomp …)
    # and sees only the files both sides share (SHARED below); cgroups/ the same.
    "sandbox/shared": {"common"},
    "sandbox/inside": {"sandbox/shared", "common"},
    "sandbox/cgroups": {"sandbox/shared", "common"},
    "sandbox": {"sandbox/inside", "sandbox/cgroups", "sandbox/shared", "common"},
    "session": {"sandbox", "sandbox/shared", "tenant", "ledger", "egress", "common"},
    "server/metrics": {"common"},
    "server/http": {"server/metrics", "common"},
    "server/tools": {"tenant", "server/metrics", "session", "sandbox", "sandbox/shared", "auth", "egress",
                     "common"},
    "server/tasks": {"tenant", "server/tools", "server/metrics", "session", "sandbox", "sandbox/shared",
                     "auth", "common"},
    "server/mcp": {"tenant", "server/http", "server/tasks", "server/tools", "server/metrics", "session",
                   "sandbox", "sandbox/shared", "auth", "common"},
    "server/gateway": {"tenant", "server/mcp", "server/http", "server/tasks", "server/tools",
                       "server/metrics", "session", "ledger", "auth", "egress", "common"} | SANDBOX,
}
# The files at sandbox/'s top that both sides of the sandbox use: the wire protocol between
# gateway and supervisor, descriptor passing, the transfer format, small file helpers, limits.
SHARED = {"sandbox/protocol.hpp", "sandbox/fd_passing.hpp", "sandbox/fd_passing.cpp",
          "sandbox/file_transfer.hpp", "sandbox/file_transfer.cpp", "sandbox/file_util.hpp",
          "sandbox/file_util.cpp", "sandbox/limits.hpp"}
# Tests, benchmarks and the test-only servers may use every layer; nothing may include them.
OUTSIDE_THE_PRODUCT = ("tests", "bench")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(relative: pathlib.PurePosixPath):
    text = relative.as_posix()
    if text in SHARED:
        return "sandbox/shared"
    best = None
    for layer in MAY_INCLUDE:
        if text.startswith(layer + "/") and (best is None or len(layer) > len(best)):
            best = layer
    return best


def resolve(root: pathlib.Path, including: pathlib.Path, name: str):
    """The project file an include names: beside the including file first, then from the root
    (the include directory every target exports); None for a generated or system header."""
    for candidate in (including.parent / name, root / name):
        if candidate.is_file():
            return candidate.resolve().relative_to(root)
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.suffix not in SOURCE_SUFFIXES or rel.parts[0].startswith(("build", ".")):
            continue
        own = layer_of(pathlib.PurePosixPath(rel.as_posix()))
        if own is None and rel.parts[0] not in OUTSIDE_THE_PRODUCT:
            problems.append(f"{rel}: in no layer (add its folder to cmake/check_layers.py)")
            continue
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            target = resolve(root, path, name)
            if target is None:
                continue
            if target.parts[0] in OUTSIDE_THE_PRODUCT:
                if own is not None:
                    problems.append(f"{rel}: includes {target}, which is test or benchmark code")
                continue
            theirs = layer_of(pathlib.PurePosixPath(target.as_posix()))
            if own is None or theirs == own:
                continue
            if theirs not in MAY_INCLUDE[own]:
                problems.append(f"{rel} ({own}) includes {target} ({theirs}): "
                                f"{own} may include only {sorted(MAY_INCLUDE[own]) or 'nothing'}")
    for problem in problems:
        print(f"layer rule: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
