// Matplotlib figures come back as PNG images, from the persistent interpreter and from fresh
// processes, within the limits; a program that writes garbage to the figure channel gets
// nothing and breaks nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;
using sandgate::sandbox::RunResult;

namespace {

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", outcome " +
         std::to_string(static_cast<int>(r.outcome)) + ", images " +
         std::to_string(r.images.size()) + ", note '" + r.images_note + "', state_lost '" +
         r.state_lost + "'\nstdout: " + r.stdout_text + "\nstderr: " + r.stderr_text +
         "\nfailure: " + r.failure;
}

bool is_png(const std::string& bytes) {
  return bytes.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) == 0;
}

// The fixture's sandboxes need matplotlib on the host (Debian: python3-matplotlib).
bool require_matplotlib(sandgate::test::SandboxFixture& f,
                        const std::shared_ptr<sandgate::sandbox::Sandbox>& sb) {
  bool fresh = f.fresh;
  f.fresh = true;
  auto probe = f.run(sb, Language::python, "import matplotlib");
  f.fresh = fresh;
  if (probe.exit_code == 0) return true;
  // Only a host without matplotlib skips: where the host has it, a sandbox that cannot import
  // it is the failure this test exists to catch.
  REQUIRE_FALSE(std::filesystem::exists("/usr/lib/python3/dist-packages/matplotlib"));
  sandgate::test::skip_test("matplotlib", "matplotlib is not installed for /usr/bin/python3");
  return false;
}

const char* mode_name(bool fresh) {
  return fresh ? "fresh process" : "persistent interpreter";
}

}  // namespace

TEST_CASE("figures: plt.show() and figures left open come back as PNGs of their size",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  if (!require_matplotlib(f, sb)) return;
  for (bool fresh : {false, true}) {
    INFO(mode_name(fresh));
    f.fresh = fresh;
    auto shown = f.run(sb, Language::python,
                       "import matplotlib.pyplot as plt\n"
                       "plt.figure(figsize=(4, 3), dpi=100)\n"
                       "plt.plot([1, 2, 3], [1, 4, 9])\n"
                       "plt.show()\n"
                       "print('after show', len(plt.get_fignums()))\n");
    INFO(describe(shown));
    CHECK(shown.exit_code == 0);
    CHECK(shown.stdout_text == "after show 0\n");  // show() handed it over and closed it
    REQUIRE(shown.images.size() == 1);
    CHECK(shown.images[0].width == 400);
    CHECK(shown.images[0].height == 300);
    CHECK(is_png(shown.images[0].png));
    CHECK(shown.images_note.empty());

    auto left_open = f.run(sb, Language::python,
                           "import matplotlib.pyplot as plt\n"
                           "a = plt.figure(figsize=(2, 2), dpi=50)\n"
                           "plt.plot([1, 2])\n"
                           "b = plt.figure(figsize=(3, 1), dpi=100)\n"
                           "plt.bar([1, 2], [3, 4])\n");
    INFO(describe(left_open));
    CHECK(left_open.exit_code == 0);
    REQUIRE(left_open.images.size() == 2);
    CHECK(left_open.images[0].width == 100);
    CHECK(left_open.images[0].height == 100);
    CHECK(left_open.images[1].width == 300);
    CHECK(left_open.images[1].height == 100);

    // Nothing is returned twice: the figures were closed once they were handed over.
    auto next = f.run(sb, Language::python, "import matplotlib.pyplot as plt\nplt.get_fignums()");
    INFO(describe(next));
    CHECK(next.images.empty());
  }
}

TEST_CASE("figures: a program without matplotlib gets nothing and does not load it",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  for (bool fresh : {false, true}) {
    INFO(mode_name(fresh));
    f.fresh = fresh;
    auto plain =
        f.run(sb, Language::python,
              "import os, sys\n"
              "print(sorted(m for m in sys.modules if 'matplotlib' in m or 'figures' in m))\n"
              "print('SANDGATE_FIGURES_FD' in os.environ)\n");
    INFO(describe(plain));
    CHECK(plain.exit_code == 0);
    // The interpreter's driver has the (matplotlib-free) figure module; a fresh process not even
    // that.
    CHECK(plain.stdout_text == (fresh ? "[]\nFalse\n" : "['sandgate_figures']\nFalse\n"));
    CHECK(plain.images.empty());
    CHECK(plain.images_note.empty());
  }
  // The channel is not the program's fd 3 and no subprocess inherits it.
  f.fresh = true;
  auto fds = f.run(sb, Language::python,
                   "import os, subprocess\n"
                   "print(sorted(os.listdir('/proc/self/fd')))\n"
                   "print(subprocess.run(['ls', '/proc/self/fd'], capture_output=True, "
                   "text=True).stdout.split())\n");
  INFO(describe(fds));
  // Python's own listing holds the channel at 1000; its 3 is the directory listdir reads.
  CHECK(fds.stdout_text.find("['0', '1', '1000', '2', '3']\n") == 0);
  // ls sees its stdio and the directory it reads, nothing more.
  CHECK(fds.stdout_text.find("\n['0', '1', '2', '3']\n") != std::string::npos);
  // bash and JavaScript get no channel; a python3 that bash starts plots like Agg, silently.
  auto bash = f.run(sb, Language::bash,
                    "ls /proc/self/fd | tr '\\n' ' '; echo\n"
                    "python3 -c 'import matplotlib.pyplot as plt; plt.plot([1]); plt.show(); "
                    "print(\"ok\")' 2>&1 | tail -1\n");
  INFO(describe(bash));
  CHECK(bash.stdout_text.substr(0, 9) == "0 1 2 3 \n");
  CHECK(bash.images.empty());
}

TEST_CASE("figures: the count and the pixel size are bounded, and the result says so",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  if (!require_matplotlib(f, sb)) return;
  for (bool fresh : {false, true}) {
    INFO(mode_name(fresh));
    f.fresh = fresh;
    auto many = f.run(sb, Language::python,
                      "import matplotlib.pyplot as plt\n"
                      "for i in range(11):\n"
                      "    plt.figure(figsize=(1, 1), dpi=20)\n"
                      "    plt.plot([i])\n");
    INFO(describe(many));
    CHECK(many.exit_code == 0);
    CHECK(many.images.size() == 8);
    CHECK(many.images_note.find("3 over the limit of 8 per call") != std::string::npos);

    // 100x100 inches at 100 dpi is 10000x10000 pixels: rendered at a lower dpi instead.
    auto huge = f.run(sb, Language::python,
                      "import matplotlib.pyplot as plt\n"
                      "plt.figure(figsize=(100, 50))\n"
                      "plt.plot([1, 2])\n"
                      "plt.show()\n");
    INFO(describe(huge));
    REQUIRE(huge.images.size() == 1);
    CHECK(huge.images[0].width <= 2000);
    CHECK(huge.images[0].width >= 1990);
    CHECK(huge.images[0].height <= 1000);
    CHECK(huge.images_note.empty());
  }
}

TEST_CASE("figures: garbage on the interpreter's figure channel breaks nothing but itself",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // The reply channel is the driver's fd 1001; the cell is the same process and can write to it.
  f.run(sb, Language::python, "kept = 1");
  auto garbage = f.run(sb, Language::python, "import os\nos.write(1001, b'x' * 100)");
  INFO(describe(garbage));
  CHECK(garbage.state_lost == "the interpreter broke its protocol and was killed");
  CHECK(garbage.images.empty());

  // A frame claiming 4 GiB: refused at its header, nothing read into memory.
  auto huge = f.run(sb, Language::python,
                    "import os, struct\n"
                    "os.write(1001, struct.pack('<IIII', 0x4D494753, 1, 0xFFFFFFF0, 0))\n");
  INFO(describe(huge));
  CHECK(huge.state_lost == "the interpreter broke its protocol and was killed");

  // Well-framed lies: not a PNG, a PNG header claiming 5000x5000 pixels, a frame of another
  // call. Dropped and said; the state survives.
  f.run(sb, Language::python, "kept = 2");
  auto lies =
      f.run(sb, Language::python,
            "import os, struct, sandgate_figures as s\n"
            "def frame(seq, data):\n"
            "    s.write_whole(struct.pack('<IIII', 0x4D494753, seq, len(data), 0) + data)\n"
            "png = b'\\x89PNG\\r\\n\\x1a\\n' + struct.pack('>I', 13) + b'IHDR'\n"
            "frame(s._seq, b'not a png at all, not at all, no not at all')\n"
            "frame(s._seq, png + struct.pack('>II', 5000, 5000) + b'\\0' * 20)\n"
            "frame(s._seq + 7, png + struct.pack('>II', 10, 10) + b'\\0' * 20)\n"
            "frame(s._seq, png + struct.pack('>II', 10, 20) + b'\\0' * 20)\n"
            "kept\n");
  INFO(describe(lies));
  CHECK(lies.state_lost.empty());
  CHECK(lies.stdout_text == "2\n");
  REQUIRE(lies.images.size() == 1);  // well-formed enough: the gateway reads only the header
  CHECK(lies.images[0].width == 10);
  CHECK(lies.images[0].height == 20);
  CHECK(lies.images_note.find("1 larger than 2000x2000 pixels") != std::string::npos);
  CHECK(lies.images_note.find("1 not a PNG") != std::string::npos);
  CHECK(f.run(sb, Language::python, "kept").stdout_text == "2\n");
}

TEST_CASE("figures: garbage and floods on a fresh process's figure channel are bounded",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.fresh = true;
  // Fake PNGs of 1 MiB each: the byte cap keeps 4, the count would have kept 8.
  auto flood = f.run(sb, Language::python,
                     "import os, struct\n"
                     "png = b'\\x89PNG\\r\\n\\x1a\\n' + struct.pack('>I', 13) + b'IHDR'\n"
                     "png += struct.pack('>II', 10, 10) + b'\\0' * ((1 << 20) - 24)\n"
                     "for i in range(12):\n"
                     "    os.write(1000, struct.pack('<IIII', 0x4D494753, 0, len(png), 0))\n"
                     "    os.write(1000, png)\n"
                     "print('done')\n");
  INFO(describe(flood));
  CHECK(flood.exit_code == 0);
  CHECK(flood.stdout_text == "done\n");
  CHECK(flood.images.size() == 4);
  CHECK(flood.images_note.find("8 over the 4 MiB of images per call") != std::string::npos);

  // Garbage, then a header claiming 4 GiB, then 8 MiB more: ignored from the garbage on.
  auto garbage = f.run(sb, Language::python,
                       "import os, struct\n"
                       "os.write(1000, b'garbage!' * 2)\n"
                       "os.write(1000, struct.pack('<IIII', 0x4D494753, 0, 0xFFFFFFF0, 0))\n"
                       "for i in range(8):\n"
                       "    os.write(1000, b'\\0' * (1 << 20))\n"
                       "print('done')\n");
  INFO(describe(garbage));
  CHECK(garbage.exit_code == 0);
  CHECK(garbage.stdout_text == "done\n");
  CHECK(garbage.images.empty());
  CHECK(garbage.images_note.find("malformed") != std::string::npos);
  // A header cut short at exit.
  auto cut = f.run(sb, Language::python, "import os\nos.write(1000, b'SGIM')\n");
  INFO(describe(cut));
  CHECK(cut.exit_code == 0);
  CHECK(cut.images.empty());
  // The sandbox goes on.
  CHECK(f.run(sb, Language::python, "print(6 * 7)").stdout_text == "42\n");
}

TEST_CASE("figures: a timeout drops the call's figures and the interpreter goes on",
          "[sandbox][figures]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  if (!require_matplotlib(f, sb)) return;
  f.run(sb, Language::python, "import matplotlib.pyplot as plt, time\nkept = 'yes'");
  // Shown before the timeout (its frame is read, then dropped), and one left open.
  auto slow = f.run(sb, Language::python,
                    "plt.plot([1, 2])\nplt.show()\nplt.figure()\nplt.plot([3])\ntime.sleep(30)",
                    std::chrono::seconds(3));
  INFO(describe(slow));
  CHECK(slow.outcome == RunOutcome::timed_out);
  CHECK(slow.state_lost.empty());
  CHECK(slow.images.empty());
  // The channel is where it should be: the next call's figure and reply are read as such.
  auto next = f.run(sb, Language::python,
                    "print(plt.get_fignums(), kept)\nfig = plt.figure(figsize=(1, 1), dpi=30)\n");
  INFO(describe(next));
  CHECK(next.stdout_text == "[] yes\n");
  REQUIRE(next.images.size() == 1);
  CHECK(next.images[0].width == 30);
}
