#!/usr/bin/env python3
"""The layer check's own test (ctest: "build: the layer check catches each kind of violation"):
small trees, each with one kind of violation, must fail the check with a line naming the file
at fault; the clean tree must pass. The check runs as the build runs it, a process per tree."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).resolve().parent / "check_layers.py"
sys.path.insert(0, str(CHECK.parent))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import check_layers  # noqa: E402  (for its table: --globs)

# A tree that follows every rule, with what the rules allow at their edges: sandbox/'s .cpp
# files and its folders' files include cgroups/, session/ includes nlohmann's JSON, tests include
# anything, an angle-bracket include of a layer below, system and third-party headers.
CLEAN = {
    "common/text.hpp": "#pragma once\n#include <string>\n",
    "common/text.cpp": '#include "text.hpp"\n',
    "ledger/store.hpp": '#pragma once\n#include "common/text.hpp"\n',
    "egress/relay.hpp": "#pragma once\n#include <boost/beast/http.hpp>\n#include <common/text.hpp>\n",
    "auth/token.hpp": '#pragma once\n#include "egress/relay.hpp"\n',
    "sandbox/limits.hpp": '#pragma once\n#include "common/text.hpp"\n',
    "sandbox/sandbox.hpp": '#pragma once\n#include "limits.hpp"\nclass CgroupSet;\n',
    "sandbox/sandbox.cpp": '#include "sandbox.hpp"\n#include "sandbox/cgroups/cgroups.hpp"\n',
    "sandbox/host.cpp": "#include <sandbox/cgroups/cgroups.hpp>\n",
    "sandbox/cgroups/cgroups.hpp": '#pragma once\n#include "sandbox/limits.hpp"\n',
    "sandbox/cgroups/cgroups.cpp": '#include "cgroups.hpp"\n',
    "sandbox/inside/supervisor.hpp": '#pragma once\n#include "sandbox/limits.hpp"\n',
    "session/session.hpp": '#pragma once\n#include "sandbox/sandbox.hpp"\n#include "ledger/store.hpp"\n',
    "session/saved.cpp": '#include "session.hpp"\n#include <nlohmann/json.hpp>\n',
    "server/tools/tools.hpp": '#pragma once\n#include "session/session.hpp"\n',
    "server/http/http.hpp": "#pragma once\n#include <boost/beast/http.hpp>\n",
    "server/mcp/jsonrpc.hpp": '#pragma once\n#include "server/http/http.hpp"\n',
    "server/gateway/main.cpp": '#include "server/mcp/jsonrpc.hpp"\n#include "sandbox/inside/supervisor.hpp"\n',
    "tests/cgroups_test.cpp": '#include "sandbox/cgroups/cgroups.hpp"\n#include "server/mcp/jsonrpc.hpp"\n',
}


def run_check(files):
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        done = subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True,
                              text=True, check=False)
        return done.returncode, done.stderr


class LayerCheck(unittest.TestCase):
    def assert_fails_on(self, culprit, text, mentioning=None):
        """The clean tree with `culprit` added (or replaced) fails, naming it."""
        code, errors = run_check({**CLEAN, culprit: text})
        self.assertEqual(code, 1, errors)
        lines = [line for line in errors.splitlines() if line.startswith(f"layer rule: {culprit}")]
        self.assertTrue(lines, f"no line names {culprit}:\n{errors}")
        if mentioning:
            self.assertIn(mentioning, "\n".join(lines))
        # Only the culprit is at fault.
        self.assertEqual(len(lines), len(errors.splitlines()), errors)

    def test_clean_tree_passes(self):
        code, errors = run_check(CLEAN)
        self.assertEqual((code, errors), (0, ""))

    def test_quoted_include_of_a_layer_above(self):
        self.assert_fails_on("common/bad.cpp", '#include "session/session.hpp"\n', "(session)")

    def test_quoted_include_beside_of_a_layer_beside(self):
        self.assert_fails_on("egress/bad.cpp", '#include "../ledger/store.hpp"\n', "(ledger)")

    def test_angle_bracket_include_of_a_layer_above(self):
        self.assert_fails_on("sandbox/bad.cpp", "#include <server/mcp/jsonrpc.hpp>\n",
                             "(server/mcp)")

    def test_angle_bracket_include_without_spaces(self):
        self.assert_fails_on("session/bad.cpp", "#include<server/tools/tools.hpp>\n",
                             "(server/tools)")

    def test_dot_h_file(self):
        self.assert_fails_on("ledger/bad.h", '#include "egress/relay.hpp"\n', "(egress)")

    def test_dot_cc_file(self):
        self.assert_fails_on("egress/bad.cc", '#include "auth/token.hpp"\n', "(auth)")

    def test_other_suffixes(self):
        for suffix in (".hh", ".cxx", ".ipp"):
            with self.subTest(suffix=suffix):
                self.assert_fails_on(f"common/bad{suffix}", '#include "ledger/store.hpp"\n')

    def test_configured_header(self):
        self.assert_fails_on("common/bad.hpp.in", '#include "auth/token.hpp"\n')

    def test_beast_in_session(self):
        self.assert_fails_on("session/bad.cpp", "#include <boost/beast/http.hpp>\n",
                             "knows nothing of HTTP")

    def test_beast_header_itself_in_session(self):
        self.assert_fails_on("session/bad.hpp", '#include "boost/beast.hpp"\n')

    def test_beast_in_sandbox_inside(self):
        self.assert_fails_on("sandbox/inside/bad.cpp", "#include <boost/beast/core.hpp>\n")

    def test_json_in_sandbox(self):
        self.assert_fails_on("sandbox/bad.cpp", "#include <nlohmann/json.hpp>\n",
                             "knows nothing of HTTP or MCP")

    def test_json_in_sandbox_cgroups(self):
        self.assert_fails_on("sandbox/cgroups/bad.cpp", "#include <nlohmann/json_fwd.hpp>\n")

    def test_cgroups_from_a_sandbox_top_level_header(self):
        self.assert_fails_on("sandbox/host.hpp", '#include "sandbox/cgroups/cgroups.hpp"\n',
                             "header at sandbox/'s top")

    def test_cgroups_from_a_sandbox_top_level_header_relative(self):
        self.assert_fails_on("sandbox/sandbox.hpp", '#include "cgroups/cgroups.hpp"\n',
                             "header at sandbox/'s top")

    def test_cgroups_from_session(self):
        self.assert_fails_on("session/bad.cpp", '#include "sandbox/cgroups/cgroups.hpp"\n',
                             "private to sandbox/")

    def test_cgroups_from_the_gateway(self):
        self.assert_fails_on("server/gateway/bad.cpp", "#include <sandbox/cgroups/cgroups.hpp>\n",
                             "private to sandbox/")

    def test_test_code_from_the_product(self):
        self.assert_fails_on("server/tools/bad.cpp", '#include "tests/cgroups_test.cpp"\n')

    def test_file_in_no_layer(self):
        self.assert_fails_on("stray/bad.cpp", "\n", "in no layer")

    def test_commented_out_include_is_ignored(self):
        code, errors = run_check({**CLEAN, "common/ok.cpp": '// #include "session/session.hpp"\n'})
        self.assertEqual((code, errors), (0, ""))

    def test_globs_cover_every_layer(self):
        folders = {glob.split("/")[0] for glob in check_layers.globs()}
        self.assertEqual(folders, {layer.split("/")[0] for layer in check_layers.MAY_INCLUDE})
        self.assertIn("ledger", folders)
        printed = subprocess.run([sys.executable, str(CHECK), "--globs"], capture_output=True,
                                 text=True, check=True).stdout.strip().split(";")
        for suffix in check_layers.SOURCE_SUFFIXES:
            self.assertIn(f"ledger/*{suffix}", printed)


if __name__ == "__main__":
    unittest.main()
