#include "upstream/mcp_client.hpp"

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <mutex>

#include "common/bounded_json.hpp"
#include "common/logging.hpp"
#include "common/utf8.hpp"
#include "upstream/flight.hpp"
#include "upstream/http_exchange.hpp"
#include "upstream/negotiation.hpp"

namespace sandgate::upstream {
namespace asio = boost::asio;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Kind = UpstreamError::Kind;
using Headers = std::vector<std::pair<std::string, std::string>>;

const char* upstream_error_name(Kind kind) {
  switch (kind) {
    case Kind::unreachable:
      return "unreachable";
    case Kind::timeout:
      return "timeout";
    case Kind::cancelled:
      return "cancelled";
    case Kind::too_large:
      return "too_large";
    case Kind::protocol:
      return "protocol";
    case Kind::refused:
      return "refused";
  }
  return "unknown";
}

namespace {

constexpr int kMaxToolPages = 32;
constexpr std::size_t kMaxTools = 4096;
// Background messages (a refusal, a cancellation, the session's end) get this long.
constexpr auto kBackgroundBudget = std::chrono::seconds(10);

enum class Era { none, modern, legacy };

struct Session {
  Era era = Era::none;
  std::string version;
  std::string session_id;
};

struct Answer {
  int status = 0;
  json response;         // the JSON-RPC response to our request, or an error body; null when none
  bool matched = false;  // `response` is the response to our request (its id)
  std::string session_id;
  std::uint64_t bytes = 0;
};

// Text from the upstream that goes into a message for the model: valid UTF-8, one line, short.
std::string upstream_text(const std::string& text) {
  std::string out = sanitize_utf8(text.substr(0, 300));
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return out;
}

// A method name the upstream chose, safe to put in a message.
std::string method_name(const json& method) {
  if (!method.is_string()) return "this request";
  const auto& m = method.get_ref<const std::string&>();
  if (m.empty() || m.size() > 64) return "this request";
  for (char c : m)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '_' && c != '.' &&
        c != '-')
      return "this request";
  return m;
}

std::string error_message(const json& response) {
  if (response.is_object() && response.contains("error") && response["error"].is_object() &&
      response["error"].contains("message") && response["error"]["message"].is_string())
    return upstream_text(response["error"]["message"].get<std::string>());
  return "no reason given";
}

class Client final : public McpClient, public std::enable_shared_from_this<Client> {
 public:
  Client(asio::any_io_executor executor, std::shared_ptr<const UpstreamDefinition> definition)
      : executor_(executor),
        definition_(definition),
        pool_(std::make_shared<ConnectionPool>(executor, definition)) {}

  asio::awaitable<ToolList> list_tools(Clock::time_point deadline) override {
    tools_changed_ = false;
    ToolList out;
    out.ttl = definition_->limits.tools_ttl;
    std::string cursor;
    std::size_t listed = 0;
    for (int page = 0; page < kMaxToolPages; ++page) {
      json params = json::object();
      if (!cursor.empty()) params["cursor"] = cursor;
      Session used;
      json result =
          co_await request("tools/list", std::move(params), deadline, Headers(), nullptr, &used);
      if (!result.contains("tools") || !result["tools"].is_array())
        throw UpstreamError(Kind::protocol, who() + " answered tools/list without a tools array");
      if (page == 0 && used.era == Era::modern && result.contains("ttlMs") &&
          result["ttlMs"].is_number_unsigned())
        out.ttl = std::chrono::milliseconds(
            std::min<std::uint64_t>(result["ttlMs"].get<std::uint64_t>(), 86'400'000));
      for (auto& tool : result["tools"]) {
        if (++listed > kMaxTools)
          throw UpstreamError(Kind::too_large, who() + " lists more than 4096 tools");
        if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string())
          throw UpstreamError(Kind::protocol, who() + " listed a tool without a name");
        UpstreamTool t;
        t.name = tool["name"].get<std::string>();
        if (!definition_->allows(t.name)) continue;
        if (tool.contains("description") && tool["description"].is_string())
          t.description = tool["description"].get<std::string>();
        if (tool.contains("inputSchema") && tool["inputSchema"].is_object())
          t.input_schema = std::move(tool["inputSchema"]);
        if (tool.contains("outputSchema") && tool["outputSchema"].is_object())
          t.output_schema = std::move(tool["outputSchema"]);
        if (used.era == Era::modern && !valid_header_annotations(t.input_schema)) {
          log_event(LogLevel::warn, "upstream_tool_left_out",
                    {{"upstream", definition_->name},
                     {"tool", upstream_text(t.name)},
                     {"reason", "invalid x-mcp-header annotation"}});
          continue;
        }
        out.tools.push_back(std::move(t));
      }
      if (!result.contains("nextCursor") || !result["nextCursor"].is_string() ||
          result["nextCursor"].get<std::string>().empty())
        co_return out;
      cursor = result["nextCursor"].get<std::string>();
    }
    throw UpstreamError(Kind::too_large, who() + " lists its tools in more than 32 pages");
  }

  asio::awaitable<CallOutcome> call_tool(std::string tool, json arguments,
                                         Clock::time_point deadline, json input_schema) override {
    if (arguments.is_null()) arguments = json::object();
    Headers extra{{"Mcp-Name", mirrored_header_value(tool)}};
    for (auto& header : param_headers(input_schema, arguments)) extra.push_back(std::move(header));
    json params = {{"name", tool}, {"arguments", std::move(arguments)}};
    CallOutcome out;
    Session used;
    out.result = co_await request("tools/call", std::move(params), deadline, std::move(extra),
                                  &out.bytes, &used);
    if (used.era == Era::modern && out.result.contains("resultType")) {
      const auto& type = out.result["resultType"];
      if (type == "input_required") {
        std::string asked = "input";
        if (out.result.contains("inputRequests") && out.result["inputRequests"].is_object() &&
            !out.result["inputRequests"].empty())
          asked = method_name(out.result["inputRequests"].begin().value().value("method", json()));
        throw UpstreamError(Kind::refused, who() + "'s tool asked its client for " + asked +
                                               ", which sandgate's code mode does not support");
      }
      if (type != "complete")
        throw UpstreamError(Kind::protocol, who() +
                                                " answered with a result type sandgate did "
                                                "not ask for");
    }
    co_return out;
  }

  bool tools_changed() const override { return tools_changed_; }

  std::string protocol_version() const override {
    std::lock_guard lock(mutex_);
    return session_.version;
  }

  void close() override {
    if (closed_.exchange(true)) return;
    Session session;
    {
      std::lock_guard lock(mutex_);
      session = session_;
    }
    pool_->close_idle();
    if (session.era != Era::legacy || session.session_id.empty()) return;
    // Most clients never end their session; we do, in the background, on a connection of its
    // own (the pool keeps nothing for a closed client).
    auto pool = std::make_shared<ConnectionPool>(executor_, definition_);
    Headers headers{{"Mcp-Session-Id", session.session_id},
                    {"MCP-Protocol-Version", session.version}};
    asio::co_spawn(
        executor_,
        [pool, headers]() -> asio::awaitable<void> {
          HttpPost post{{}, true, headers};
          EventHandler ignore = [](std::string&&) { return true; };
          co_await pool->post(std::move(post), Clock::now() + kBackgroundBudget, ignore);
        },
        asio::detached);
  }

 private:
  std::string who() const { return "upstream '" + definition_->name + "'"; }

  static bool is_cancelled(const asio::cancellation_state& state) {
    return state.cancelled() != asio::cancellation_type::none;
  }

  // One request: negotiated first (once per client), then sent; its result, or an UpstreamError.
  asio::awaitable<json> request(std::string method, json params, Clock::time_point deadline,
                                Headers extra, std::uint64_t* bytes, Session* used) {
    auto state = co_await asio::this_coro::cancellation_state;
    const auto start = Clock::now();
    try {
      for (int attempt = 0;; ++attempt) {
        if (closed_)
          throw UpstreamError(Kind::unreachable, "the client of " + who() + " is closed");
        Session session = co_await negotiated(deadline);
        *used = session;
        const std::int64_t id = next_id_++;
        json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
        Headers headers{{"MCP-Protocol-Version", session.version}};
        if (session.era == Era::modern) {
          message["params"]["_meta"] = modern_meta();
          headers.emplace_back("Mcp-Method", method);
          for (const auto& header : extra) headers.push_back(header);
        } else if (!session.session_id.empty()) {
          headers.emplace_back("Mcp-Session-Id", session.session_id);
        }
        Answer answer = co_await exchange(message, std::move(headers), deadline, id, session);
        if (bytes != nullptr) *bytes += answer.bytes;
        // A 2025-era session the upstream forgot (it restarted, or ended it): a new one, once.
        if (session.era == Era::legacy && answer.status == 404 && !session.session_id.empty() &&
            attempt == 0) {
          forget_session(session.session_id);
          continue;
        }
        // A JSON-RPC error answering our request is the upstream's refusal, whatever the HTTP
        // status it came with (2026-07-28 sends some with 4xx) — but for the credentials.
        if (answer.matched && answer.response.contains("error") && answer.status != 401 &&
            answer.status != 403)
          throw UpstreamError(Kind::refused,
                              who() + " refused " + method + ": " + error_message(answer.response));
        check_status(answer, method);
        if (!answer.response.is_object())
          throw UpstreamError(Kind::protocol, who() + " sent no answer to " + method);
        if (answer.response.contains("error"))
          throw UpstreamError(Kind::refused,
                              who() + " refused " + method + ": " + error_message(answer.response));
        if (!answer.response.contains("result") || !answer.response["result"].is_object())
          throw UpstreamError(Kind::protocol, who() + " answered " + method + " without a result");
        co_return std::move(answer.response["result"]);
      }
    } catch (const UpstreamError&) {
      throw;
    } catch (const std::exception&) {
      // An operation abandoned by the caller's cancellation, or the deadline's timer.
      if (is_cancelled(state))
        throw UpstreamError(Kind::cancelled, "the call to " + who() + " was cancelled");
      if (Clock::now() >= deadline)
        throw UpstreamError(Kind::timeout,
                            who() + " did not answer within " + describe_budget(deadline - start));
      throw UpstreamError(Kind::unreachable, who() + " is unreachable: network error");
    }
  }

  [[noreturn]] void check_status_failed(const Answer& answer, const std::string& method) const {
    const std::string status = "HTTP " + std::to_string(answer.status);
    if (answer.status == 401 || answer.status == 403)
      throw UpstreamError(Kind::unreachable,
                          who() + " refused the gateway's credentials (" + status + ")");
    std::string detail;
    if (answer.response.is_object() && answer.response.contains("error"))
      detail = ": " + error_message(answer.response);
    throw UpstreamError(Kind::unreachable,
                        who() + " answered " + method + " with " + status + detail);
  }

  void check_status(const Answer& answer, const std::string& method) const {
    if (answer.status < 200 || answer.status > 299) check_status_failed(answer, method);
  }

  // Sends one message and reads its answer: a JSON body, or an event stream up to the response
  // with our id (notifications on the way are read; requests from the upstream are refused).
  asio::awaitable<Answer> exchange(const json& message, Headers headers, Clock::time_point deadline,
                                   std::optional<std::int64_t> id, const Session& session) {
    auto state = co_await asio::this_coro::cancellation_state;
    Answer out;
    auto on_event = [this, &out, id, session](std::string&& data) -> bool {
      // A priming event (an id for resumption, no message) carries nothing.
      if (data.find_first_not_of(" \t\r\n") == std::string::npos) return false;
      auto parsed = parse_bounded_json(data);
      if (parsed.fault == JsonFault::too_deep)
        throw UpstreamError(Kind::too_large, who() + " sent JSON nested too deeply");
      if (parsed.fault != JsonFault::none)
        throw UpstreamError(Kind::protocol, who() + " sent an event that is not JSON");
      return take(std::move(parsed.value), id, out, session);
    };
    HttpAnswer answer;
    try {
      // A named request, not a temporary in the co_await (GCC 12 destroys some twice).
      HttpPost post{message.dump(), false, std::move(headers)};
      answer = co_await pool_->post(std::move(post), deadline, on_event);
    } catch (...) {
      // A request abandoned — cancelled, or past its deadline — is one the upstream should stop
      // working on: in 2025-11-25 a closed stream is not cancellation, notifications/cancelled is.
      if ((is_cancelled(state) || Clock::now() >= deadline) && id && session.era == Era::legacy)
        send_cancelled(*id, session);
      if (is_cancelled(state))
        throw UpstreamError(Kind::cancelled, "the call to " + who() + " was cancelled");
      throw;
    }
    out.status = answer.status;
    out.session_id = answer.session_id;
    out.bytes = answer.bytes;
    if (!answer.event_stream && !answer.body.empty()) {
      auto parsed = parse_bounded_json(answer.body);
      if (parsed.fault == JsonFault::too_deep)
        throw UpstreamError(Kind::too_large, who() + " sent JSON nested too deeply");
      if (parsed.fault == JsonFault::none) {
        if (!take(parsed.value, id, out, session) && parsed.value.is_object() &&
            parsed.value.contains("error"))
          out.response = std::move(parsed.value);  // an error without our id (a 4xx body)
      } else if (answer.status >= 200 && answer.status <= 299 && id) {
        throw UpstreamError(Kind::protocol, who() + " answered with a body that is not JSON");
      }
    }
    co_return out;
  }

  // One message from the upstream; true when it is the response to `id`.
  bool take(json message, std::optional<std::int64_t> id, Answer& out, const Session& session) {
    if (!message.is_object()) return false;
    if (message.contains("method")) {
      if (message.contains("id")) {
        // A request of its client (sampling, elicitation, roots, …): sandgate declares none of
        // them. 2026-07-28 has no such requests on a stream; a 2025-era session gets an error.
        if (session.era == Era::legacy)
          refuse(message["id"], method_name(message["method"]), session);
      } else if (message["method"] == "notifications/tools/list_changed") {
        tools_changed_ = true;
      }
      return false;
    }
    if (id && message.contains("id") && message["id"] == *id &&
        (message.contains("result") || message.contains("error"))) {
      out.response = std::move(message);
      out.matched = true;
      return true;
    }
    return false;
  }

  void send_in_background(json message, const Session& session) {
    Headers headers{{"MCP-Protocol-Version", session.version}};
    if (!session.session_id.empty()) headers.emplace_back("Mcp-Session-Id", session.session_id);
    auto pool = pool_;
    asio::co_spawn(
        executor_,
        [pool, body = message.dump(), headers]() -> asio::awaitable<void> {
          HttpPost post{body, false, headers};
          EventHandler ignore = [](std::string&&) { return true; };
          co_await pool->post(std::move(post), Clock::now() + kBackgroundBudget, ignore);
        },
        asio::detached);
  }

  void refuse(const json& request_id, const std::string& method, const Session& session) {
    log_event(LogLevel::info, "upstream_request_refused",
              {{"upstream", definition_->name}, {"method", method}});
    send_in_background(
        {{"jsonrpc", "2.0"},
         {"id", request_id},
         {"error",
          {{"code", -32601}, {"message", "sandgate's code mode does not support " + method}}}},
        session);
  }

  void send_cancelled(std::int64_t id, const Session& session) {
    send_in_background(
        {{"jsonrpc", "2.0"},
         {"method", "notifications/cancelled"},
         {"params", {{"requestId", id}, {"reason", "the caller cancelled the call"}}}},
        session);
  }

  void forget_session(const std::string& expired) {
    std::lock_guard lock(mutex_);
    if (session_.era == Era::legacy && session_.session_id == expired) {
      session_ = Session{};
      flight_.reset();
    }
  }

  // The negotiated session, negotiating first if none is (once: concurrent callers wait for the
  // one negotiation in flight, which no single caller's cancellation ends).
  asio::awaitable<Session> negotiated(Clock::time_point deadline) {
    auto state = co_await asio::this_coro::cancellation_state;
    const auto start = Clock::now();
    std::shared_ptr<Flight> flight;
    bool mine = false;
    {
      std::lock_guard lock(mutex_);
      if (session_.era != Era::none) co_return session_;
      if (!flight_) {
        flight_ = std::make_shared<Flight>(executor_);
        mine = true;
      }
      flight = flight_;
    }
    if (mine)
      asio::co_spawn(executor_, negotiate(shared_from_this(), flight, deadline), asio::detached);
    if (!co_await flight->wait(deadline)) {
      if (is_cancelled(state))
        throw UpstreamError(Kind::cancelled, "the call to " + who() + " was cancelled");
      throw UpstreamError(Kind::timeout,
                          who() + " did not answer within " + describe_budget(deadline - start));
    }
    if (auto error = flight->error()) throw *error;
    std::lock_guard lock(mutex_);
    if (session_.era == Era::none)
      throw UpstreamError(Kind::unreachable, who() + "'s session ended while it was negotiated");
    co_return session_;
  }

  // `self` keeps the client alive while its callers may all have gone.
  asio::awaitable<void> negotiate([[maybe_unused]] std::shared_ptr<Client> self,
                                  std::shared_ptr<Flight> flight, Clock::time_point deadline) {
    std::optional<UpstreamError> error;
    try {
      Session session = co_await discover_or_initialize(deadline);
      log_event(LogLevel::info, "upstream_negotiated",
                {{"upstream", definition_->name}, {"protocol_version", session.version}});
      std::lock_guard lock(mutex_);
      session_ = session;
    } catch (const UpstreamError& e) {
      error = e;
    } catch (const std::exception&) {
      error = UpstreamError(Kind::unreachable, who() + " is unreachable: network error");
    }
    if (error) {
      log_event(LogLevel::warn, "upstream_negotiation_failed",
                {{"upstream", definition_->name}, {"outcome", upstream_error_name(error->kind())}});
      std::lock_guard lock(mutex_);
      if (flight_ == flight) flight_.reset();
    }
    flight->finish(std::move(error));
  }

  asio::awaitable<Session> discover_or_initialize(Clock::time_point deadline) {
    // 2026-07-28 first, as the official clients do.
    Session modern{Era::modern, std::string(kModernVersion), {}};
    const std::int64_t discover_id = next_id_++;
    json discover = {{"jsonrpc", "2.0"},
                     {"id", discover_id},
                     {"method", "server/discover"},
                     {"params", {{"_meta", modern_meta()}}}};
    Headers discover_headers;
    discover_headers.emplace_back("MCP-Protocol-Version", kModernVersion);
    discover_headers.emplace_back("Mcp-Method", "server/discover");
    Answer answer =
        co_await exchange(discover, std::move(discover_headers), deadline, discover_id, modern);
    if (!falls_back_to_initialize(answer.status, answer.response)) {
      check_status(answer, "server/discover");
      if (!answer.response.is_object() || answer.response.contains("error"))
        throw UpstreamError(Kind::protocol, who() + " answered server/discover with an error: " +
                                                error_message(answer.response));
      const json& result = answer.response.value("result", json::object());
      const json& versions = result.value("supportedVersions", json::array());
      if (versions.is_array() &&
          std::find(versions.begin(), versions.end(), json(kModernVersion)) != versions.end())
        co_return modern;
      bool legacy_offered = false;
      if (versions.is_array())
        for (const auto& v : versions)
          if (v.is_string() && accepted_legacy_version(v.get<std::string>())) legacy_offered = true;
      if (!legacy_offered)
        throw UpstreamError(Kind::protocol,
                            who() +
                                " supports no protocol version sandgate speaks (2026-07-28, "
                                "2025-11-25, 2025-06-18, 2025-03-26)");
    }
    // The 2025 era: a session of initialize and notifications/initialized.
    Session legacy{Era::legacy, {}, {}};
    const std::int64_t init_id = next_id_++;
    json initialize = {{"jsonrpc", "2.0"},
                       {"id", init_id},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", kLegacyVersion},
                         {"capabilities", json::object()},
                         {"clientInfo", client_info()}}}};
    answer = co_await exchange(initialize, Headers(), deadline, init_id, legacy);
    check_status(answer, "initialize");
    if (!answer.response.is_object() || answer.response.contains("error") ||
        !answer.response.contains("result") || !answer.response["result"].is_object())
      throw UpstreamError(Kind::protocol,
                          who() + " refused initialize: " + error_message(answer.response));
    const json& version = answer.response["result"].value("protocolVersion", json());
    if (!version.is_string() || !accepted_legacy_version(version.get<std::string>()))
      throw UpstreamError(Kind::protocol,
                          who() +
                              " answered initialize with a protocol version sandgate does "
                              "not speak");
    legacy.version = version.get<std::string>();
    legacy.session_id = answer.session_id;
    Headers headers{{"MCP-Protocol-Version", legacy.version}};
    if (!legacy.session_id.empty()) headers.emplace_back("Mcp-Session-Id", legacy.session_id);
    const json initialized = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
    answer = co_await exchange(initialized, std::move(headers), deadline, std::nullopt, legacy);
    check_status(answer, "notifications/initialized");
    co_return legacy;
  }

  asio::any_io_executor executor_;
  std::shared_ptr<const UpstreamDefinition> definition_;
  std::shared_ptr<ConnectionPool> pool_;
  mutable std::mutex mutex_;
  Session session_;                 // guarded by mutex_
  std::shared_ptr<Flight> flight_;  // the negotiation in flight; guarded by mutex_
  std::atomic<std::int64_t> next_id_{1};
  std::atomic<bool> tools_changed_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace

std::shared_ptr<McpClient> McpClient::create(asio::any_io_executor executor,
                                             std::shared_ptr<const UpstreamDefinition> definition) {
  return std::make_shared<Client>(std::move(executor), std::move(definition));
}

}  // namespace sandgate::upstream
