#pragma once
// A tool the MCP methods can list and call. Tools know nothing of HTTP or of which protocol
// era carried the call: they get the caller (tenant), the session when there is one, and the
// arguments, and answer with a CallToolResult.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "auth/token_store.hpp"
#include "common/cancel_signal.hpp"
#include "session/session.hpp"

namespace sandgate::server {

// What a tool may send on its request's response stream while it runs. Whether anything is
// sent is the request's choice: progress only for a request with a progressToken, log
// messages only at or above the level the client asked for.
class CallEvents {
 public:
  virtual ~CallEvents() = default;
  virtual bool wants_progress() const = 0;
  virtual void progress(double progress, std::optional<double> total, std::string message) = 0;
  // `level` is a syslog name (debug, info, notice, warning, error, critical, alert, emergency).
  virtual void log(std::string_view level, nlohmann::json data) = 0;
  // A request to the client on this request's stream (2025 sessions: sampling/createMessage,
  // elicitation/create), answered by the client's POSTed response: {"result": …} or
  // {"error": {"code", "message"}}. Where the era has no such requests (2026-07-28 asks
  // through input_required results instead), an error at once.
  virtual boost::asio::awaitable<nlohmann::json> ask_client(std::string method,
                                                            nlohmann::json params) = 0;
  // Several questions at once, key -> {method, params}: key -> what ask_client would answer.
  // Where the client can see them together (a task's inputRequests) they are asked together;
  // elsewhere one after the other.
  virtual boost::asio::awaitable<nlohmann::json> ask_client_all(nlohmann::json requests);
  // Any other notification on this request's stream (notifications/tasks/status); dropped
  // where there is no stream.
  virtual void notify(std::string /*method*/, nlohmann::json /*params*/) {}
};

struct ToolCall {
  std::shared_ptr<const auth::Tenant> tenant;
  // The 2025-era session the call came in, or null for a stateless (2026-07-28) request.
  std::shared_ptr<session::Session> session;
  nlohmann::json arguments = nlohmann::json::object();
  // Names the call for cancellation; unique within whatever session runs it.
  std::string call_key;
  // Fires when the call must be cancelled: a 2026-07-28 client closed its stream, a 2025 one
  // sent notifications/cancelled. Null when nothing can cancel it.
  std::shared_ptr<CancelSignal> cancel;
  // Never null.
  std::shared_ptr<CallEvents> events;
  // tools/call's whole params (`_meta`; 2026-07-28's inputResponses and requestState).
  nlohmann::json params = nlohmann::json::object();
  // The call runs as a task: nobody waits on its request, and it may run longer.
  bool as_task = false;
};

// Thrown by a tool whose call is refused at the protocol level rather than failing as a tool
// (2026-07-28's -32021 when the client lacks a capability the call needs): the transport
// answers with this JSON-RPC error. Ordinary failures are results with isError instead.
struct ProtocolError : std::runtime_error {
  ProtocolError(int error_code, const std::string& message, nlohmann::json error_data = nullptr)
      : std::runtime_error(message), code(error_code), data(std::move(error_data)) {}
  int code;
  nlohmann::json data;
};

enum class TaskSupport { forbidden, optional, required };

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const std::string& name() const = 0;
  // Whether a call may run as a task (tools/list's execution.taskSupport).
  virtual TaskSupport task_support() const { return TaskSupport::forbidden; }
  // Where the server decides (2026-07-28's tasks extension): a call that ends within this is
  // answered as a plain call, a longer one becomes a task.
  virtual std::chrono::milliseconds task_answer_within() const {
    return std::chrono::milliseconds(0);
  }
  // The tool's entry in tools/list.
  virtual nlohmann::json definition() const = 0;
  // The entry as `tenant` sees it (what it may choose from: its environments).
  virtual nlohmann::json definition_for(const auth::Tenant& /*tenant*/) const {
    return definition();
  }
  // The CallToolResult, or null when the call was cancelled (a cancelled request gets no
  // response). Failures the model can act on are results with isError, never exceptions.
  virtual boost::asio::awaitable<nlohmann::json> call(ToolCall call) = 0;
  // Where a call would become a task (2026-07-28's tasks extension): an answer to give instead,
  // before any task is made — an input_required result gathering what the task will need
  // (MRTR rounds before the task). Null: make the task.
  virtual nlohmann::json answer_before_task(const ToolCall& /*call*/) { return nullptr; }
};

}  // namespace sandgate::server
