#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, executable: every project #include must point to the
including file's own layer or to one below it; a layer's private part is reached only from inside
its folder; and a layer that knows no HTTP or MCP includes no library for them. Run by the build
(a violation fails it) and by ctest; cmake/check_layers_test.py tests it.

Usage: check_layers.py SOURCE_DIR   check the tree; each violation on stderr, exit status 1
       check_layers.py --globs      the globs of every layer's files, relative to the source
                                    directory and ';'-separated: the build step's DEPENDS"""
import os
import pathlib
import re
import sys

# Each layer, by the folder its files are in, and the layers it may include. The most specific
# folder wins (server/http before server). Keep in step with docs/architecture.md.
MAY_INCLUDE = {
    "common": set(),
    # tenant/: one tenant resolved (limits, shares, budgets, egress), built by auth, read below.
    "tenant": {"secrets", "egress", "ledger", "common"},
    "auth": {"tenant", "egress", "common"},
    # ledger/: usage records and their store; fed by sessions, read by the gateway (issue #28).
    "ledger": {"common"},
    # egress/: the sandboxes' forward proxy (issue #30); knows nothing of sandboxes or sessions.
    "egress": {"common"},
    # secrets/: the operator's secrets file (issue #44); the values egress/ adds to requests.
    "secrets": {"egress", "common"},
    # sandbox/: the gateway's side; inside/ runs in the sandbox (supervisor, rootfs, seccomp …)
    # and sees only the files both sides share (SHARED below); cgroups/ the same.
    "sandbox/shared": {"common"},
    "sandbox/inside": {"sandbox/shared", "common"},
    "sandbox/cgroups": {"sandbox/shared", "common"},
    "sandbox": {"sandbox/inside", "sandbox/cgroups", "sandbox/shared", "common"},
    # upstream/: the operator's upstream MCP servers and the gateway as their client, and the
    # channel sandboxed code calls them through (issue #45); knows nothing of sandboxes.
    "upstream": {"common"},
    "session": {"sandbox", "sandbox/shared", "tenant", "ledger", "egress", "upstream", "common"},
    # environment/: the operator's named environments (issue #43): definitions, the layer store,
    # the builds (in sandboxes, with egress), and which one a call runs in.
    "environment": {"sandbox", "sandbox/shared", "egress", "common"},
    "server/metrics": {"common"},
    "server/http": {"server/metrics", "common"},
    "server/tools": {"tenant", "server/metrics", "session", "environment", "upstream", "sandbox", "sandbox/shared",
                     "auth", "egress", "common"},
    "server/tasks": {"tenant", "server/tools", "server/metrics", "session", "environment", "upstream", "sandbox",
                     "sandbox/shared", "auth", "common"},
    "server/mcp": {"tenant", "server/http", "server/tasks", "server/tools", "server/metrics", "session",
                   "environment", "upstream", "sandbox", "sandbox/shared", "auth", "common"},
    # server/admin/: the operator's unix socket and CLI verbs (issue #47): sessions listed and
    # ended, and the egress connections kept for the operator (issue #44); no HTTP, no MCP.
    "server/admin": {"session", "egress", "common"},
    # server/stdio/: the MCP stdio transport in front of the Endpoint interface (issue #47).
    "server/stdio": {"server/http", "common"},
    # The gateway wires everything, and its binary is also the sandbox's supervisor (it
    # re-executes itself into sandbox/inside's entry point); only sandbox/cgroups stays out.
    "server/gateway": {"tenant", "secrets", "server/admin", "server/stdio", "server/mcp", "server/http",
                       "server/tasks", "server/tools", "server/metrics", "session", "environment",
                       "ledger", "auth", "egress", "upstream", "common",
                       "sandbox", "sandbox/inside", "sandbox/shared"},
}
# The files at sandbox/'s top that both sides of the sandbox use: the wire protocol between
# gateway and supervisor, descriptor passing, the transfer format, small file helpers, limits.
SHARED = {"sandbox/protocol.hpp", "sandbox/fd_passing.hpp", "sandbox/fd_passing.cpp",
          "sandbox/file_transfer.hpp", "sandbox/file_transfer.cpp", "sandbox/file_util.hpp",
          "sandbox/file_util.cpp", "sandbox/limits.hpp"}
# Layers private to the folder that holds them: no file outside that folder includes them, and
# neither does a header at the folder's top — those are what the layers above include, so the
# private part would reach them through it. The folder's .cpp files and its subfolders may.
PRIVATE_TO = {
    # The sandboxes' cgroups are driven by sandbox/ alone: SandboxHost and Sandbox hold them
    # behind forward declarations (sandbox/host.hpp, sandbox/sandbox.hpp).
    "sandbox/cgroups": "sandbox",
}
# Third-party headers a layer (with every layer in its folder) must not include, by include-name
# prefix ("boost/beast" is boost/beast.hpp and boost/beast/...), and why.
FORBIDDEN_THIRD_PARTY = {
    # sandbox/ knows nothing of HTTP or MCP: it speaks its own binary protocol with the supervisor.
    "sandbox": (("boost/beast", "nlohmann"), "sandbox/ knows nothing of HTTP or MCP"),
    # session/ knows nothing of HTTP; it does use JSON, for the saved registry (saved_sessions.cpp).
    "session": (("boost/beast",), "session/ knows nothing of HTTP"),
    # tenant/ is a value: what a tenant gets, read by the layers that know no HTTP either.
    "tenant": (("boost/beast", "nlohmann"), "tenant/ knows nothing of HTTP or MCP"),
    # environment/ reads its definitions file as JSON, but speaks no HTTP.
    "environment": (("boost/beast",), "environment/ knows nothing of HTTP"),
    # secrets/ reads a file of the operator's; it speaks no HTTP (egress/ applies the headers).
    "secrets": (("boost/beast", "nlohmann"), "secrets/ knows nothing of HTTP or MCP"),
    # server/admin/ speaks one JSON line each way on a unix socket, never HTTP.
    "server/admin": (("boost/beast",), "server/admin/ knows nothing of HTTP"),
}
# Tests, benchmarks and the test-only servers may use every layer; nothing may include them.
OUTSIDE_THE_PRODUCT = ("tests", "bench")
# Every kind of C++ file ours or a new one might be (.in: configured into the build tree).
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".hh", ".cxx", ".hxx", ".ipp", ".in")
HEADER_SUFFIXES = (".hpp", ".h", ".hh", ".hxx", ".ipp")
# Quoted and angle-bracket includes alike: `#include <server/mcp/jsonrpc.hpp>` names our file as
# surely as the quoted form does.
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.MULTILINE)

for _layer, _allowed in MAY_INCLUDE.items():
    for _private, _owner in PRIVATE_TO.items():
        # A table that let another folder include a private layer would contradict itself.
        assert _private not in _allowed or (_layer + "/").startswith(_owner + "/"), _layer


def top_folders():
    return sorted({layer.split("/")[0] for layer in MAY_INCLUDE})


def globs():
    return [f"{folder}/*{suffix}" for folder in top_folders() for suffix in SOURCE_SUFFIXES]


def in_folder(layer, folder):
    return layer == folder or layer.startswith(folder + "/")


def is_header(path: pathlib.PurePosixPath):
    name = path.name[:-len(".in")] if path.name.endswith(".in") else path.name
    return name.endswith(HEADER_SUFFIXES)


def layer_of(relative: pathlib.PurePosixPath):
    text = relative.as_posix()
    if text in SHARED:
        return "sandbox/shared"
    best = None
    for layer in MAY_INCLUDE:
        if text.startswith(layer + "/") and (best is None or len(layer) > len(best)):
            best = layer
    return best


def resolve(root: pathlib.Path, including: pathlib.Path, name: str, angled: bool):
    """The project file an include names: a quoted one beside the including file first, then
    from the root (the include directory every target exports); an angle-bracket one from the
    root only, as the compiler looks. None for a generated, system or third-party header."""
    candidates = [root / name] if angled else [including.parent / name, root / name]
    for candidate in candidates:
        if candidate.is_file():
            try:
                return candidate.resolve().relative_to(root)
            except ValueError:  # outside the tree ("../" too far): not ours
                return None
    return None


def source_files(root: pathlib.Path):
    for directory, subdirectories, files in os.walk(root):
        top = pathlib.Path(directory) == root
        # Build trees and hidden folders at the top; hidden folders and npm's packages anywhere.
        subdirectories[:] = sorted(
            d for d in subdirectories
            if not d.startswith(".") and d != "node_modules" and not (top and d.startswith("build")))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield pathlib.Path(directory) / name


def forbidden_third_party(own, name):
    for folder, (prefixes, why) in FORBIDDEN_THIRD_PARTY.items():
        if in_folder(own, folder):
            for prefix in prefixes:
                if name == prefix or name.startswith((prefix + "/", prefix + ".")):
                    return why
    return None


def check(root: pathlib.Path):
    """Every violation in the tree at `root`, one line each, naming the including file first."""
    problems = []
    for path in source_files(root):
        rel = pathlib.PurePosixPath(path.relative_to(root).as_posix())
        own = layer_of(rel)
        if own is None and rel.parts[0] not in OUTSIDE_THE_PRODUCT:
            problems.append(f"{rel}: in no layer (add its folder to cmake/check_layers.py)")
            continue
        for quoted, angled in INCLUDE.findall(path.read_text(errors="replace")):
            name = quoted or angled
            shown = f'"{name}"' if quoted else f"<{name}>"
            target = resolve(root, path, name, bool(angled))
            if target is None:
                why = forbidden_third_party(own, name) if own is not None else None
                if why:
                    problems.append(f"{rel} ({own}) includes {shown}: {why}")
                continue
            target = pathlib.PurePosixPath(target.as_posix())
            if target.parts[0] in OUTSIDE_THE_PRODUCT:
                if own is not None:
                    problems.append(f"{rel}: includes {target}, which is test or benchmark code")
                continue
            theirs = layer_of(target)
            if own is None or theirs == own:
                continue
            owner = PRIVATE_TO.get(theirs)
            if owner is not None and not in_folder(own, owner):
                problems.append(f"{rel} ({own}) includes {target} ({theirs}): {theirs} is "
                                f"private to {owner}/, which includes it only from its .cpp files")
            elif theirs not in MAY_INCLUDE[own]:
                problems.append(f"{rel} ({own}) includes {target} ({theirs}): "
                                f"{own} may include only {sorted(MAY_INCLUDE[own]) or 'nothing'}")
            elif owner is not None and rel.parent.as_posix() == owner and is_header(rel):
                problems.append(f"{rel} includes {target} ({theirs}): a header at {owner}/'s top "
                                f"is read by the layers above, so {theirs} would reach them; "
                                f"include it from a .cpp file")
    return problems


def main(argv) -> int:
    if argv[1:] == ["--globs"]:
        print(";".join(globs()))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(pathlib.Path(argv[1]).resolve())
    for problem in problems:
        print(f"layer rule: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
