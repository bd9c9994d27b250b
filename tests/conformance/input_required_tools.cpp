#include "input_required_tools.hpp"

#include <atomic>
#include <chrono>

#include "fixture_tool.hpp"
#include "input_required.hpp"

namespace sandgate::conformance {
using namespace mrtr;
using server::ProtocolError;

namespace {

// A state outlives its round by at most this long: a client that comes back later starts over.
constexpr std::chrono::minutes kStateLifetime{10};

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The requestState of one tool: issued with the tool's name, a time and a nonce, and accepted
// back only by that tool, unaltered and in time.
class ToolState {
 public:
  ToolState(std::shared_ptr<const RequestStateSigner> signer, std::string tool)
      : signer_(std::move(signer)), tool_(std::move(tool)) {}

  std::string issue(json fields = json::object()) const {
    static std::atomic<std::uint64_t> nonce{1};
    fields["tool"] = tool_;
    fields["iat"] = now_seconds();
    fields["nonce"] = nonce++;
    return signer_->sign(fields);
  }

  // The payload of the call's requestState, or nullopt when it carries none. A state that is
  // not a string, fails its HMAC, names another tool or has expired is a -32602 error.
  std::optional<json> read(const json& params) const {
    if (!params.is_object() || !params.contains("requestState")) return std::nullopt;
    const json& state = params["requestState"];
    auto refuse = [](const std::string& why) {
      return ProtocolError(-32602, "Invalid params: requestState " + why);
    };
    if (!state.is_string()) throw refuse("must be the string an input_required result gave");
    auto payload = signer_->verify(state.get<std::string>());
    if (!payload) throw refuse("failed its integrity check (it was altered or not issued here)");
    if (payload->value("tool", std::string()) != tool_) throw refuse("was issued for another tool");
    if (now_seconds() - payload->value("iat", std::int64_t{0}) >
        std::chrono::seconds(kStateLifetime).count())
      throw refuse("has expired; call again without it to start over");
    return payload;
  }

 private:
  std::shared_ptr<const RequestStateSigner> signer_;
  std::string tool_;
};

using Handler = json (*)(const ToolCall&, const ToolState&);

class InputRequiredTool final : public server::Tool {
 public:
  InputRequiredTool(json definition, Handler handler,
                    std::shared_ptr<const RequestStateSigner> signer)
      : name_(definition.at("name").get<std::string>()),
        definition_(std::move(definition)),
        handler_(handler),
        state_(std::move(signer), name_) {}

  const std::string& name() const override { return name_; }
  json definition() const override { return definition_; }
  boost::asio::awaitable<json> call(ToolCall call) override {
    // 2025 sessions ask the client on the request's stream instead (test_sampling, …).
    if (call.session)
      co_return text_result(name_ +
                                " needs protocol revision 2026-07-28 (input_required "
                                "results); a 2025 session has test_sampling and "
                                "test_elicitation instead.",
                            true);
    co_return handler_(call, state_);
  }

 private:
  std::string name_;
  json definition_;
  Handler handler_;
  ToolState state_;
};

json elicitation(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "elicitation");
  state.read(call.params);
  if (auto name = accepted_string(response_for(call.params, "user_name"), "name"))
    return text_result("Hello, " + *name + "!");
  return input_required({{"user_name", elicit("What is your name?", "name", "string")}});
}

json sampling(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "sampling");
  state.read(call.params);
  if (auto text = sampled_text(response_for(call.params, "capital_question")))
    return text_result("Sampling result: " + *text);
  return input_required({{"capital_question", sample("What is the capital of France?", 100)}});
}

json list_roots_tool(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "roots");
  state.read(call.params);
  if (auto count = root_count(response_for(call.params, "client_roots")))
    return text_result("Found " + std::to_string(*count) + " root(s)");
  return input_required({{"client_roots", list_roots()}});
}

json confirm_request() {
  return elicit("Please confirm", "ok", "boolean");
}

bool accepted(const json* response) {
  return response && response->value("action", std::string()) == "accept";
}

json request_state(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "elicitation");
  auto verified = state.read(call.params);
  const json* confirm = response_for(call.params, "confirm");
  if (verified && accepted(confirm))
    return text_result("state-ok: requestState validated, confirmation " +
                       confirm->value("content", json::object()).dump());
  return input_required({{"confirm", confirm_request()}}, state.issue());
}

json multiple_inputs(const ToolCall& call, const ToolState& state) {
  for (const char* capability : {"elicitation", "sampling", "roots"})
    require_capability(call.params, capability);
  auto verified = state.read(call.params);
  auto name = accepted_string(response_for(call.params, "user_name"), "name");
  auto greeting = sampled_text(response_for(call.params, "greeting"));
  auto roots = root_count(response_for(call.params, "client_roots"));
  if (verified && name && greeting && roots)
    return text_result("Name: " + *name + "; Greeting: " + *greeting +
                       "; Roots: " + std::to_string(*roots));
  return input_required({{"user_name", elicit("What is your name?", "name", "string")},
                         {"greeting", sample("Generate a greeting", 50)},
                         {"client_roots", list_roots()}},
                        state.issue());
}

json multi_round(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "elicitation");
  auto verified = state.read(call.params);
  int round = verified ? verified->value("round", 0) : 0;
  auto step1 = [&] {
    return input_required({{"step1", elicit("Step 1: What is your name?", "name", "string")}},
                          state.issue({{"round", 1}}));
  };
  auto step2 = [&](const std::string& name) {
    return input_required(
        {{"step2", elicit("Step 2: What is your favorite color?", "color", "string")}},
        state.issue({{"round", 2}, {"name", name}}));
  };
  if (round == 1) {
    if (auto name = accepted_string(response_for(call.params, "step1"), "name"))
      return step2(*name);
    return step1();
  }
  if (round == 2) {
    std::string name = verified->value("name", std::string("friend"));
    if (auto color = accepted_string(response_for(call.params, "step2"), "color"))
      return text_result("Multi-round complete for " + name + " who likes " + *color);
    return step2(name);
  }
  return step1();
}

json tampered_state(const ToolCall& call, const ToolState& state) {
  require_capability(call.params, "elicitation");
  auto verified = state.read(call.params);  // a tampered state throws -32602 here
  if (verified && accepted(response_for(call.params, "confirm")))
    return text_result("integrity-ok: state verified");
  return input_required({{"confirm", confirm_request()}}, state.issue());
}

// Asks only for what the request's clientCapabilities declare.
json capabilities(const ToolCall& call, const ToolState& state) {
  auto verified = state.read(call.params);
  const json& params = call.params;
  if (verified && params.contains("inputResponses") && params["inputResponses"].is_object() &&
      !params["inputResponses"].empty()) {
    std::string keys;
    for (const auto& [key, value] : params["inputResponses"].items())
      keys += (keys.empty() ? "" : ",") + key;
    return text_result("capabilities-ok: received " + keys);
  }
  json declared = declared_capabilities(params);
  json requests = json::object();
  if (declared.contains("elicitation"))
    requests["elicit_input"] = elicit("Elicitation input", "value", "string");
  if (declared.contains("sampling")) requests["sample_input"] = sample("Sample request", 50);
  if (declared.contains("roots")) requests["roots_input"] = list_roots();
  if (requests.empty())
    return text_result("No input needed: the client declared none of elicitation, sampling, roots");
  return input_required(std::move(requests), state.issue());
}

}  // namespace

void add_input_required_tools(server::ToolRegistry& tools,
                              std::shared_ptr<const RequestStateSigner> signer) {
  auto add = [&](const char* name, const char* description, Handler handler) {
    tools.add(
        std::make_unique<InputRequiredTool>(tool_definition(name, description), handler, signer));
  };
  add("test_input_required_result_elicitation",
      "MRTR: asks the client's name (elicitation) in an input_required result", elicitation);
  add("test_input_required_result_sampling",
      "MRTR: asks the client for a sampling completion in an input_required result", sampling);
  add("test_input_required_result_list_roots",
      "MRTR: asks the client for its roots in an input_required result", list_roots_tool);
  add("test_input_required_result_request_state",
      "MRTR: an input_required result with a requestState the retry must echo", request_state);
  add("test_input_required_result_multiple_inputs",
      "MRTR: elicitation, sampling and roots/list in one input_required result", multiple_inputs);
  add("test_input_required_result_multi_round",
      "MRTR: two input_required rounds, each with a new requestState", multi_round);
  add("test_input_required_result_tampered_state",
      "MRTR: an HMAC-protected requestState; an altered one is a -32602 error", tampered_state);
  add("test_input_required_result_capabilities",
      "MRTR: asks only for inputs the request's clientCapabilities allow", capabilities);
}

}  // namespace sandgate::conformance
