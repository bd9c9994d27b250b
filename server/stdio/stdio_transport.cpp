#include "server/stdio/stdio_transport.hpp"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <cerrno>
#include <mutex>
#include <thread>

#include "common/bounded_json.hpp"
#include "common/logging.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

struct StdioTransport::State {
  asio::any_io_executor executor;
  Endpoint& endpoint;
  int in_fd, out_fd;
  std::size_t max_line;
  std::function<void()> on_closed;
  std::atomic<bool> stopped{false};
  std::mutex out_mutex;
  // Set by initialize's answer, read by every later request.
  std::mutex session_mutex;
  std::string session_id, protocol_version;

  // One message, whole, as one line (a blocking write: the client must read what it asked for).
  void write_line(std::string line) {
    line += '\n';
    std::lock_guard lock(out_mutex);
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(out_fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client is gone; input's end will follow
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
};

namespace {

// Where a 2026-07-28 message names its revision (params._meta).
constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";

// The answer's events as lines.
class LineSink final : public EventSink {
 public:
  explicit LineSink(StdioTransport::State& state) : state_(state) {}
  asio::awaitable<bool> send(const json& data) override {
    state_.write_line(data.dump());
    co_return true;
  }
  asio::awaitable<bool> send_serialized(std::string message) override {
    state_.write_line(std::move(message));
    co_return true;
  }
  asio::awaitable<bool> prime() override { co_return true; }
  asio::awaitable<bool> raw(std::string) override { co_return true; }

 private:
  StdioTransport::State& state_;
};

bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x21 || c > 0x7e) return false;
  return !s.empty();
}

// The POST an HTTP client would send with this message.
Request request_for(StdioTransport::State& state, const std::string& line, const json& message) {
  Request req{http::verb::post, "/mcp", 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, "application/json, text/event-stream");
  {
    std::lock_guard lock(state.session_mutex);
    if (!state.session_id.empty()) req.set("Mcp-Session-Id", state.session_id);
    if (!state.protocol_version.empty()) req.set("MCP-Protocol-Version", state.protocol_version);
  }
  // A 2026-07-28 message names its revision in params._meta; its headers mirror the body.
  if (message.is_object() && message.contains("params") && message["params"].is_object()) {
    const json& params = message["params"];
    auto meta = params.find("_meta");
    if (meta != params.end() && meta->is_object() && meta->contains(kVersionKey) &&
        (*meta)[kVersionKey].is_string()) {
      req.erase("Mcp-Session-Id");
      req.set("MCP-Protocol-Version", (*meta)[kVersionKey].get<std::string>());
      if (message.contains("method") && message["method"].is_string())
        req.set("Mcp-Method", message["method"].get<std::string>());
      if (params.contains("name") && params["name"].is_string() &&
          printable_ascii(params["name"].get<std::string>()))
        req.set("Mcp-Name", params["name"].get<std::string>());
    }
  }
  req.body() = line;
  req.prepare_payload();
  return req;
}

// Whether a parsed line is initialize: its method a string, and exactly that (a tools/call whose
// arguments merely contain the word is not).
bool is_initialize(const BoundedJson& parsed) {
  if (parsed.fault != JsonFault::none || !parsed.value.is_object()) return false;
  auto method = parsed.value.find("method");
  return method != parsed.value.end() && method->is_string() && *method == "initialize";
}

// Whether a parsed line is a request, which is always answered: a client over stdio waits for
// its id, and has no status line to read a refusal from.
bool is_request(const BoundedJson& parsed) {
  return parsed.fault == JsonFault::none && parsed.value.is_object() &&
         parsed.value.contains("id") && parsed.value.contains("method");
}

std::string error_line(const json& id, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32603}, {"message", message}}}}
      .dump();
}

// The endpoint's answer to one line, written as lines. `answered` is set once a line went out.
asio::awaitable<void> answer_line(std::shared_ptr<StdioTransport::State> state,
                                  const std::string& line, const BoundedJson& parsed,
                                  bool initialize, bool& answered) {
  const json& message = parsed.value;
  Request req = request_for(*state, line, parsed.fault == JsonFault::none ? message : json());
  Reply reply;
  if (auto refused = co_await state->endpoint.admit(req))
    reply.response = std::move(*refused);
  else
    reply = co_await state->endpoint.handle(req, std::make_shared<CancelSignal>());
  if (initialize) {
    auto id = reply.response["Mcp-Session-Id"];
    std::lock_guard lock(state->session_mutex);
    if (!id.empty()) state->session_id = std::string(id);
  }
  if (reply.stream) {
    answered = true;  // events may have gone out: a failure now must not add a second answer
    LineSink sink(*state);
    co_await reply.stream(sink);
    co_return;
  }
  std::string body = reply.response.body();
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  if (body.empty() || body.front() != '{') {
    // 202 for a notification or a response; anything else a request gets is told as an error.
    if (reply.response.result() != http::status::accepted && is_request(parsed)) {
      answered = true;
      state->write_line(error_line(message["id"], "Internal error: the gateway answered HTTP " +
                                                      std::to_string(reply.response.result_int())));
    }
    co_return;
  }
  if (initialize) {
    auto answer = parse_bounded_json(body);
    if (answer.fault == JsonFault::none && answer.value.is_object() &&
        answer.value.contains("result") && answer.value["result"].is_object() &&
        answer.value["result"].contains("protocolVersion") &&
        answer.value["result"]["protocolVersion"].is_string()) {
      std::lock_guard lock(state->session_mutex);
      state->protocol_version = answer.value["result"]["protocolVersion"].get<std::string>();
    }
  }
  answered = true;
  state->write_line(std::move(body));
}

// One line, handled; a request that could not be is still answered, with an error.
asio::awaitable<void> handle_line(std::shared_ptr<StdioTransport::State> state, std::string line,
                                  BoundedJson parsed, bool initialize) {
  bool answered = false;
  std::string failure;
  try {
    co_await answer_line(state, line, parsed, initialize, answered);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty()) co_return;
  log_event(LogLevel::error, "stdio_request_failed", {{"why", failure}});
  if (!answered && is_request(parsed))
    state->write_line(
        error_line(parsed.value["id"], "Internal error: the request could not be handled"));
}

// What the reader does with one complete line: initialize is answered before the next line is
// read (every later request needs its session); everything else runs side by side, so that a
// cancellation or a ping is not stuck behind a long call. Each line runs on a strand of its own,
// as each HTTP request runs on its connection's: the endpoint's waits (a request's outbox, an
// answer awaited from the client) are timers woken from other threads by a post to the waiter's
// executor, which is only safe when that executor is a strand. On the bare io_context, with two
// or more threads, a wake-up could run between the waiter's check and its wait and be lost: the
// answer made, never written, the client waiting for ever (seen once under load in the e2e test).
void dispatch(const std::shared_ptr<StdioTransport::State>& state, std::string line) {
  if (state->stopped || line.find_first_not_of(" \t\r") == std::string::npos) return;
  auto parsed = parse_bounded_json(line);
  const bool initialize = is_initialize(parsed);
  auto done = asio::co_spawn(asio::make_strand(state->executor),
                             handle_line(state, std::move(line), std::move(parsed), initialize),
                             asio::use_future);
  if (initialize) done.wait();
}

// A line over the bound: answered as a parse error (no id can be read from it) and skipped.
void refuse_long_line(StdioTransport::State& state) {
  state.write_line(json{{"jsonrpc", "2.0"},
                        {"id", nullptr},
                        {"error",
                         {{"code", -32700},
                          {"message", "Parse error: a message longer than " +
                                          std::to_string(state.max_line) + " bytes was skipped"}}}}
                       .dump());
}

void read_lines(std::shared_ptr<StdioTransport::State> state) {
  std::string pending;
  bool skipping = false;  // inside a line longer than max_line, already refused
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(state->in_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::size_t start = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      if (buffer[i] != '\n') continue;
      if (!skipping) {
        if (pending.size() + (i - start) > state->max_line) {
          refuse_long_line(*state);
        } else {
          pending.append(buffer + start, i - start);
          dispatch(state, std::move(pending));
        }
      }
      pending.clear();
      skipping = false;
      start = i + 1;
    }
    if (skipping) continue;
    const std::size_t rest = static_cast<std::size_t>(n) - start;
    if (pending.size() + rest > state->max_line) {
      // Never held whole: refused now, the rest of it dropped up to its newline.
      refuse_long_line(*state);
      pending.clear();
      skipping = true;
    } else {
      pending.append(buffer + start, rest);
    }
  }
  log_event(LogLevel::info, "stdio_closed");
  if (state->on_closed && !state->stopped) state->on_closed();
}

}  // namespace

StdioTransport::StdioTransport(asio::any_io_executor executor, Endpoint& endpoint, int in_fd,
                               int out_fd, std::size_t max_line, std::function<void()> on_closed)
    : state_(new State{std::move(executor),
                       endpoint,
                       in_fd,
                       out_fd,
                       max_line,
                       std::move(on_closed),
                       {false},
                       {},
                       {},
                       {},
                       {}}) {}

void StdioTransport::stop() {
  state_->stopped = true;
}

void StdioTransport::start() {
  // Detached: at exit it may still wait in read(), which nothing else can interrupt.
  std::thread(read_lines, state_).detach();
}

}  // namespace sandgate::server
