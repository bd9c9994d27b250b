// Hibernation's pack and restore of /work, done inside sandboxes by their own uid.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

// An archive's bytes, read from its descriptor (for tests that take one apart).
std::string bytes_of(const sandgate::sandbox::WorkArchive& archive) {
  std::string out(archive.size, '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(archive.fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

bool host_has(const char* path) {
  struct stat st {};
  return ::lstat(path, &st) == 0;
}

// One ustar member, written by hand so that an archive can hold what tar itself would never
// make: `..` names, absolute names, a file behind a symlink.
void add_member(std::string& tar, const std::string& name, char type, const std::string& link,
                const std::string& content) {
  char h[512] = {};
  std::snprintf(h, 100, "%s", name.c_str());
  std::snprintf(h + 100, 8, "%07o", 0644);
  std::snprintf(h + 108, 8, "%07o", 1000);
  std::snprintf(h + 116, 8, "%07o", 1000);
  std::snprintf(h + 124, 12, "%011lo", static_cast<unsigned long>(content.size()));
  std::snprintf(h + 136, 12, "%011o", 0);
  std::memset(h + 148, ' ', 8);
  h[156] = type;
  std::snprintf(h + 157, 100, "%s", link.c_str());
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);
  tar.append(h, 512);
  tar += content;
  tar.append((512 - content.size() % 512) % 512, '\0');
}

std::string gzip(const std::string& bytes) {
  char path[] = "/tmp/sandgate-archive-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  std::string out;
  FILE* p = ::popen(("gzip -1 -c " + std::string(path)).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  ::unlink(path);
  return out;
}

}  // namespace

TEST_CASE("a packed /work restores into a fresh sandbox: files, a tree, a symlink, binary data",
          "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto first = f.create();
  auto made =
      f.run(first, Language::bash,
            "mkdir -p /work/a/b/c && echo deep > /work/a/b/c/d.txt && "
            "printf '\\x00\\x01\\xff\\xfe' > /work/bin.dat && ln -s a/b/c/d.txt /work/ln && "
            "head -c 300000 /dev/urandom > /work/random && md5sum /work/random");
  REQUIRE(made.exit_code == 0);
  auto packed = f.await(first->pack_work());
  REQUIRE(packed.done);
  CHECK(packed.size > 300000);
  CHECK(packed.size < 400000);
  first->end(sandgate::sandbox::EndReason::closed);

  auto second = f.create();
  auto restored = f.await(second->restore_work(std::move(packed.fd)));
  REQUIRE(restored.done);
  auto seen = f.run(second, Language::bash,
                    "cat /work/a/b/c/d.txt; od -An -tx1 /work/bin.dat; readlink /work/ln; cat "
                    "/work/ln; md5sum /work/random; stat -c '%u' /work/a/b/c/d.txt");
  CHECK(seen.stdout_text ==
        "deep\n 00 01 ff fe\na/b/c/d.txt\ndeep\n" + made.stdout_text + "1000\n");
}

TEST_CASE("an empty /work packs and restores", "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto packed = f.await(f.create()->pack_work());
  REQUIRE(packed.done);
  auto second = f.create();
  CHECK(f.await(second->restore_work(std::move(packed.fd))).done);
  CHECK(f.run(second, Language::bash, "ls -A /work | wc -l").stdout_text == "0\n");
}

TEST_CASE("a hostile archive touches nothing outside the new sandbox's /work",
          "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  std::string tar;
  add_member(tar, "../../etc/sandgate-hib-dotdot", '0', "", "x\n");
  add_member(tar, "/tmp/sandgate-hib-absolute", '0', "", "y\n");
  add_member(tar, "etclink", '2', "/etc", "");
  add_member(tar, "etclink/sandgate-hib-through-link", '0', "", "z\n");
  add_member(tar, "tmplink", '2', "../../../../tmp", "");
  add_member(tar, "tmplink/sandgate-hib-through-tmp", '0', "", "w\n");
  add_member(tar, "ok.txt", '0', "", "fine\n");
  tar.append(1024, '\0');
  auto sb = f.create();
  auto restored = f.await(sb->restore_work(gzip(tar)));
  // tar refuses some members and says so by its exit code: the restore reports a failure.
  CHECK_FALSE(restored.done);
  CHECK_FALSE(restored.failure.empty());
  for (const char* host :
       {"/etc/sandgate-hib-dotdot", "/tmp/sandgate-hib-absolute", "/etc/sandgate-hib-through-link",
        "/tmp/sandgate-hib-through-tmp", "/sandgate-hib-dotdot"})
    CHECK_FALSE(host_has(host));
  auto inside = f.run(sb, Language::bash,
                      "ls /etc/sandgate-hib-* /tmp/sandgate-hib-* / 2>/dev/null | grep -c "
                      "sandgate-hib; true");
  CHECK(inside.stdout_text == "0\n");
}

TEST_CASE("garbage or an over-size archive is refused cleanly", "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto garbage = f.await(sb->restore_work("this is not an archive"));
  CHECK_FALSE(garbage.done);
  CHECK_THAT(garbage.failure, Catch::Contains("could not be unpacked"));
  auto huge = f.await(sb->restore_work(std::string(sb->limits().work_bytes + 1, 'x')));
  CHECK_FALSE(huge.done);
  CHECK_THAT(huge.failure, Catch::Contains("larger than /work"));
  // A /work whose packed form cannot fit is refused, not truncated: incompressible data that
  // fills /work, and empty files (they take no space in /work) whose random names take some
  // in the archive, pack to more than /work.
  f.run(sb, Language::bash, "cat /dev/urandom > /work/r 2>/dev/null; true");
  auto filled = f.run(sb, Language::python,
                      "import os\n"
                      "for _ in range(3000): open('/work/' + os.urandom(100).hex(), 'w').close()\n"
                      "print(os.stat('/work/r').st_size)\n");
  REQUIRE(filled.exit_code == 0);
  CHECK(std::stoull(filled.stdout_text) + 4096 >= sb->limits().work_bytes);
  auto packed = f.await(sb->pack_work());
  CHECK_FALSE(packed.done);
  CHECK_THAT(packed.failure, Catch::Contains("larger than /work"));
  // The sandbox lives on.
  CHECK(f.run(sb, Language::bash, "echo alive").stdout_text == "alive\n");
  // A sparse file of huge apparent size packs to almost nothing and restores.
  f.run(sb, Language::bash, "rm -rf /work/*; truncate -s 50G /work/sparse");
  auto sparse = f.await(sb->pack_work());
  REQUIRE(sparse.done);
  CHECK(sparse.size < 100000);
  auto next = f.create();
  REQUIRE(f.await(next->restore_work(std::move(sparse.fd))).done);
  CHECK(f.run(next, Language::bash, "stat -c %s /work/sparse; du -k /work/sparse | cut -f1")
            .stdout_text == "53687091200\n0\n");
}

TEST_CASE(
    "a gzip'd archive restores, and a truncated one is refused with the sandbox still serving",
    "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  // What a gateway whose rootfs has no zstd packs: tar, then gzip.
  std::string tar;
  add_member(tar, "notes.txt", '0', "", "from gzip\n");
  tar.append(1024, '\0');
  auto sb = f.create();
  REQUIRE(f.await(sb->restore_work(gzip(tar))).done);
  CHECK(f.run(sb, Language::bash, "cat /work/notes.txt").stdout_text == "from gzip\n");

  // A zstd archive cut short (a torn write, a damaged volume): zstd stops, tar sees the end
  // early, and the restore fails as a whole.
  f.run(sb, Language::bash, "head -c 200000 /dev/urandom > /work/r");
  auto packed = f.await(sb->pack_work());
  REQUIRE(packed.done);
  auto next = f.create();
  auto whole = bytes_of(packed);
  auto torn = f.await(next->restore_work(whole.substr(0, whole.size() / 2)));
  CHECK_FALSE(torn.done);
  CHECK_THAT(torn.failure, Catch::Contains("could not be unpacked"));
  CHECK(f.run(next, Language::bash, "echo alive").stdout_text == "alive\n");
}

TEST_CASE("a restore whose unpacker cannot start says so, not that the archive is damaged",
          "[sandbox][hibernate]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::bash, "echo kept > /work/a");
  auto packed = f.await(sb->pack_work());
  REQUIRE(packed.done);
  // A program that left background processes up to the sandbox's process limit: when the call's
  // shell and python are gone two slots are free, enough for the transfer process and one helper,
  // not for both. (Python forks: bash retries a failed fork for about 15 s.)
  auto next = f.create();
  f.run(next, Language::bash,
        "/usr/bin/python3 -c 'import os, time\n"
        "while True:\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: time.sleep(120); os._exit(0)'");
  auto refused = f.await(next->restore_work(std::move(packed.fd)));
  CHECK_FALSE(refused.done);
  CHECK_THAT(refused.failure, Catch::Contains("could not be started"));
}
