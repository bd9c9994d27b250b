// An execution's outcome as the CallToolResult the model reads (server/tools/execute_result).
#include "server/tools/execute_result.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::server;
using nlohmann::json;

TEST_CASE("results: non-zero exit is normal, timeout and sandbox end are tool errors",
          "[unit][tool]") {
  using sandgate::session::ExecuteResult;
  sandgate::sandbox::RunRequest req;
  req.timeout = std::chrono::seconds(7);
  ExecuteResult e;
  e.run.exit_code = 3;
  e.run.stdout_text = "out";
  auto normal = map_execute_result(ExecuteResult(e), req);
  CHECK(normal.result["isError"] == false);
  CHECK(normal.result["structuredContent"]["exit_code"] == 3);
  CHECK(normal.result["structuredContent"]["stdout"] == "out");
  CHECK(normal.result["content"][0]["text"].get<std::string>().find("\"stdout\":\"out\"") !=
        std::string::npos);
  CHECK(normal.outcome == ExecOutcome::nonzero_exit);

  e.run.outcome = sandgate::sandbox::RunOutcome::timed_out;
  auto timeout = map_execute_result(ExecuteResult(e), req);
  CHECK(timeout.result["isError"] == true);
  CHECK(timeout.result["content"][0]["text"] == "Stopped after 7 s, its timeout.");
  CHECK(timeout.result["structuredContent"]["stdout"] == "out");

  e.run.outcome = sandgate::sandbox::RunOutcome::sandbox_ended;
  e.run.end_reason = sandgate::sandbox::EndReason::spend_cap;
  auto capped = map_execute_result(ExecuteResult(e), req);
  CHECK(capped.result["isError"] == true);
  CHECK(capped.result["content"][0]["text"].get<std::string>().find("spend cap") !=
        std::string::npos);
}

TEST_CASE("results: a call whose session ends is told why, and not promised a next call",
          "[unit][tool]") {
  using sandgate::session::ExecuteResult;
  using sandgate::session::ExecuteStatus;
  sandgate::sandbox::RunRequest req;
  ExecuteResult waiting;
  waiting.status = ExecuteStatus::session_ended;
  waiting.message = "the gateway is shutting down";
  auto refused = map_execute_result(std::move(waiting), req);
  CHECK(refused.result["isError"] == true);
  CHECK(refused.result["content"][0]["text"] ==
        "The session ended before the call could run: the gateway is shutting down.");

  ExecuteResult running;
  running.run.outcome = sandgate::sandbox::RunOutcome::sandbox_ended;
  running.run.end_reason = sandgate::sandbox::EndReason::closed;
  running.run.failure = "the session was deleted";
  auto ended = map_execute_result(std::move(running), req);
  std::string text = ended.result["content"][0]["text"];
  CHECK(text == "Sandbox ended: the session was deleted. Its processes and files are gone.");

  ExecuteResult failed;
  failed.run.outcome = sandgate::sandbox::RunOutcome::sandbox_ended;
  failed.run.end_reason = sandgate::sandbox::EndReason::failed;
  failed.run.failure = "the sandbox's processes were killed";
  text = map_execute_result(std::move(failed), req).result["content"][0]["text"];
  CHECK(text.find("(the sandbox's processes were killed)") != std::string::npos);
  CHECK(text.find("the next call starts a fresh sandbox") != std::string::npos);
}

TEST_CASE("results: the session's spend cap or lifetime reached says nothing more runs there",
          "[unit][tool][spend]") {
  using sandgate::session::ExecuteResult;
  using sandgate::session::ExecuteStatus;
  sandgate::sandbox::RunRequest req;
  // A call that ran to its end and used up the cap on the way: its result stands, and says so.
  ExecuteResult crossed;
  crossed.run.exit_code = 0;
  crossed.run.end_reason = sandgate::sandbox::EndReason::spend_cap;
  crossed.run.failure = "this session reached its $1.00 spend cap (spent $1.00)";
  auto ran = map_execute_result(ExecuteResult(crossed), req);
  CHECK(ran.result["isError"] == false);
  CHECK(ran.result["structuredContent"]["sandbox_ended"] == crossed.run.failure);
  std::string note = ran.result["content"].back()["text"];
  CHECK(note.find("After this call the sandbox ended: this session reached its $1.00 spend cap") !=
        std::string::npos);
  CHECK(note.find("Start a new session to go on.") != std::string::npos);
  // A handle's caller starts a new sandbox instead.
  note = map_execute_result(ExecuteResult(crossed), req, "sb-x").result["content"].back()["text"];
  CHECK(note.find("Omit sandbox_id to start a new sandbox.") != std::string::npos);

  ExecuteResult spent;
  spent.status = ExecuteStatus::limit_reached;
  spent.message = "this session can run no more code: its lifetime of 3 s is over";
  auto refused = map_execute_result(std::move(spent), req);
  CHECK(refused.result["isError"] == true);
  CHECK(refused.result["content"][0]["text"] ==
        "This session can run no more code: its lifetime of 3 s is over. Start a new session to "
        "go on.");
}

TEST_CASE("results: figures are image content after the text, listed without their bytes",
          "[unit][tool]") {
  using sandgate::session::ExecuteResult;
  sandgate::sandbox::RunRequest req;
  ExecuteResult e;
  e.run.exit_code = 0;
  e.run.images.push_back({std::string("\x89PNG\r\n\x1a\nab", 10), 640, 480});
  e.run.images.push_back({std::string("\x89PNG\r\n\x1a\n", 8), 10, 20});
  e.run.images_note = "Figures not returned: 1 over the limit of 8 per call.";
  auto mapped = map_execute_result(ExecuteResult(e), req);
  const auto& content = mapped.result["content"];
  REQUIRE(content.size() == 4);
  CHECK(content[0]["type"] == "text");
  CHECK(content[1] == json({{"type", "text"}, {"text", e.run.images_note}}));
  CHECK(content[2] ==
        json({{"type", "image"}, {"data", "iVBORw0KGgphYg=="}, {"mimeType", "image/png"}}));
  CHECK(content[3]["data"] == "iVBORw0KGgo=");
  const auto& listed = mapped.result["structuredContent"]["images"];
  REQUIRE(listed.size() == 2);
  CHECK(listed[0] == json({{"name", "figure-1.png"},
                           {"mimeType", "image/png"},
                           {"width", 640},
                           {"height", 480},
                           {"bytes", 10}}));
  CHECK(mapped.result["structuredContent"]["images_dropped"] == e.run.images_note);
  // The text form says what was dropped too, and never carries the bytes.
  auto text = content[0]["text"].get<std::string>();
  CHECK(text.find("1 over the limit of 8 per call") != std::string::npos);
  CHECK(text.find("iVBOR") == std::string::npos);

  // No figures: nothing new in the result.
  ExecuteResult plain;
  plain.run.exit_code = 0;
  auto without = map_execute_result(std::move(plain), req);
  CHECK(without.result["content"].size() == 1);
  CHECK_FALSE(without.result["structuredContent"].contains("images"));
  CHECK_FALSE(without.result["structuredContent"].contains("images_dropped"));
}
