// Files in and out of execute on the real binary, in both eras: files written before the code
// runs, files returned as the right content types, caps refused with tool errors, and large
// files as resource links that resources/read serves to their tenant only, until the sandbox
// ends.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <utility>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// The smallest valid PNG (1x1, transparent), base64.
const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg"
    "==";

struct TwoTenants {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-files-" + std::to_string(::getpid()));
  TwoTenants() {
    std::ofstream(path) << sandgate::auth::to_hex(sandgate::auth::sha256("tok-a")) << " a\n"
                        << sandgate::auth::to_hex(sandgate::auth::sha256("tok-b")) << " b\n";
    ::chmod(path.c_str(), 0600);
  }
  ~TwoTenants() { std::filesystem::remove(path); }
};

json call(const std::string& code, json extra = json::object()) {
  json args = {{"code", code}, {"language", "python"}};
  args.merge_patch(extra);
  return args;
}

json session_request(const std::string& method, json params, int id) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

// The JSON-RPC response of a 2025 session request (a JSON body or one SSE event).
json session_answer(const HttpReply& r) {
  std::string body = r.body;
  auto data = body.find("data: ");
  if (r.headers.count("content-type") &&
      r.headers.at("content-type").find("event-stream") != std::string::npos) {
    std::string last;
    while (data != std::string::npos) {
      auto end = body.find('\n', data);
      last = body.substr(data + 6, end - data - 6);
      data = body.find("data: ", end);
    }
    return json::parse(last);
  }
  return json::parse(body);
}

json read_stateless(GatewayProcess& gw, const std::string& uri, const std::string& token) {
  json message = GatewayProcess::stateless_message("resources/read", {{"uri", uri}});
  auto headers = GatewayProcess::stateless_headers(message, token);
  headers["Mcp-Name"] = uri;
  auto r = gw.request(http::verb::post, "/mcp", message.dump(), headers);
  return r.json_body();
}

const json* content_of_type(const json& result, const std::string& type, int nth = 0) {
  for (const auto& c : result["content"])
    if (c["type"] == type && nth-- == 0) return &c;
  return nullptr;
}

const char* kMakeFiles =
    "import os\n"
    "data = open('in/data.txt').read()\n"
    "open('out.txt', 'w').write(data.upper())\n"
    "open('big.bin', 'wb').write(bytes(range(256)) * 1200)\n"
    "open('small.bin', 'wb').write(b'\\x00\\x01\\x02')\n"
    "print(os.path.getsize('/work/pic.png'))\n";

}  // namespace

TEST_CASE("a session's execute writes files in, returns them, and links large ones",
          "[integration][files]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  auto init = gw.post(session_request("initialize",
                                      {{"protocolVersion", "2025-11-25"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "it"}, {"version", "1"}}}},
                                      0),
                      {}, "tok-a");
  REQUIRE(init.status == 200);
  CHECK(session_answer(init)["result"]["capabilities"].contains("resources"));
  std::string session = init.headers["mcp-session-id"];
  gw.post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, session, "tok-a");

  json args =
      call(kMakeFiles,
           {{"files",
             {{{"path", "in/data.txt"}, {"content", "hello files"}},
              {{"path", "/work/pic.png"}, {"content", kPng}, {"encoding", "base64"}}}},
            {"return_files", {"out.txt", "pic.png", "big.bin", "small.bin", "missing.txt"}}});
  auto r = gw.post(tool_call_message(1, "execute", args), session, "tok-a");
  REQUIRE(r.status == 200);
  json result = session_answer(r)["result"];
  REQUIRE(result["isError"] == false);
  CHECK(result["structuredContent"]["stdout"] == "70\n");
  REQUIRE(result["structuredContent"]["files_written"].size() == 2);

  const json* text = content_of_type(result, "resource", 0);
  REQUIRE(text);
  CHECK((*text)["resource"]["text"] == "HELLO FILES");
  CHECK((*text)["resource"]["mimeType"] == "text/plain");
  const json* blob = content_of_type(result, "resource", 1);
  REQUIRE(blob);
  CHECK((*blob)["resource"]["blob"] == "AAEC");
  const json* image = content_of_type(result, "image");
  REQUIRE(image);
  CHECK((*image)["mimeType"] == "image/png");
  CHECK((*image)["data"] == kPng);
  const json* link = content_of_type(result, "resource_link");
  REQUIRE(link);
  CHECK((*link)["size"] == 256 * 1200);
  CHECK((*link)["name"] == "big.bin");
  json files = result["structuredContent"]["files"];
  REQUIRE(files.size() == 5);
  CHECK(files[2]["returned"] == "link");
  CHECK(files[4]["returned"] == "error");
  CHECK(files[4]["error"] == "no such file");
  CHECK(result.dump().find("/work/missing.txt was not returned: no such file") !=
        std::string::npos);

  std::string uri = (*link)["uri"];
  auto read = session_answer(
      gw.post(session_request("resources/read", {{"uri", uri}}, 2), session, "tok-a"));
  REQUIRE(read.contains("result"));
  CHECK(read["result"]["contents"][0]["uri"] == uri);
  CHECK(read["result"]["contents"][0]["blob"].get<std::string>().size() == 256 * 1200 / 3 * 4);

  // Another tenant's session gets what an unknown URI gets.
  std::string theirs = gw.initialize("tok-b");
  auto other = session_answer(
      gw.post(session_request("resources/read", {{"uri", uri}}, 3), theirs, "tok-b"));
  CHECK(other["error"]["code"] == -32002);
  auto made_up = session_answer(
      gw.post(session_request("resources/read", {{"uri", uri + "x"}}, 4), session, "tok-a"));
  CHECK(made_up["error"]["code"] == -32002);

  // Gone with the sandbox.
  auto ended = gw.post(tool_call_message(5, "end_sandbox", json::object()), session, "tok-a");
  CHECK(session_answer(ended)["result"]["isError"] == false);
  auto gone = session_answer(
      gw.post(session_request("resources/read", {{"uri", uri}}, 6), session, "tok-a"));
  CHECK(gone["error"]["code"] == -32002);
  CHECK(gone["error"]["message"] == "Resource not found");
}

TEST_CASE("a 2026-07-28 execute returns files and links that only its tenant reads",
          "[integration][files][stateless]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  json args =
      call(kMakeFiles, {{"files",
                         {{{"path", "in/data.txt"}, {"content", "x"}},
                          {{"path", "pic.png"}, {"content", kPng}, {"encoding", "base64"}}}},
                        {"return_files", {"big.bin", "out.txt"}}});
  auto result = gw.call_stateless("execute", args, "tok-a");
  REQUIRE(result["isError"] == false);
  std::string handle = result["structuredContent"]["sandbox_id"];
  const json* link = content_of_type(result, "resource_link");
  REQUIRE(link);
  std::string uri = (*link)["uri"];
  CHECK(uri.find(handle) == std::string::npos);  // the URI names no session or handle
  auto read = read_stateless(gw, uri, "tok-a");
  REQUIRE(read.contains("result"));
  CHECK(read["result"]["resultType"] == "complete");
  CHECK(read["result"]["cacheScope"] == "private");  // a tenant's bytes, never shared
  CHECK(read["result"]["contents"][0]["blob"].get<std::string>().size() == 256 * 1200 / 3 * 4);
  // 2026-07-28 (SEP-2164): not found is -32602 with the URI in data.
  auto theirs = read_stateless(gw, uri, "tok-b");
  CHECK(theirs["error"]["code"] == -32602);
  CHECK(theirs["error"]["data"]["uri"] == uri);
  CHECK(theirs["error"]["message"] == "Resource not found");
  gw.call_stateless("end_sandbox", {{"sandbox_id", handle}}, "tok-a");
  CHECK(read_stateless(gw, uri, "tok-a")["error"]["code"] == -32602);
}

TEST_CASE("files over their caps, outside /work or through planted links are tool errors",
          "[integration][files]") {
  GatewayProcess gw(
      {"--file-in-max-bytes", "1000", "--files-in-max-bytes", "1500", "--return-files-max", "2"});
  auto text = [](const json& r) { return r["content"][0]["text"].get<std::string>(); };
  auto big = gw.call_stateless(
      "execute", call("1", {{"files", {{{"path", "a"}, {"content", std::string(1001, 'x')}}}}}));
  CHECK(big["isError"] == true);
  CHECK(text(big).find("`files`[0] is larger than 1000 bytes") != std::string::npos);
  auto total = gw.call_stateless(
      "execute", call("1", {{"files",
                             {{{"path", "a"}, {"content", std::string(800, 'x')}},
                              {{"path", "b"}, {"content", std::string(800, 'x')}}}}}));
  CHECK(total["isError"] == true);
  CHECK(text(total).find("more than 1500 bytes") != std::string::npos);
  auto outside = gw.call_stateless(
      "execute", call("1", {{"files", {{{"path", "../etc/x"}, {"content", "x"}}}}}));
  CHECK(outside["isError"] == true);
  CHECK(text(outside).find("under /work") != std::string::npos);
  auto bad64 = gw.call_stateless(
      "execute",
      call("1", {{"files", {{{"path", "a"}, {"content", "%%%%"}, {"encoding", "base64"}}}}}));
  CHECK(text(bad64).find("not valid base64") != std::string::npos);
  auto many = gw.call_stateless("execute", call("1", {{"return_files", {"a", "b", "c"}}}));
  CHECK(text(many).find("more than 2 files") != std::string::npos);

  // A link the program planted: the file is not written and the code does not run.
  auto planted =
      gw.call_stateless("execute", json{{"code", "ln -s /etc /work/etc"}, {"language", "bash"}});
  std::string handle = planted["structuredContent"]["sandbox_id"];
  auto through =
      gw.call_stateless("execute", json{{"code", "touch /work/ran"},
                                        {"language", "bash"},
                                        {"sandbox_id", handle},
                                        {"files", {{{"path", "etc/evil"}, {"content", "x"}}}}});
  CHECK(through["isError"] == true);
  CHECK(text(through).find("/work/etc/evil: leads out of /work") != std::string::npos);
  auto after = gw.call_stateless("execute", json{{"code", "ls /work"},
                                                 {"language", "bash"},
                                                 {"sandbox_id", handle},
                                                 {"return_files", {"etc/passwd"}}});
  CHECK(after["structuredContent"]["stdout"] == "etc\n");  // `ran` was never made
  CHECK(after["structuredContent"]["files"][0]["returned"] == "error");
  CHECK(after.dump().find("root:") == std::string::npos);

  // A sparse 1 TiB file is told by its size, never read; a FIFO is never opened for reading.
  auto odd = gw.call_stateless("execute",
                               json{{"code", "truncate -s 1T /work/sparse && mkfifo /work/pipe"},
                                    {"language", "bash"},
                                    {"sandbox_id", handle},
                                    {"return_files", {"sparse", "pipe"}}});
  REQUIRE(odd["isError"] == false);
  json listed = odd["structuredContent"]["files"];
  CHECK(listed[0]["size"] == (1ull << 40));
  CHECK(listed[0]["error"].get<std::string>().find("more than the 52428800 bytes") !=
        std::string::npos);
  CHECK(listed[1]["error"] == "not a regular file (a FIFO, socket or device)");
}

TEST_CASE("the table of minted URIs is bounded per tenant: its oldest go, another tenant's stay",
          "[integration][files]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string(), "--return-files-max", "1000"}, {});
  std::string a = gw.initialize("tok-a"), b = gw.initialize("tok-b");
  auto run = [&](const std::string& session, const std::string& token, const std::string& prefix,
                 int files, int id) {
    json names = json::array();
    for (int i = 0; i < files; ++i) names.push_back(prefix + std::to_string(i));
    std::string code = "for i in range(" + std::to_string(files) + "): open(f'/work/" + prefix +
                       "{i}', 'w').write(str(i))";
    auto reply = gw.post(tool_call_message(id, "execute", call(code, {{"return_files", names}})),
                         session, token);
    json result = session_answer(reply)["result"];
    INFO(result.dump().substr(0, 2000));
    CHECK(result["isError"] == false);
    std::vector<std::string> uris;
    for (const auto& file : result["structuredContent"]["files"]) uris.push_back(file["uri"]);
    return uris;
  };
  auto read = [&](const std::string& uri, const std::string& session, const std::string& token) {
    return session_answer(
        gw.post(session_request("resources/read", {{"uri", uri}}, 99), session, token));
  };
  auto theirs = run(b, "tok-b", "b", 1, 1);
  REQUIRE(theirs.size() == 1);
  // 1200 URIs for one tenant, over its 1024.
  auto older = run(a, "tok-a", "f", 600, 2);
  auto newer = run(a, "tok-a", "g", 600, 3);
  REQUIRE(older.size() == 600);
  REQUIRE(newer.size() == 600);
  CHECK(read(older.front(), a, "tok-a")["error"]["code"] == -32002);
  CHECK(read(newer.back(), a, "tok-a")["result"]["contents"][0]["text"] == "599");
  CHECK(read(theirs.front(), b, "tok-b")["result"]["contents"][0]["text"] == "0");
}

TEST_CASE("reads queued behind one tenant's long calls do not hold up another tenant's read",
          "[integration][files]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  auto execute = [&](const std::string& session, const std::string& token, json arguments) {
    return gw.post(tool_call_message(1, "execute", std::move(arguments)), session, token);
  };
  auto read = [&](const std::string& uri, const std::string& session, const std::string& token) {
    return session_answer(
        gw.post(session_request("resources/read", {{"uri", uri}}, 2), session, token));
  };
  auto file_uri = [&](const std::string& session, const std::string& token) {
    auto made = session_answer(
        execute(session, token,
                call("open('/work/f.txt', 'w').write('mine')", {{"return_files", {"f.txt"}}})));
    return made["result"]["structuredContent"]["files"][0]["uri"].get<std::string>();
  };
  // Tenant a: as many sessions as the gateway has read permits (2 at the default read size),
  // each running a long call with a read of its own file queued behind it.
  std::vector<std::future<HttpReply>> calls;
  std::vector<std::future<json>> queued_reads;
  std::vector<std::pair<std::string, std::string>> sessions;  // session, uri
  for (int i = 0; i < 2; ++i) {
    std::string session = gw.initialize("tok-a");
    sessions.emplace_back(session, file_uri(session, "tok-a"));
    std::string marker = "sandgate-read-wait-" + std::to_string(i);
    calls.push_back(std::async(std::launch::async, [&, session, marker] {
      return execute(session, "tok-a",
                     {{"code", "exec -a " + marker + " sleep 60"}, {"language", "bash"}});
    }));
    REQUIRE(eventually([&] { return sandboxed_running(marker + " 60") == 1; }));
  }
  // Only the calls' connections are open; then a read of each session's file queues behind its
  // call, each on a connection of its own.
  REQUIRE(eventually([&] { return server_connections(gw.port()) == 2; }));
  // (Not a structured binding: clang 14 cannot capture one.)
  for (const auto& named : sessions)
    queued_reads.push_back(std::async(
        std::launch::async, [&, named] { return read(named.second, named.first, "tok-a"); }));
  REQUIRE(eventually([&] { return server_connections(gw.port()) == 4; }));
  // Tenant b's read of its idle session's file is served while a's calls still run.
  std::string b = gw.initialize("tok-b");
  std::string uri = file_uri(b, "tok-b");
  CHECK(read(uri, b, "tok-b")["result"]["contents"][0]["text"] == "mine");
  CHECK(sandboxed_running("sandgate-read-wait-0 60") == 1);
  CHECK(sandboxed_running("sandgate-read-wait-1 60") == 1);
  // Stop a's calls (the gateway ends their sandboxes at its exit); the queued reads get an
  // answer either way.
  CHECK(gw.stop() == 0);
  for (auto& c : calls) c.wait();
  for (auto& r : queued_reads) r.wait();
}
