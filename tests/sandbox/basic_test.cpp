#include <catch2/catch.hpp>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;

TEST_CASE("a sandbox runs python, javascript and bash", "[sandbox]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto py = f.run(sb, Language::python, "print(6*7)");
  CHECK(py.outcome == RunOutcome::completed);
  CHECK(py.exit_code == 0);
  CHECK(py.stdout_text == "42\n");
  CHECK(py.stderr_text == "");
  auto js = f.run(sb, Language::javascript, "console.log(require('os').userInfo().uid)");
  CHECK(js.stdout_text == "1000\n");
  auto sh = f.run(sb, Language::bash, "echo hi | tr a-z A-Z; echo err >&2; exit 3");
  CHECK(sh.exit_code == 3);
  CHECK(sh.stdout_text == "HI\n");
  CHECK(sh.stderr_text == "err\n");
}
