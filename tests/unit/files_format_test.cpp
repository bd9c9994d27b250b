// The pure parts of files in and out: path confinement, the transfer reply parsed as hostile,
// base64, and what a returned file becomes in a result.
#include <catch2/catch.hpp>

#include "common/base64.hpp"
#include "sandbox/file_transfer.hpp"
#include "server/tools/execute_tool.hpp"
#include "server/tools/file_resources.hpp"
#include "server/tools/file_results.hpp"

using namespace sandgate;
using sandbox::FileStatus;
using sandbox::TransferOp;
using sandbox::TransferredFile;
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

TEST_CASE("base64 round-trips and refuses what is not base64", "[unit][files]") {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    CHECK(sandgate::base64_decode(sandgate::base64_encode(s)) == s);
  CHECK(sandgate::base64_encode("hello") == "aGVsbG8=");
  CHECK_FALSE(sandgate::base64_decode("aGVsbG8"));
  CHECK_FALSE(sandgate::base64_decode("aGV=bG8="));
  CHECK_FALSE(sandgate::base64_decode("aGVs bG8="));
  CHECK_FALSE(sandgate::base64_decode("%%%%"));
  // One encoding per byte string: the bits padding leaves unused must be 0.
  CHECK(sandgate::base64_decode("aGVsbA==") == "hell");
  CHECK_FALSE(sandgate::base64_decode("aGVsbB=="));
  CHECK_FALSE(sandgate::base64_decode("aGVsbG9="));
}

TEST_CASE("returned files become images, resources, links or reasons", "[unit][files]") {
  sandbox::TransferResult returned;
  returned.done = true;
  // A PNG header declaring 1x1 pixels (an image is returned as one only with a readable size).
  const std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x01\0\0\0\x01", 24);
  returned.files = {{"plot.png", FileStatus::ok, 0, png.size(), png},
                    {"notes.md", FileStatus::ok, 0, 2, "hi"},
                    {"raw.bin", FileStatus::ok, 0, 2, std::string("\0\1", 2)},
                    {"big.csv", FileStatus::too_large, 0, 5000, ""},
                    {"huge.bin", FileStatus::too_large, 0, 1 << 30, ""},
                    {"dir", FileStatus::is_directory, 0, 0, ""}};
  nlohmann::json content = nlohmann::json::array();
  auto listed = server::add_returned_files(
      returned, [](const std::string& p) { return "uri:" + p; }, 1 << 20, content);
  REQUIRE(content.size() == 6);
  CHECK(content[0]["type"] == "image");
  CHECK(content[0]["mimeType"] == "image/png");
  CHECK(content[1]["resource"]["mimeType"] == "text/markdown");
  CHECK(content[1]["resource"]["text"] == "hi");
  CHECK(content[2]["resource"]["blob"] == "AAE=");
  CHECK(content[3]["type"] == "resource_link");
  CHECK(content[3]["mimeType"] == "text/csv");
  CHECK(content[3]["size"] == 5000);
  CHECK(content[4]["text"].get<std::string>().find("more than") != std::string::npos);
  CHECK(content[5]["text"] == "/work/dir was not returned: is a directory.");
  CHECK(listed[3]["returned"] == "link");
  CHECK(listed[5]["error"] == "is a directory");
  CHECK_FALSE(listed[0].contains("data"));
}

TEST_CASE("execute's files and return_files are checked before anything runs", "[unit][files]") {
  server::ToolLimits limits;
  limits.file_in_max_bytes = 4;
  limits.files_in_max_bytes = 6;
  limits.return_files_max = 1;
  auto parse = [&](nlohmann::json extra) {
    nlohmann::json args = {{"code", "1"}};
    args.merge_patch(extra);
    return server::parse_execute_arguments(args, limits);
  };
  auto ok = parse({{"files", {{{"path", "a"}, {"content", "YWJj"}, {"encoding", "base64"}}}},
                   {"return_files", {"/work/a"}}});
  REQUIRE(ok.request);
  CHECK(ok.files.in[0].content == "abc");
  CHECK(ok.files.out.paths == std::vector<std::string>{"/work/a"});
  CHECK(parse({{"files", {{{"path", "a"}, {"content", "abcde"}}}}}).error.find("larger than 4") !=
        std::string::npos);
  CHECK(parse({{"files",
                {{{"path", "a"}, {"content", "abcd"}}, {{"path", "b"}, {"content", "abc"}}}}})
            .error.find("more than 6 bytes") != std::string::npos);
  CHECK(parse({{"files", {{{"path", "/tmp/a"}, {"content", "a"}}}}}).error.find("under /work") !=
        std::string::npos);
  CHECK(parse({{"files", {{{"path", "a"}, {"content", "a"}, {"mode", "x"}}}}})
            .error.find("unknown key") != std::string::npos);
  CHECK(parse({{"return_files", {"a", "b"}}}).error.find("more than 1 files") != std::string::npos);
  CHECK(parse({{"return_files", {"../a"}}}).error.find("`return_files`[0]") != std::string::npos);
  CHECK(server::file_uri("k", "a b/ü.txt") == "sandgate://sandbox/k/work/a%20b/%C3%BC.txt");
  CHECK(server::file_uri_key("sandgate://sandbox/r1.abc/work/x") == "r1.abc");
  CHECK(server::file_uri_key("file:///etc/passwd").empty());
}

TEST_CASE("resource reads at once are bounded by the memory their files may take", "[files]") {
  using sandgate::server::FileResources;
  // Each read may hold about five copies of a file of up to --resource-read-max-bytes.
  CHECK(FileResources::reads_at_once(50ull << 20) == 2);
  CHECK(FileResources::reads_at_once(1ull << 30) == 1);
  CHECK(FileResources::reads_at_once(1) == 64);
  CHECK(FileResources::reads_at_once(0) == 64);
}
