#include "sandbox/file_transfer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::FileIn;
using sandgate::sandbox::FileReadRequest;
using sandgate::sandbox::FileStatus;
using sandgate::sandbox::Language;
using sandgate::sandbox::TransferResult;

namespace {

FileReadRequest reading(std::vector<std::string> paths, std::uint64_t each = 1 << 20,
                        std::uint64_t total = 4 << 20) {
  FileReadRequest r;
  r.paths = std::move(paths);
  r.max_bytes_each = each;
  r.max_bytes_total = total;
  return r;
}

}  // namespace

TEST_CASE("files written into a sandbox are its program's, and read back whole",
          "[sandbox][files]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  std::string binary("\x89PNG\0\x01\xff", 7);
  auto written = f.await(
      sb->write_files({FileIn{"data/in.txt", "hello\n"}, FileIn{"/work/deep/er/bin.dat", binary}}));
  REQUIRE(written.done);
  REQUIRE(written.files.size() == 2);
  CHECK(written.files[0].status == FileStatus::ok);
  CHECK(written.files[0].path == "data/in.txt");
  CHECK(written.files[1].size == 7);
  auto seen = f.run(sb, Language::bash,
                    "cat /work/data/in.txt; stat -c '%u %s' /work/deep/er/bin.dat; "
                    "echo made by program > /work/out.txt");
  CHECK(seen.stdout_text == "hello\n1000 7\n");
  auto back = f.await(sb->read_files(reading({"out.txt", "/work/deep/er/bin.dat", "missing"})));
  REQUIRE(back.done);
  REQUIRE(back.files.size() == 3);
  CHECK(back.files[0].content == "made by program\n");
  CHECK(back.files[1].content == binary);
  CHECK(back.files[2].status == FileStatus::not_found);
  // Overwriting replaces the whole file.
  f.await(sb->write_files({FileIn{"data/in.txt", "x"}}));
  CHECK(f.run(sb, Language::bash, "cat /work/data/in.txt").stdout_text == "x");
}

TEST_CASE("paths a client gives outside /work never reach the sandbox", "[sandbox][files]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto back =
      f.await(sb->read_files(reading({"../etc/passwd", "/etc/passwd", "a/../../x", "/work"})));
  REQUIRE(back.done);
  REQUIRE(back.files.size() == 4);
  for (const auto& file : back.files) CHECK(file.status == FileStatus::invalid_path);
  auto written = f.await(sb->write_files({FileIn{"/workshop/x", "y"}}));
  CHECK_FALSE(written.done);
}

TEST_CASE("symlinks, FIFOs and huge files a program planted are refused or confined",
          "[sandbox][files]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  // A secret on the host, at a path the program names: it must never come back.
  char host_dir[] = "/tmp/sandgate-secret-XXXXXX";
  REQUIRE(::mkdtemp(host_dir) != nullptr);
  std::string secret_path = std::string(host_dir) + "/secret";
  const std::string secret = "host-secret-5f2a9c";
  std::ofstream(secret_path) << secret;
  ::chmod(host_dir, 0755);
  ::chmod(secret_path.c_str(), 0644);

  auto sb = f.create();
  auto planted = f.run(sb, Language::bash,
                       "cd /work && ln -s /etc/shadow shadow && ln -s " + secret_path +
                           " host && ln -s ../../../../../.." + secret_path +
                           " relative && ln -s / root && ln -s /proc/self/root proc && "
                           "mkfifo fifo && truncate -s 1T huge && mkdir dir && "
                           "echo inside > real.txt && ln -s real.txt alias && "
                           "ln -s " +
                           std::string(host_dir) + " hostdir && echo planted");
  REQUIRE(planted.stdout_text == "planted\n");

  auto back = f.await(sb->read_files(
      reading({"shadow", "host", "relative", "root" + secret_path, "proc/etc/passwd",
               "proc" + secret_path, "fifo", "huge", "dir", "alias", "hostdir/secret"})));
  REQUIRE(back.done);
  REQUIRE(back.files.size() == 11);
  CHECK(back.files[0].status == FileStatus::outside_work);
  CHECK(back.files[1].status == FileStatus::outside_work);
  CHECK(back.files[2].status == FileStatus::outside_work);
  CHECK(back.files[3].status == FileStatus::outside_work);
  CHECK(back.files[4].status == FileStatus::outside_work);
  CHECK(back.files[5].status == FileStatus::outside_work);
  CHECK(back.files[6].status == FileStatus::not_regular);
  CHECK(back.files[7].status == FileStatus::too_large);
  CHECK(back.files[7].size == (1ull << 40));  // its size, never its bytes
  CHECK(back.files[8].status == FileStatus::is_directory);
  CHECK(back.files[9].status == FileStatus::ok);  // a symlink within /work is followed there
  CHECK(back.files[9].content == "inside\n");
  CHECK(back.files[10].status == FileStatus::outside_work);
  for (const auto& file : back.files) CHECK(file.content.find(secret) == std::string::npos);

  // Writing through the same links changes nothing outside /work, and a FIFO is not opened
  // for a reader that never comes.
  auto written = f.await(sb->write_files({FileIn{"shadow", "x"}, FileIn{"root/tmp/escape", "x"},
                                          FileIn{"hostdir/secret", "overwritten"},
                                          FileIn{"fifo", "x"}, FileIn{"dir", "x"}}));
  REQUIRE(written.done);
  REQUIRE(written.files.size() == 5);
  CHECK(written.files[0].status == FileStatus::outside_work);
  CHECK(written.files[1].status == FileStatus::outside_work);
  CHECK(written.files[2].status == FileStatus::outside_work);
  CHECK(written.files[3].status == FileStatus::not_regular);
  CHECK(written.files[4].status == FileStatus::is_directory);
  std::ifstream still(secret_path);
  std::string now((std::istreambuf_iterator<char>(still)), {});
  CHECK(now == secret);
  ::unlink(secret_path.c_str());
  ::rmdir(host_dir);
}

TEST_CASE("reads keep to the per-file and per-call caps", "[sandbox][files]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::bash,
        "head -c 600 /dev/zero > /work/a; head -c 600 /dev/zero > /work/b; "
        "head -c 2000 /dev/zero > /work/c");
  auto back = f.await(sb->read_files(reading({"c", "a", "b"}, 1000, 1000)));
  REQUIRE(back.done);
  REQUIRE(back.files.size() == 3);
  CHECK(back.files[0].status == FileStatus::too_large);
  CHECK(back.files[0].size == 2000);
  CHECK(back.files[1].status == FileStatus::ok);
  CHECK(back.files[1].content.size() == 600);
  CHECK(back.files[2].status == FileStatus::too_large);  // over what is left of the call's
}

TEST_CASE("every regular file of a directory is read in order and removed", "[sandbox][files]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::bash,
        "mkdir -p /work/plots/sub && cd /work/plots && printf 2 > b.png && printf 1 > a.png && "
        "printf 3 > c.png && ln -s /etc/passwd link.png && mkfifo pipe.png");
  FileReadRequest r;
  r.directory = "/work/plots";
  r.max_bytes_each = 100;
  r.max_bytes_total = 1000;
  r.max_files = 2;
  r.remove_after = true;
  auto back = f.await(sb->read_files(r));
  REQUIRE(back.done);
  REQUIRE(back.files.size() == 2);
  CHECK(back.files[0].path == "plots/a.png");
  CHECK(back.files[0].content == "1");
  CHECK(back.files[1].path == "plots/b.png");
  auto left = f.run(sb, Language::bash, "ls /work/plots | tr '\\n' ' '");
  CHECK(left.stdout_text == "c.png link.png pipe.png sub ");
  r.directory = "nowhere";
  auto missing = f.await(sb->read_files(r));
  CHECK_FALSE(missing.done);
  CHECK(missing.failure == "no such directory");
}
