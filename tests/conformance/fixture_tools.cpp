#include "fixture_tools.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>

#include "fixture_media.hpp"
#include "fixture_tool.hpp"

namespace sandgate::conformance {
namespace asio = boost::asio;
using server::ProtocolError;

namespace {

constexpr const char* kCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities";

asio::awaitable<void> pause(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
}

json content(json blocks) {
  return {{"content", std::move(blocks)}, {"isError", false}};
}

json image_block() {
  return {{"type", "image"}, {"data", kPngBase64}, {"mimeType", "image/png"}};
}

// A string argument, or null when it is missing or not a string.
const json* string_argument(const ToolCall& call, const char* key) {
  if (!call.arguments.is_object()) return nullptr;
  auto it = call.arguments.find(key);
  return it != call.arguments.end() && it->is_string() ? &*it : nullptr;
}

// What a server-to-client request (2025 sessions) answered, as a tool result.
json asked_outcome(const json& outcome, const std::string& what) {
  if (outcome.contains("error"))
    return text_result(what + " failed: " + outcome["error"].value("message", std::string("error")),
                       true);
  return text_result(what + " result: " + outcome.value("result", json::object()).dump());
}

asio::awaitable<json> simple_text(ToolCall) {
  co_return text_result("This is a simple text response for testing.");
}

asio::awaitable<json> image_content(ToolCall) {
  co_return content(json::array({image_block()}));
}

asio::awaitable<json> audio_content(ToolCall) {
  co_return content(
      json::array({{{"type", "audio"}, {"data", kWavBase64}, {"mimeType", "audio/wav"}}}));
}

asio::awaitable<json> embedded_resource(ToolCall) {
  co_return content(json::array({{{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://embedded-resource"},
                                    {"mimeType", "text/plain"},
                                    {"text", "This is an embedded resource content."}}}}}));
}

asio::awaitable<json> multiple_content_types(ToolCall) {
  co_return content(json::array({{{"type", "text"}, {"text", "Multiple content types test:"}},
                                 image_block(),
                                 {{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://mixed-content-resource"},
                                    {"mimeType", "application/json"},
                                    {"text", json{{"test", "data"}, {"value", 123}}.dump()}}}}}));
}

asio::awaitable<json> error_handling(ToolCall) {
  co_return text_result("This tool intentionally returns an error for testing", true);
}

// Three info messages, 50 ms apart; sent only at the level the client asked for (2025:
// logging/setLevel; 2026-07-28: _meta logLevel).
asio::awaitable<json> with_logging(ToolCall call) {
  call.events->log("info", "Tool execution started");
  co_await pause(std::chrono::milliseconds(50));
  call.events->log("info", "Tool processing data");
  co_await pause(std::chrono::milliseconds(50));
  call.events->log("info", "Tool execution completed");
  co_return text_result("Tool with logging executed successfully");
}

// Progress 0, 50, 100 of 100, 50 ms apart (sent only when the request has a progressToken).
asio::awaitable<json> with_progress(ToolCall call) {
  for (int step : {0, 50, 100}) {
    if (step > 0) co_await pause(std::chrono::milliseconds(50));
    call.events->progress(step, 100.0, "Completed step " + std::to_string(step) + " of 100");
  }
  co_return text_result("Progress test completed (3 notifications sent when asked for)");
}

// 2025 sessions: sampling/createMessage on the call's stream.
asio::awaitable<json> sampling(ToolCall call) {
  const json* prompt = string_argument(call, "prompt");
  if (!prompt) co_return text_result("Invalid arguments: `prompt` (a string) is required.", true);
  // (Built before co_await: GCC 12 cannot keep a braced initializer across a suspension.)
  json request = {
      {"messages",
       json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", *prompt}}}}})},
      {"maxTokens", 100}};
  json outcome = co_await call.events->ask_client("sampling/createMessage", std::move(request));
  if (outcome.contains("error")) co_return asked_outcome(outcome, "Sampling");
  const json result = outcome.value("result", json::object());
  std::string text = "No response";
  if (result.contains("content") && result["content"].is_object())
    text = result["content"].value("text", text);
  co_return text_result("LLM response: " + text);
}

json elicitation_request(std::string message, json properties, json required) {
  return {{"message", std::move(message)},
          {"requestedSchema",
           {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)}}}};
}

// 2025 sessions: elicitation/create on the call's stream.
asio::awaitable<json> elicitation(ToolCall call) {
  const json* message = string_argument(call, "message");
  if (!message) co_return text_result("Invalid arguments: `message` (a string) is required.", true);
  json properties = {{"username", {{"type", "string"}, {"description", "User's username"}}},
                     {"email", {{"type", "string"}, {"description", "User's email address"}}}};
  json request =
      elicitation_request(*message, std::move(properties), json::array({"username", "email"}));
  json outcome = co_await call.events->ask_client("elicitation/create", std::move(request));
  co_return asked_outcome(outcome, "Elicitation");
}

// SEP-1034: a default for every primitive type.
asio::awaitable<json> elicitation_defaults(ToolCall call) {
  json properties = {
      {"name", {{"type", "string"}, {"description", "User name"}, {"default", "John Doe"}}},
      {"age", {{"type", "integer"}, {"description", "User age"}, {"default", 30}}},
      {"score", {{"type", "number"}, {"description", "User score"}, {"default", 95.5}}},
      {"status",
       {{"type", "string"},
        {"description", "User status"},
        {"enum", {"active", "inactive", "pending"}},
        {"default", "active"}}},
      {"verified",
       {{"type", "boolean"}, {"description", "Verification status"}, {"default", true}}}};
  json request = elicitation_request("Please review and update the form fields with defaults",
                                     std::move(properties), json::array());
  json outcome = co_await call.events->ask_client("elicitation/create", std::move(request));
  co_return asked_outcome(outcome, "Elicitation");
}

json titled(const char* prefix) {
  json options = json::array();
  const char* titles[] = {"First", "Second", "Third"};
  for (int i = 0; i < 3; ++i)
    options.push_back({{"const", "value" + std::to_string(i + 1)},
                       {"title", std::string(titles[i]) + " " + prefix}});
  return options;
}

// SEP-1330: the five enum forms.
asio::awaitable<json> elicitation_enums(ToolCall call) {
  json properties = {
      {"untitledSingle",
       {{"type", "string"},
        {"description", "Select one option"},
        {"enum", {"option1", "option2", "option3"}}}},
      {"titledSingle",
       {{"type", "string"},
        {"description", "Select one option with titles"},
        {"oneOf", titled("Option")}}},
      {"legacyEnum",
       {{"type", "string"},
        {"description", "Select one option (legacy)"},
        {"enum", {"opt1", "opt2", "opt3"}},
        {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
      {"untitledMulti",
       {{"type", "array"},
        {"description", "Select multiple options"},
        {"minItems", 1},
        {"maxItems", 3},
        {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
      {"titledMulti",
       {{"type", "array"},
        {"description", "Select multiple options with titles"},
        {"minItems", 1},
        {"maxItems", 3},
        {"items", {{"anyOf", titled("Choice")}}}}}};
  json request = elicitation_request("Please select options from the enum fields",
                                     std::move(properties), json::array());
  json outcome = co_await call.events->ask_client("elicitation/create", std::move(request));
  co_return asked_outcome(outcome, "Elicitation");
}

// The client capabilities a 2026-07-28 request declared (empty for a 2025 session's call).
json declared_capabilities(const ToolCall& call) {
  const json& params = call.params;
  if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object())
    return json::object();
  const json& meta = params["_meta"];
  auto it = meta.find(kCapabilitiesKey);
  return it != meta.end() && it->is_object() ? *it : json::object();
}

// Needs sampling: a 2026-07-28 request that does not declare it is refused with -32021.
asio::awaitable<json> missing_capability(ToolCall call) {
  if (!call.session && !declared_capabilities(call).contains("sampling"))
    throw ProtocolError(-32021,
                        "Missing required client capability: this tool needs sampling, and the "
                        "request's clientCapabilities do not declare it",
                        {{"requiredCapabilities", {{"sampling", json::object()}}}});
  co_return text_result("The client declared sampling.");
}

// A response stream with a progress notification and then the result: never a request.
asio::awaitable<json> streaming_elicitation(ToolCall call) {
  call.events->progress(50, 100.0, "halfway");
  co_await pause(std::chrono::milliseconds(10));
  call.events->progress(100, 100.0, "done");
  co_return text_result("Streaming complete");
}

// Logs only when the request asked for a level.
asio::awaitable<json> logging_tool(ToolCall call) {
  call.events->log("info", "Diagnostic trace logging activated");
  co_return text_result("Logging evaluated");
}

// SEP-2243: `region` is mirrored in the Mcp-Param-Region header, which the transport checks
// against the body before the call gets here.
asio::awaitable<json> custom_header(ToolCall call) {
  const json* region = string_argument(call, "region");
  if (!region) co_return text_result("Invalid arguments: `region` (a string) is required.", true);
  co_return text_result("Region: " + region->get<std::string>());
}

}  // namespace

void add_fixture_tools(server::ToolRegistry& tools) {
  auto add = [&tools](json definition, FixtureTool::Handler handler) {
    tools.add(std::make_unique<FixtureTool>(std::move(definition), handler));
  };
  add(tool_definition("test_simple_text", "Tests simple text content response"), simple_text);
  add(tool_definition("test_image_content", "Tests image content response"), image_content);
  add(tool_definition("test_audio_content", "Tests audio content response"), audio_content);
  add(tool_definition("test_embedded_resource", "Tests embedded resource content response"),
      embedded_resource);
  add(tool_definition("test_multiple_content_types",
                      "Tests response with multiple content types (text, image, resource)"),
      multiple_content_types);
  add(tool_definition("test_tool_with_logging",
                      "Tests tool that emits log messages during execution"),
      with_logging);
  add(tool_definition("test_tool_with_progress", "Tests tool that reports progress notifications"),
      with_progress);
  add(tool_definition("test_error_handling", "Tests error response handling"), error_handling);
  add(tool_definition(
          "test_sampling", "Tests server-initiated sampling (LLM completion request)",
          {{"prompt", {{"type", "string"}, {"description", "The prompt to send to the LLM"}}}},
          json::array({"prompt"})),
      sampling);
  add(tool_definition(
          "test_elicitation", "Tests server-initiated elicitation (user input request)",
          {{"message", {{"type", "string"}, {"description", "The message to show the user"}}}},
          json::array({"message"})),
      elicitation);
  add(tool_definition("test_elicitation_sep1034_defaults",
                      "Tests elicitation with default values per SEP-1034"),
      elicitation_defaults);
  add(tool_definition("test_elicitation_sep1330_enums",
                      "Tests elicitation with enum schema improvements per SEP-1330"),
      elicitation_enums);
  add(tool_definition("test_missing_capability",
                      "Diagnostic: needs the sampling client capability (2026-07-28: -32021 "
                      "without it)"),
      missing_capability);
  add(tool_definition("test_streaming_elicitation",
                      "Diagnostic: answers on a response stream with notifications only"),
      streaming_elicitation);
  add(tool_definition("test_logging_tool",
                      "Diagnostic: logs only when the request asked for a log level"),
      logging_tool);
  add(tool_definition(
          "test_custom_header",
          "Echoes its region argument, which 2026-07-28 clients mirror in the "
          "Mcp-Param-Region header (SEP-2243)",
          {{"region",
            {{"type", "string"}, {"description", "Any region name"}, {"x-mcp-header", "Region"}}}},
          json::array({"region"})),
      custom_header);
}

}  // namespace sandgate::conformance
