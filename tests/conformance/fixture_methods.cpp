#include "fixture_methods.hpp"

#include <regex>

#include "fixture_media.hpp"
#include "input_required.hpp"
#include "server/tools/tool.hpp"

namespace sandgate::conformance {
using nlohmann::json;

namespace {

constexpr const char* kStaticText = "test://static-text";
constexpr const char* kStaticBinary = "test://static-binary";
constexpr const char* kWatched = "test://watched-resource";
constexpr const char* kTemplate = "test://template/{id}/data";
constexpr const char* kInputRequiredPrompt = "test_input_required_result_prompt";

json result(json value) {
  return {{"result", std::move(value)}};
}

json error(int code, const std::string& message, json data = nullptr) {
  json e = {{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = std::move(data);
  return {{"error", std::move(e)}};
}

const json* string_param(const json& params, const char* key) {
  if (!params.is_object()) return nullptr;
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? &*it : nullptr;
}

json resource_list(bool with_watched) {
  json list = json::array({{{"uri", kStaticText},
                            {"name", "static-text"},
                            {"title", "Static Text Resource"},
                            {"description", "A static text resource for testing"},
                            {"mimeType", "text/plain"}},
                           {{"uri", kStaticBinary},
                            {"name", "static-binary"},
                            {"title", "Static Binary Resource"},
                            {"description", "A static binary resource (image) for testing"},
                            {"mimeType", "image/png"}}});
  // Subscriptions exist only in 2025 sessions.
  if (with_watched)
    list.push_back({{"uri", kWatched},
                    {"name", "watched-resource"},
                    {"title", "Watched Resource"},
                    {"description", "A resource clients may subscribe to"},
                    {"mimeType", "text/plain"}});
  return list;
}

json read_resource(const json& params, bool modern) {
  const json* uri_param = string_param(params, "uri");
  if (!uri_param)
    return error(-32602, "Invalid params: resources/read needs params.uri (a string)");
  std::string uri = uri_param->get<std::string>();
  auto contents = [](json item) { return result({{"contents", json::array({std::move(item)})}}); };
  if (uri == kStaticText)
    return contents({{"uri", uri},
                     {"mimeType", "text/plain"},
                     {"text", "This is the content of the static text resource."}});
  if (uri == kStaticBinary)
    return contents({{"uri", uri}, {"mimeType", "image/png"}, {"blob", kPngBase64}});
  if (uri == kWatched && !modern)
    return contents(
        {{"uri", uri}, {"mimeType", "text/plain"}, {"text", "Watched resource content"}});
  static const std::regex templated(R"(^test://template/([^/]+)/data$)");
  std::smatch match;
  if (std::regex_match(uri, match, templated)) {
    std::string id = match[1];
    return contents(
        {{"uri", uri},
         {"mimeType", "application/json"},
         {"text",
          json{{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}}.dump()}});
  }
  return error(-32602, "Resource not found: " + uri, {{"uri", uri}});
}

json prompt_argument(const char* name, const char* description) {
  return {{"name", name}, {"description", description}, {"required", true}};
}

json prompt_list(bool with_input_required) {
  json list = json::array(
      {{{"name", "test_simple_prompt"},
        {"title", "Simple Test Prompt"},
        {"description", "A simple prompt without arguments"}},
       {{"name", "test_prompt_with_arguments"},
        {"title", "Prompt With Arguments"},
        {"description", "A prompt with required arguments"},
        {"arguments", json::array({prompt_argument("arg1", "First test argument"),
                                   prompt_argument("arg2", "Second test argument")})}},
       {{"name", "test_prompt_with_embedded_resource"},
        {"title", "Prompt With Embedded Resource"},
        {"description", "A prompt that includes an embedded resource"},
        {"arguments",
         json::array({prompt_argument("resourceUri", "URI of the resource to embed")})}},
       {{"name", "test_prompt_with_image"},
        {"title", "Prompt With Image"},
        {"description", "A prompt that includes image content"}}});
  if (with_input_required)
    list.push_back({{"name", kInputRequiredPrompt},
                    {"title", "Prompt Needing Input"},
                    {"description", "MRTR: asks the client for context (elicitation) first"}});
  return list;
}

json user_message(json content) {
  return {{"role", "user"}, {"content", std::move(content)}};
}
json text(const std::string& value) {
  return {{"type", "text"}, {"text", value}};
}

json get_prompt(const json& params, bool modern) {
  const json* name_param = string_param(params, "name");
  if (!name_param) return error(-32602, "Invalid params: prompts/get needs params.name (a string)");
  std::string name = name_param->get<std::string>();
  json args = params.is_object() && params.contains("arguments") && params["arguments"].is_object()
                  ? params["arguments"]
                  : json::object();
  auto argument = [&](const char* key) -> std::optional<std::string> {
    auto it = args.find(key);
    if (it == args.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  auto missing = [&](const char* key) {
    return error(-32602, std::string("Invalid params: prompt ") + name + " needs argument " + key);
  };
  auto messages = [](json list) { return result({{"messages", std::move(list)}}); };

  if (name == "test_simple_prompt")
    return messages(json::array({user_message(text("This is a simple prompt for testing."))}));
  if (name == "test_prompt_with_arguments") {
    auto arg1 = argument("arg1"), arg2 = argument("arg2");
    if (!arg1) return missing("arg1");
    if (!arg2) return missing("arg2");
    return messages(json::array(
        {user_message(text("Prompt with arguments: arg1='" + *arg1 + "', arg2='" + *arg2 + "'"))}));
  }
  if (name == "test_prompt_with_embedded_resource") {
    auto uri = argument("resourceUri");
    if (!uri) return missing("resourceUri");
    return messages(
        json::array({user_message({{"type", "resource"},
                                   {"resource",
                                    {{"uri", *uri},
                                     {"mimeType", "text/plain"},
                                     {"text", "Embedded resource content for testing."}}}}),
                     user_message(text("Please process the embedded resource above."))}));
  }
  if (name == "test_prompt_with_image")
    return messages(json::array(
        {user_message({{"type", "image"}, {"data", kPngBase64}, {"mimeType", "image/png"}}),
         user_message(text("Please analyze the image above."))}));
  if (name == kInputRequiredPrompt && modern) {
    try {
      mrtr::require_capability(params, "elicitation");
      if (auto context =
              mrtr::accepted_string(mrtr::response_for(params, "user_context"), "context"))
        return messages(json::array({user_message(text("Prompt with context: " + *context))}));
    } catch (const server::ProtocolError& e) {
      return error(e.code, e.what(), e.data);
    }
    return result(
        mrtr::input_required({{"user_context", mrtr::elicit("What context should the prompt use?",
                                                            "context", "string")}}));
  }
  return error(-32602, "Invalid params: unknown prompt " + name, {{"name", name}});
}

json complete(const json& params) {
  const json* ref = params.is_object() && params.contains("ref") && params["ref"].is_object()
                        ? &params["ref"]
                        : nullptr;
  const json* argument =
      params.is_object() && params.contains("argument") && params["argument"].is_object()
          ? &params["argument"]
          : nullptr;
  if (!ref || !argument || !string_param(*argument, "name"))
    return error(-32602, "Invalid params: completion/complete needs ref and argument.name");
  std::string type = ref->value("type", std::string());
  std::string arg = (*argument)["name"].get<std::string>();
  std::string typed = argument->value("value", std::string());
  std::vector<std::string> candidates;
  if (type == "ref/prompt") {
    std::string prompt = ref->value("name", std::string());
    bool known = false;
    for (const auto& p : prompt_list(true)) known = known || p["name"] == prompt;
    if (!known) return error(-32602, "Invalid params: unknown prompt " + prompt);
    if (prompt == "test_prompt_with_arguments" && (arg == "arg1" || arg == "arg2"))
      candidates = {"hello", "help", "test", "test-value", "testing", "world"};
  } else if (type == "ref/resource") {
    if (ref->value("uri", std::string()) != kTemplate)
      return error(-32602, "Invalid params: unknown resource template");
    if (arg == "id") candidates = {"1", "123", "42"};
  } else {
    return error(-32602, "Invalid params: ref.type must be ref/prompt or ref/resource");
  }
  json values = json::array();
  for (const auto& c : candidates)
    if (c.rfind(typed, 0) == 0) values.push_back(c);
  std::size_t total = values.size();
  return result(
      {{"completion", {{"values", std::move(values)}, {"total", total}, {"hasMore", false}}}});
}

}  // namespace

json FixtureMethods::capabilities(std::string_view era) const {
  // resources.subscribe only for 2025 sessions: in 2026-07-28 it would promise a
  // subscriptions/listen stream, which an extension cannot serve (answer() sends one result).
  // logging: 2026-07-28 honours _meta logLevel, and the stateless transport does not announce
  // it itself.
  bool session_era = era.rfind("2025-", 0) == 0;
  return {{"resources", {{"listChanged", false}, {"subscribe", session_era}}},
          {"prompts", {{"listChanged", false}}},
          {"completions", json::object()},
          {"logging", json::object()}};
}

bool FixtureMethods::serves(std::string_view method, std::string_view era) const {
  static constexpr std::string_view both[] = {
      "resources/list", "resources/read", "resources/templates/list",
      "prompts/list",   "prompts/get",    "completion/complete"};
  for (auto m : both)
    if (method == m) return true;
  bool session_era = era.rfind("2025-", 0) == 0;
  return session_era && (method == "resources/subscribe" || method == "resources/unsubscribe");
}

bool FixtureMethods::cacheable(std::string_view method) const {
  return method == "resources/list" || method == "resources/templates/list" ||
         method == "prompts/list" || method == "resources/read";
}

json FixtureMethods::subscribe(const json& params, bool on) {
  const json* uri = string_param(params, "uri");
  if (!uri) return error(-32602, "Invalid params: needs params.uri (a string)");
  std::lock_guard lock(mutex_);
  if (on)
    subscriptions_.insert(uri->get<std::string>());
  else
    subscriptions_.erase(uri->get<std::string>());
  return result(json::object());
}

boost::asio::awaitable<json> FixtureMethods::answer(std::string method, json params,
                                                    std::string era,
                                                    std::shared_ptr<server::CallEvents>) {
  bool modern = era.rfind("2025-", 0) != 0;
  if (method == "resources/list") co_return result({{"resources", resource_list(!modern)}});
  if (method == "resources/templates/list")
    co_return result(
        {{"resourceTemplates",
          json::array({{{"uriTemplate", kTemplate},
                        {"name", "template"},
                        {"title", "Resource Template"},
                        {"description", "A resource template with parameter substitution"},
                        {"mimeType", "application/json"}}})}});
  if (method == "resources/read") co_return read_resource(params, modern);
  if (method == "prompts/list") co_return result({{"prompts", prompt_list(modern)}});
  if (method == "prompts/get") co_return get_prompt(params, modern);
  if (method == "completion/complete") co_return complete(params);
  if (method == "resources/subscribe") co_return subscribe(params, true);
  if (method == "resources/unsubscribe") co_return subscribe(params, false);
  co_return error(-32601, "Method not found: " + method);
}

}  // namespace sandgate::conformance
