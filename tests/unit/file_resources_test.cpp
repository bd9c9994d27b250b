// The files of a sandbox read as MCP resources (server/tools/file_resources).
#include "server/tools/file_resources.hpp"

#include <catch2/catch.hpp>

TEST_CASE("resource reads at once are bounded by the memory their files may take", "[files]") {
  using sandgate::server::FileResources;
  // Each read may hold about five copies of a file of up to --resource-read-max-bytes.
  CHECK(FileResources::reads_at_once(50ull << 20) == 2);
  CHECK(FileResources::reads_at_once(1ull << 30) == 1);
  CHECK(FileResources::reads_at_once(1) == 64);
  CHECK(FileResources::reads_at_once(0) == 64);
}
