#include "session_transport.hpp"

#include <boost/asio/this_coro.hpp>

#include "common/logging.hpp"
#include "jsonrpc_replies.hpp"
#include "progress_token.hpp"
#include "protocol_version.hpp"
#include "server/http/responses.hpp"
#include "session/session_id.hpp"
#include "streamed_answer.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {
constexpr const char* kVersionHeader = "MCP-Protocol-Version";

// Owns its arguments (they live in the coroutine frame): the call may outlive its stream.
// `done` runs when the answer is made, whatever it is.
asio::awaitable<json> answer_owning(McpMethods& methods, std::shared_ptr<session::Session> session,
                                    std::shared_ptr<const auth::Tenant> tenant,
                                    jsonrpc::Message message, std::shared_ptr<CallEvents> events,
                                    std::shared_ptr<CancelSignal> cancel,
                                    std::function<void()> done) {
  struct Done {
    std::function<void()> run;
    ~Done() { run(); }
  } on_exit{std::move(done)};
  co_return co_await methods.answer(std::move(session), std::move(tenant), message,
                                    std::move(events), std::move(cancel));
}

// Why a session is gone, when the registry still remembers (only to its own tenant).
std::string ended_hint(const session::Registry& registry, const std::string& id,
                       const std::string& tenant) {
  if (id.empty()) return ": it ended or expired; initialize a new one";
  if (auto why = registry.why_ended(id, tenant, session::SessionKind::session))
    return ": it ended (" + *why + "); initialize a new one";
  return ": it ended or expired; initialize a new one";
}

Reply session_not_found(const Request& req, const std::string& hint) {
  return refuse(req, http::status::not_found, jsonrpc::server_error, "Session not found" + hint);
}
}  // namespace

std::optional<Reply> SessionTransport::check_version(const Request& req) const {
  if (auto v = req[kVersionHeader]; !v.empty() && !is_session_version(v))
    return refuse(req, http::status::bad_request, jsonrpc::server_error,
                  "Bad Request: unsupported MCP-Protocol-Version " + std::string(v));
  return std::nullopt;
}

Reply SessionTransport::initialize(const Request& req,
                                   const std::shared_ptr<const auth::Tenant>& tenant,
                                   const jsonrpc::Message& message) {
  json answer = methods_.initialize(message);
  if (answer.contains("error")) return json_reply(req, answer);
  auto created = registry_.create(tenant);
  if (auto* refusal = std::get_if<session::CreateRefusal>(&created)) {
    metrics_.count_session_refused();
    bool per_tenant = *refusal == session::CreateRefusal::too_many_for_tenant;
    const bool all_busy = registry_.at_session_cap() == session::AtSessionCap::evict;
    std::string why =
        per_tenant ? (all_busy ? "this tenant has its maximum number of sessions open and every "
                                 "one has a call running or waiting; try again when one finishes"
                               : "this tenant has its maximum number of sessions open; end one "
                                 "(DELETE) or wait for idle ones to expire")
                   : "the gateway has its maximum number of sessions open; try again later";
    Reply r = refuse(
        req, per_tenant ? http::status::too_many_requests : http::status::service_unavailable,
        jsonrpc::server_error, "Too many sessions: " + why, nullptr, message.id);
    r.response.set(http::field::retry_after, "30");
    return r;
  }
  auto session = std::get<std::shared_ptr<session::Session>>(created);
  metrics_.count_session_created();
  log_event(
      LogLevel::info, "session_created",
      {{"session", std::string(session::log_prefix(session->id()))}, {"tenant", tenant->name}});
  Reply r = json_reply(req, answer);
  r.response.set(kSessionHeader, session->id());
  return r;
}

// notifications/cancelled fires the named request's cancel signal; other notifications are
// taken and dropped.
void SessionTransport::take_notification(const std::string& session_id,
                                         const jsonrpc::Message& message) {
  const json& p = message.params;
  if (message.method != "notifications/cancelled" || !p.is_object() || !p.contains("requestId"))
    return;
  std::shared_ptr<CancelSignal> signal;
  {
    std::lock_guard lock(mutex_);
    auto it = cancels_.find(session_id + "/" + p["requestId"].dump());
    if (it != cancels_.end()) signal = it->second;
  }
  if (signal) signal->cancel();
}

// What a request may send its client while it runs: progress (when it carries a
// progressToken), log messages at the session's level, and requests on its stream.
std::shared_ptr<RequestEvents> SessionTransport::events_for(const std::string& session_id,
                                                            const jsonrpc::Message& message,
                                                            std::shared_ptr<Outbox> outbox) {
  json token = progress_token_of(jsonrpc::meta_of(message));
  RequestEvents::Ask ask = [this, id = session_id](Outbox& box, std::string method, json params) {
    return client_requests_.ask(box, id, std::move(method), std::move(params),
                                std::chrono::seconds(120));
  };
  return std::make_shared<RequestEvents>(std::move(outbox), std::move(token), log_level(session_id),
                                         std::move(ask));
}

// The request's cancel signal, found by notifications/cancelled under `key`. A 2025 call runs
// on when its client goes; a tasks/result that only waits for a task's end does not: it would
// hold its connection until the task ends (up to its ttl).
std::shared_ptr<CancelSignal> SessionTransport::register_cancel(
    const std::string& key, const std::string& method,
    const std::shared_ptr<CancelSignal>& client) {
  auto cancel = std::make_shared<CancelSignal>();
  if (method == "tasks/result" && client)
    client->on_cancel([weak = std::weak_ptr(cancel)] {
      if (auto c = weak.lock()) c->cancel();
    });
  std::lock_guard lock(mutex_);
  cancels_[key] = cancel;
  return cancel;
}

asio::awaitable<Reply> SessionTransport::post(const Request& req, const SessionHeader& header,
                                              std::shared_ptr<const auth::Tenant> tenant,
                                              jsonrpc::Message message,
                                              std::shared_ptr<CancelSignal> client) {
  if (!header.present)
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: Mcp-Session-Id header is required (send initialize first)");
  if (auto refused = check_version(req)) co_return std::move(*refused);
  auto session = header.id.empty() ? nullptr : registry_.find(header.id, tenant->name);
  if (!session) co_return session_not_found(req, ended_hint(registry_, header.id, tenant->name));
  session->touch();
  if (message.kind == jsonrpc::Kind::notification) {
    take_notification(session->id(), message);
    co_return accepted(req);
  }
  if (message.kind == jsonrpc::Kind::response) {
    // The answer to a request we sent on one of this session's streams.
    client_requests_.deliver(session->id(), message.id, message.params);
    co_return accepted(req);
  }
  if (message.kind == jsonrpc::Kind::request) {
    if (auto problem = progress_token_problem(jsonrpc::meta_of(message)); !problem.empty())
      co_return json_reply(req, jsonrpc::error(message.id, jsonrpc::invalid_params, problem));
  }
  if (message.kind == jsonrpc::Kind::request && message.method == "logging/setLevel" &&
      message.params.is_object() && message.params.contains("level") &&
      message.params["level"].is_string()) {
    if (int level = log_level_index(message.params["level"].get<std::string>()); level >= 0)
      remember_log_level(session->id(), level);
  }

  // The answer may come with notifications (progress when the request carries a
  // progressToken); the call owns what it needs, and a client that goes away does not cancel a
  // 2025-era call (it ends with notifications/cancelled or DELETE).
  auto outbox = std::make_shared<Outbox>(co_await asio::this_coro::executor);
  auto events = events_for(session->id(), message, outbox);
  // A request id the session reuses while its earlier request still runs takes over the key:
  // notifications/cancelled then names the newer one.
  std::string key = session->id() + "/" + message.id.dump();
  auto cancel = register_cancel(key, message.method, client);
  Answer answer = [this, session, tenant, message = std::move(message), events, cancel, key] {
    return answer_owning(methods_, session, tenant, message, events, cancel,
                         [this, key, cancel] { forget_cancel(key, cancel); });
  };
  co_return co_await respond(req, std::move(answer), outbox, std::move(client), {.prime = true});
}

void SessionTransport::forget_cancel(const std::string& key,
                                     const std::shared_ptr<CancelSignal>& mine) {
  std::lock_guard lock(mutex_);
  if (auto it = cancels_.find(key); it != cancels_.end() && it->second == mine) cancels_.erase(it);
}

std::optional<int> SessionTransport::log_level(const std::string& session_id) {
  std::lock_guard lock(mutex_);
  auto it = log_levels_.find(session_id);
  if (it == log_levels_.end()) return std::nullopt;
  return it->second;
}

void SessionTransport::remember_log_level(const std::string& session_id, int level) {
  std::lock_guard lock(mutex_);
  // Levels of sessions that have ended go when another is set: the map stays as small as the
  // number of live sessions that ever set one.
  for (auto it = log_levels_.begin(); it != log_levels_.end();) {
    if (it->first != session_id && !registry_.exists(it->first))
      it = log_levels_.erase(it);
    else
      ++it;
  }
  log_levels_[session_id] = level;
}

Reply SessionTransport::get(const Request& req, const SessionHeader& header,
                            const auth::Tenant& tenant) {
  if (auto refused = check_version(req)) return std::move(*refused);
  // No server-initiated messages exist for this server, so there is no standalone stream to
  // offer; the spec allows 405 here, and clients fall back to POST responses.
  if (header.id.empty() || !registry_.find(header.id, tenant.name))
    return session_not_found(req, "");
  Reply r = refuse(req, http::status::method_not_allowed, jsonrpc::server_error,
                   "Method not allowed: this server sends no messages outside responses");
  r.response.set(http::field::allow, "POST, DELETE");
  return r;
}

asio::awaitable<Reply> SessionTransport::remove(const Request& req, const SessionHeader& header,
                                                const auth::Tenant& tenant) {
  if (auto refused = check_version(req)) co_return std::move(*refused);
  // The session and its sandbox end now.
  if (header.id.empty() || !registry_.remove(header.id, tenant.name))
    co_return session_not_found(req, "");
  co_await registry_.removal_saved();
  log_event(LogLevel::info, "session_deleted",
            {{"session", std::string(session::log_prefix(header.id))}, {"tenant", tenant.name}});
  Response res{http::status::ok, req.version()};
  res.prepare_payload();
  co_return Reply{std::move(res), nullptr};
}

}  // namespace sandgate::server
