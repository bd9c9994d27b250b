// RunRequest::on_output on real sandboxes: it sees each stream's bytes in order as the program
// writes them, the same bytes the result keeps, and never more than the output cap, for the
// persistent interpreters and fresh processes alike.
#include <catch2/catch.hpp>
#include <string>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::OutputStream;
using sandgate::sandbox::RunRequest;
using sandgate::sandbox::RunResult;

namespace {

struct Seen {
  std::string out, err;
  int calls = 0;
};

RunResult run_observed(sandgate::test::SandboxFixture& f,
                       const std::shared_ptr<sandgate::sandbox::Sandbox>& sb, Language language,
                       bool fresh, std::string code, Seen& seen) {
  RunRequest r;
  r.language = language;
  r.fresh = fresh;
  r.code = std::move(code);
  r.timeout = std::chrono::seconds(20);
  r.on_output = [&seen](OutputStream which, std::string_view bytes) {
    (which == OutputStream::err ? seen.err : seen.out).append(bytes);
    ++seen.calls;
  };
  return f.await(sb->run(std::move(r)));
}

}  // namespace

TEST_CASE("on_output sees each stream in order, as the result keeps it", "[sandbox][live_output]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  const std::string python =
      "import sys, time\n"
      "for i in range(5):\n"
      "    print('out', i)\n"
      "    print('err', i, file=sys.stderr)\n"
      "    time.sleep(0.05)\n";
  const std::string javascript =
      "for (let i = 0; i < 5; i++) { console.log('out', i); console.error('err', i); }";
  const std::string bash = "for i in 0 1 2 3 4; do echo out $i; echo err $i >&2; done";
  struct Case {
    Language language;
    bool fresh;
    const std::string& code;
  };
  for (const Case& c :
       {Case{Language::python, false, python}, Case{Language::python, true, python},
        Case{Language::javascript, false, javascript}, Case{Language::javascript, true, javascript},
        Case{Language::bash, true, bash}}) {
    Seen seen;
    auto result = run_observed(f, sb, c.language, c.fresh, c.code, seen);
    INFO(sandgate::sandbox::language_name(c.language) << (c.fresh ? " fresh" : " interpreter"));
    CHECK(result.exit_code == 0);
    CHECK(result.stdout_text == "out 0\nout 1\nout 2\nout 3\nout 4\n");
    CHECK(result.stderr_text == "err 0\nerr 1\nerr 2\nerr 3\nerr 4\n");
    CHECK(seen.out == result.stdout_text);
    CHECK(seen.err == result.stderr_text);
    CHECK(seen.calls >= 2);
  }
}

TEST_CASE("on_output never sees more than the output cap", "[sandbox][live_output]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.output_bytes = 64 * 1024;
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // A flood on both streams, far over the cap: what is seen is what is kept, a prefix of each.
  const std::string flood =
      "import sys\n"
      "for i in range(20000):\n"
      "    sys.stdout.write('%07d\\n' % i)\n"
      "    sys.stderr.write('E%06d\\n' % i)\n";
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter"));
    Seen seen;
    auto result = run_observed(f, sb, Language::python, fresh, flood, seen);
    CHECK(result.truncated);
    CHECK(seen.out.size() + seen.err.size() <= config.limits.output_bytes);
    CHECK(seen.out == result.stdout_text);
    CHECK(seen.err == result.stderr_text);
    CHECK(std::string("0000000\n0000001\n").compare(0, 16, seen.out, 0, 16) == 0);
  }
}
