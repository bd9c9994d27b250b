// The tokens file on disk (auth/token_file): its mode judged, on the file that is read.
#include "auth/token_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

using namespace sandgate::auth;

TEST_CASE("a tokens file others may write is refused, one others may read is a warning",
          "[unit][auth]") {
  const std::filesystem::path p = "/etc/sandgate/tokens";
  CHECK(judge_token_file_mode(p, S_IFREG | 0600, false).refusal.empty());
  CHECK(judge_token_file_mode(p, S_IFREG | 0600, false).warning.empty());
  CHECK(judge_token_file_mode(p, S_IFREG | 0400, false).warning.empty());
  auto readable = judge_token_file_mode(p, S_IFREG | 0644, false);
  CHECK(readable.refusal.empty());
  CHECK_THAT(readable.warning, Catch::Contains("readable by group or others") &&
                                   Catch::Contains("0644") && Catch::Contains("chmod 600"));
  CHECK_FALSE(judge_token_file_mode(p, S_IFREG | 0640, false).warning.empty());
  CHECK_THAT(judge_token_file_mode(p, S_IFREG | 0620, false).refusal,
             Catch::Contains("writable by group or others"));
  CHECK_FALSE(judge_token_file_mode(p, S_IFREG | 0602, false).refusal.empty());
  // A read-only mount (a Kubernetes Secret) cannot be written, whatever its mode says.
  auto secret = judge_token_file_mode(p, S_IFREG | 0666, true);
  CHECK(secret.refusal.empty());
  CHECK_FALSE(secret.warning.empty());
  CHECK_FALSE(judge_token_file_mode(p, S_IFIFO | 0600, false).refusal.empty());
}

TEST_CASE("the tokens file's mode is judged on the file that is read", "[unit][auth]") {
  auto path =
      std::filesystem::temp_directory_path() / ("sandgate-auth-test-" + std::to_string(::getpid()));
  {
    std::ofstream f(path);
    f << to_hex(sha256("tok")) << " t\n";
  }
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto ok = load_token_file(path);
  CHECK(ok.warning.empty());
  CHECK(ok.store.find("tok"));
  ::chmod(path.c_str(), 0644);
  CHECK_FALSE(load_token_file(path).warning.empty());
  ::chmod(path.c_str(), 0664);
  CHECK_THROWS_WITH(load_token_file(path), Catch::Contains("writable by group or others"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(load_token_file(path), Catch::Contains("cannot read"));
}
