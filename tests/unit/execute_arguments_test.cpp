// execute's arguments (server/tools/execute_arguments): checked before anything runs, with
// errors the model can act on — the code, language, timeout and stdin, and the files in and out.
#include "server/tools/execute_arguments.hpp"

#include <catch2/catch.hpp>

#include "server/tools/file_resources.hpp"

using namespace sandgate;
using namespace sandgate::server;
using nlohmann::json;

TEST_CASE("execute arguments are validated with errors the model can act on", "[unit][tool]") {
  ToolLimits limits{60, 300, 10};
  auto error_of = [&](json args) { return parse_execute_arguments(args, limits).error; };
  CHECK(error_of(json::object()).find("`code` must be a non-empty string") != std::string::npos);
  CHECK(error_of({{"code", ""}}).find("non-empty") != std::string::npos);
  CHECK(error_of({{"code", "x"}, {"language", "ruby"}}).find("`language` must be one of") !=
        std::string::npos);
  CHECK(error_of({{"code", "x"}, {"timeout_seconds", 0}}).find("between 1 and 300") !=
        std::string::npos);
  CHECK(error_of({{"code", "x"}, {"timeout_seconds", 301}}).find("between 1 and 300") !=
        std::string::npos);
  CHECK(error_of({{"code", "x"}, {"timeout_seconds", 1.5}}).find("whole number") !=
        std::string::npos);
  CHECK(error_of({{"code", "x"}, {"stdin", "01234567890"}}).find("larger than 10 bytes") !=
        std::string::npos);
  CHECK(error_of({{"code", "x"}, {"cwd", "/"}}).find("unknown argument `cwd`") !=
        std::string::npos);

  auto ok = parse_execute_arguments({{"code", "print(1)"}}, limits);
  REQUIRE(ok.request);
  CHECK(ok.request->language == sandgate::sandbox::Language::python);
  CHECK(ok.request->timeout == std::chrono::seconds(60));
  auto js = parse_execute_arguments(
      {{"code", "0"}, {"language", "javascript"}, {"timeout_seconds", 5}, {"stdin", "abc"}},
      limits);
  REQUIRE(js.request);
  CHECK(js.request->language == sandgate::sandbox::Language::javascript);
  CHECK(js.request->timeout == std::chrono::seconds(5));
  CHECK(js.request->stdin_data == "abc");
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
