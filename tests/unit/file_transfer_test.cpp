// Files in and out on the gateway's side (sandbox/file_transfer): client paths confined to
// /work, and the transfer reply parsed as hostile.
#include "sandbox/file_transfer.hpp"

#include <catch2/catch.hpp>

using namespace sandgate;
using sandbox::FileStatus;
using sandbox::TransferOp;
using sandbox::TransferRequest;

TEST_CASE("client paths are confined to /work", "[unit][files]") {
  using sandbox::work_relative_path;
  CHECK(work_relative_path("a.txt") == "a.txt");
  CHECK(work_relative_path("/work/a/./b//c.txt") == "a/b/c.txt");
  CHECK(work_relative_path("./x") == "x");
  CHECK_FALSE(work_relative_path("/work"));
  CHECK_FALSE(work_relative_path("/work/"));
  CHECK_FALSE(work_relative_path("/workshop/a"));
  CHECK_FALSE(work_relative_path("/etc/passwd"));
  CHECK_FALSE(work_relative_path("../x"));
  CHECK_FALSE(work_relative_path("a/../../x"));
  CHECK_FALSE(work_relative_path("a/.."));
  CHECK_FALSE(work_relative_path(std::string("a\0b", 3)));
  CHECK_FALSE(work_relative_path(""));
  CHECK_FALSE(work_relative_path(std::string(300, 'x')));
  CHECK_FALSE(work_relative_path(std::string(5000, '/') + "x"));
}

TEST_CASE("a transfer reply is held to what was asked for", "[unit][files]") {
  TransferRequest asked{TransferOp::read, false, 10, 15, 0, {{"a", ""}, {"b", ""}}};
  auto entry = [](std::string path, FileStatus status, std::uint64_t size, std::string content) {
    return sandbox::encode_reply_entry({std::move(path), status, 0, size, std::move(content)});
  };
  auto ok = sandbox::decode_reply(
      entry("a", FileStatus::ok, 5, "hello") + entry("b", FileStatus::too_large, 99, ""), asked);
  REQUIRE(ok);
  CHECK((*ok)[0].content == "hello");
  CHECK((*ok)[1].size == 99);
  // More entries than files asked for, another path, content over a cap or for a refusal,
  // a size that is not the content's, a truncated entry, an unknown status.
  CHECK_FALSE(sandbox::decode_reply(entry("a", FileStatus::ok, 0, "") +
                                        entry("b", FileStatus::ok, 0, "") +
                                        entry("b", FileStatus::ok, 0, ""),
                                    asked));
  CHECK_FALSE(sandbox::decode_reply(entry("/etc/passwd", FileStatus::ok, 1, "x"), asked));
  CHECK_FALSE(sandbox::decode_reply(entry("a", FileStatus::ok, 11, std::string(11, 'x')), asked));
  CHECK_FALSE(sandbox::decode_reply(entry("a", FileStatus::ok, 10, std::string(10, 'x')) +
                                        entry("b", FileStatus::ok, 10, std::string(10, 'x')),
                                    asked));
  CHECK_FALSE(sandbox::decode_reply(entry("a", FileStatus::not_found, 1, "x"), asked));
  CHECK_FALSE(sandbox::decode_reply(entry("a", FileStatus::ok, 2, "x"), asked));
  std::string cut = entry("a", FileStatus::ok, 5, "hello");
  CHECK_FALSE(sandbox::decode_reply(cut.substr(0, cut.size() - 1), asked));
  std::string bad = entry("a", FileStatus::ok, 0, "");
  bad[0] = 42;
  CHECK_FALSE(sandbox::decode_reply(bad, asked));
  // A request survives its round trip; a damaged one is refused.
  std::string encoded = sandbox::encode_request(asked);
  auto decoded = sandbox::decode_request(encoded);
  REQUIRE(decoded);
  CHECK(decoded->files.size() == 2);
  CHECK_FALSE(sandbox::decode_request(encoded.substr(0, encoded.size() - 1)));
}
