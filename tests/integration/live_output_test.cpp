// Live output on the real binary: a request with a progressToken gets its program's output in
// notifications/progress as it is written, before the response, in both protocol eras, from the
// persistent interpreter and fresh processes; a flood gives a bounded number of bounded
// notifications and leaves the result as it was; a request without a token gets none.
#include <string>
#include <vector>

#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// The JSON-RPC messages of a response, in order: an SSE stream's events, or a plain body.
std::vector<json> messages_of(const HttpReply& reply) {
  std::vector<json> messages;
  if (reply.headers.count("content-type") &&
      reply.headers.at("content-type") != "text/event-stream")
    return {json::parse(reply.body)};
  std::size_t at = 0;
  while ((at = reply.body.find("data: ", at)) != std::string::npos) {
    std::size_t end = reply.body.find('\n', at);
    std::string data = reply.body.substr(at + 6, end - at - 6);
    if (!data.empty()) messages.push_back(json::parse(data));  // throws on invalid UTF-8 too
    at = end;
  }
  return messages;
}

struct Streamed {
  std::vector<std::string> output;  // the output notifications' messages, in order
  std::size_t progress_count = 0;
  bool increasing = true;
  bool response_last = false;
  json result;
};

Streamed read_stream(const HttpReply& reply) {
  Streamed s;
  double last = -1;
  auto messages = messages_of(reply);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (m.value("method", "") == "notifications/progress") {
      ++s.progress_count;
      double p = m["params"]["progress"].get<double>();
      if (p <= last) s.increasing = false;
      last = p;
      std::string message = m["params"].value("message", "");
      if (message.rfind("running for ", 0) != 0) s.output.push_back(message);
    } else if (m.contains("result")) {
      s.result = m["result"];
      s.response_last = i + 1 == messages.size();
    }
  }
  return s;
}

json execute_arguments(const std::string& code, bool fresh,
                       const std::string& language = "python") {
  json args = {{"code", code}, {"language", language}, {"timeout_seconds", 30}};
  if (fresh) args["fresh"] = true;
  return args;
}

HttpReply call_in_session(GatewayProcess& gw, const std::string& session, json arguments,
                          bool progress) {
  json message = tool_call_message(7, "execute", std::move(arguments));
  return gw.post(progress ? with_progress_token(std::move(message), "live") : message, session);
}

HttpReply call_stateless(GatewayProcess& gw, json arguments, bool progress) {
  json message = stateless_tool_call("execute", std::move(arguments));
  if (progress) message = with_progress_token(std::move(message), 7);
  return gw.request(http::verb::post, "/mcp", message.dump(),
                    GatewayProcess::stateless_headers(message, "test-token"));
}

// Prints a line every 200 ms for 1.6 s, every third one also on stderr.
const std::string kTicking =
    "import sys, time\n"
    "for i in range(8):\n"
    "    print('line', i)\n"
    "    if i % 3 == 2:\n"
    "        print('warn', i, file=sys.stderr)\n"
    "    time.sleep(0.2)\n";

// The same in JavaScript; the interpreter's cell awaits the timers, a fresh process lives until
// they are done.
const std::string kTickingJs =
    "new Promise((done) => { let i = 0; const t = setInterval(() => {\n"
    "  console.log('line', i);\n"
    "  if (i % 3 == 2) console.error('warn', i);\n"
    "  if (++i == 8) { clearInterval(t); done(); }\n"
    "}, 200); });\n";

void check_ticking(const Streamed& s) {
  INFO("output notifications: " << s.output.size());
  CHECK(s.increasing);
  CHECK(s.response_last);
  REQUIRE(s.result.is_object());
  CHECK(s.result["isError"] == false);
  CHECK(s.result["structuredContent"]["stdout"] ==
        "line 0\nline 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n");
  // Several notifications, each a part of the output: together, all of it, in order.
  CHECK(s.output.size() >= 3);
  std::string all;
  for (const auto& m : s.output) {
    CHECK(m.size() <= 4096);
    all += m;
  }
  INFO(all);
  std::size_t at = 0;
  for (int i = 0; i < 8; ++i) {
    std::size_t found = all.find("line " + std::to_string(i) + "\n", at);
    CHECK(found != std::string::npos);
    if (found != std::string::npos) at = found;
  }
  CHECK(all.find("[stderr] warn 2\n") != std::string::npos);
  CHECK(all.find("[stderr] warn 5\n") != std::string::npos);
  CHECK(all.find("not shown live") == std::string::npos);
}

}  // namespace

TEST_CASE("a call with a progressToken streams its output live, in both eras",
          "[integration][live_output]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter") << ", 2025-11-25 session");
    auto reply = call_in_session(gw, session, execute_arguments(kTicking, fresh), true);
    REQUIRE(reply.status == 200);
    CHECK(reply.headers["content-type"] == "text/event-stream");
    check_ticking(read_stream(reply));
  }
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter") << " javascript, 2025-11-25 session");
    auto code = (fresh ? "" : "await ") + kTickingJs;
    auto reply = call_in_session(gw, session, execute_arguments(code, fresh, "javascript"), true);
    REQUIRE(reply.status == 200);
    check_ticking(read_stream(reply));
  }
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter") << ", 2026-07-28 request");
    auto reply = call_stateless(gw, execute_arguments(kTicking, fresh), true);
    REQUIRE(reply.status == 200);
    check_ticking(read_stream(reply));
  }
}

TEST_CASE("a flood gives a bounded number of bounded notifications, and the same result",
          "[integration][live_output]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  // 5 MB on stdout, with characters cut across reads and bytes that are no UTF-8 at all.
  const std::string flood =
      "import sys\n"
      "sys.stdout.buffer.write(('é' * 999 + '\\n').encode() * 2600 + b'\\xff\\xfe tail\\n')\n"
      "sys.stderr.write('done\\n')\n";
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter"));
    auto quiet = read_stream(call_in_session(gw, session, execute_arguments(flood, fresh), false));
    auto reply = call_in_session(gw, session, execute_arguments(flood, fresh), true);
    REQUIRE(reply.status == 200);
    auto live = read_stream(reply);  // every message parsed: valid JSON, so valid UTF-8
    CHECK(live.increasing);
    CHECK(live.response_last);
    REQUIRE(live.result.is_object());
    for (const char* field : {"stdout", "stderr", "truncated", "exit_code"})
      CHECK(live.result["structuredContent"][field] == quiet.result["structuredContent"][field]);
    CHECK(live.result["structuredContent"]["truncated"] == true);
    // The run takes well under the 30 s timeout; at most a few notifications a second.
    CHECK(live.output.size() >= 1);
    CHECK(live.progress_count <= 150);
    std::string all;
    for (const auto& m : live.output) {
      CHECK(m.size() <= 4096);
      all += m;
    }
    CHECK(all.rfind("éééé", 0) == 0);
    CHECK(all.find("bytes not shown live]") != std::string::npos);
    CHECK(all.size() < 150 * 4096);
  }
}

TEST_CASE("a call without a progressToken gets no progress notifications",
          "[integration][live_output]") {
  GatewayProcess gw({"--progress-interval", "1"});
  std::string session = gw.initialize();
  for (bool fresh : {false, true}) {
    auto in_session = call_in_session(gw, session, execute_arguments(kTicking, fresh), false);
    REQUIRE(in_session.status == 200);
    CHECK(in_session.body.find("notifications/progress") == std::string::npos);
    CHECK(read_stream(in_session).result["structuredContent"]["stdout"].get<std::string>().size() ==
          56);
    auto stateless = call_stateless(gw, execute_arguments(kTicking, fresh), false);
    REQUIRE(stateless.status == 200);
    CHECK(stateless.body.find("notifications/progress") == std::string::npos);
  }
}

TEST_CASE("live output and elapsed-time ticks share one increasing count, up to a timeout",
          "[integration][live_output]") {
  GatewayProcess gw({"--progress-interval", "1"});
  std::string session = gw.initialize();
  for (bool fresh : {false, true}) {
    INFO((fresh ? "fresh" : "interpreter"));
    // One write (print writes its text and its end separately, and a slow machine may send
    // them as two pieces).
    json args = execute_arguments(
        "import sys, time\nsys.stdout.write('before\\n')\ntime.sleep(30)\n", fresh);
    args["timeout_seconds"] = 2;
    auto reply = call_in_session(gw, session, args, true);
    REQUIRE(reply.status == 200);
    auto s = read_stream(reply);
    CHECK(s.increasing);
    CHECK(s.response_last);
    CHECK(s.progress_count > s.output.size());  // "running for 1 s" too
    REQUIRE(s.output.size() == 1);
    CHECK(s.output[0] == "before\n");
    REQUIRE(s.result.is_object());
    CHECK(s.result["structuredContent"]["timed_out"] == true);
    CHECK(s.result["structuredContent"]["stdout"] == "before\n");
  }
}

TEST_CASE("a progressToken is an integer or a string of at most 256 bytes, in both eras",
          "[integration][live_output][hostile]") {
  GatewayProcess gw({"--progress-interval", "1"});
  std::string session = gw.initialize();
  auto in_session = [&](json token) {
    return gw.post(with_progress_token(
                       tool_call_message(7, "execute", execute_arguments("print('ok')", false)),
                       std::move(token)),
                   session);
  };
  auto stateless = [&](json token) {
    json message = with_progress_token(
        stateless_tool_call("execute", execute_arguments("print('ok')", false)), std::move(token));
    return gw.request(http::verb::post, "/mcp", message.dump(),
                      GatewayProcess::stateless_headers(message, "test-token"));
  };
  // Refused before anything runs: a JSON-RPC invalid-params error naming the rule (the 2025
  // session answers it in a 200, the 2026-07-28 request gets 400 as its other _meta errors).
  for (json bad : {json(std::string(1 << 20, 't')), json(std::string(257, 't')), json(1.5),
                   json::object({{"a", 1}}), json::array({1}), json(true)}) {
    INFO(bad.dump().substr(0, 40));
    auto old_era = in_session(bad);
    CHECK(old_era.status == 200);
    CHECK(old_era.json_body()["error"]["code"] == -32602);
    CHECK_THAT(old_era.json_body()["error"]["message"].get<std::string>(),
               Catch::Contains("progressToken"));
    auto new_era = stateless(bad);
    CHECK(new_era.status == 400);
    CHECK(new_era.json_body()["error"]["code"] == -32602);
  }
  // At the bound, and integers, are taken and echoed in the notifications.
  for (json good : {json(std::string(256, 't')), json(42), json(-7)}) {
    INFO(good.dump().substr(0, 40));
    for (const auto& reply : {in_session(good), stateless(good)}) {
      auto messages = messages_of(reply);
      REQUIRE_FALSE(messages.empty());
      CHECK(messages.back()["result"]["isError"] == false);
      int progress = 0;
      for (const auto& m : messages)
        if (m.value("method", "") == "notifications/progress") {
          ++progress;
          CHECK(m["params"]["progressToken"] == good);
        }
      CHECK(progress > 0);  // the program's output, live
    }
  }
}

TEST_CASE(
    "live output shows escape sequences as text and no program line passes for the gateway's "
    "marks",
    "[integration][live_output]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  // Red text, a bar redrawn with \r, a right-to-left override, and lines forged to look like
  // the gateway's stderr mark and its "not shown" count.
  const std::string code =
      "import sys\n"
      "sys.stdout.write('\\x1b[31mred\\x1b[0m\\n10%\\r20%\\r\\n\\u202egnp.exe\\n')\n"
      "sys.stdout.write('[stderr] forged\\n[\\u2026 5 bytes not shown live]\\n')\n"
      "sys.stdout.flush()\n"
      "sys.stderr.write('[stderr] twice\\n')\n";
  auto reply = call_in_session(gw, session, execute_arguments(code, true), true);
  REQUIRE(reply.status == 200);
  auto s = read_stream(reply);
  std::string all;
  for (const auto& m : s.output) all += m;
  INFO(all);
  CHECK(all.find('\x1b') == std::string::npos);
  CHECK(all.find('\r') == std::string::npos);
  CHECK(all.find("\xE2\x80\xAE") == std::string::npos);
  CHECK(all.find("\xE2\x90\x9B[31mred") != std::string::npos);  // ESC shown as its picture
  CHECK(all.find("10%\n20%\n") != std::string::npos);
  // Every line that starts with '[' is the gateway's: the forged ones are escaped.
  CHECK(all.find("\\[stderr] forged\n") != std::string::npos);
  CHECK(all.find("\\[\xE2\x80\xA6 5 bytes not shown live]\n") != std::string::npos);
  CHECK(all.find("[stderr] [stderr] twice\n") != std::string::npos);
  std::size_t at = 0;
  while ((at = all.find("\n[", at)) != std::string::npos) {
    ++at;
    CHECK(all.compare(at, 9, "[stderr] ") == 0);
  }
  // The result keeps the program's bytes exactly.
  CHECK(s.result["structuredContent"]["stdout"].get<std::string>().find("\x1b[31mred") == 0);
}
