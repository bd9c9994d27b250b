// The tool channel's three requests (tool_channel.hpp): a call, the list, the reference. Every
// refusal says what to do instead; nothing a program sends reaches a log.
#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <chrono>

#include "common/bounded_json.hpp"
#include "common/logging.hpp"
#include "upstream/channel_context.hpp"
#include "upstream/tool_reference.hpp"

namespace sandgate::upstream {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// How long a list or reference may take, within the running call's own deadline.
constexpr auto kListTimeout = std::chrono::seconds(30);

std::string names_of(const std::vector<std::string>& names) {
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return all.empty() ? "none" : all;
}

unsigned status_of(UpstreamError::Kind kind) {
  switch (kind) {
    case UpstreamError::Kind::timeout:
      return 504;
    case UpstreamError::Kind::cancelled:
      return 499;
    default:
      return 502;
  }
}

ChannelAnswer json_answer(const json& value) {
  return {200, "application/json", value.dump(-1, ' ', false, json::error_handler_t::replace)};
}

// The running execute call's deadline, or an answer saying there is none.
std::optional<ChannelAnswer> no_call_running(const ChannelContext& channel,
                                             Clock::time_point& deadline) {
  deadline = channel.account->call_deadline();
  if (deadline == Clock::time_point::min() || deadline <= Clock::now())
    return error_answer(409, "no_call",
                        "tool calls are made while an execute call runs; this program outlived "
                        "its call");
  return std::nullopt;
}

void report(const ChannelContext& channel, const std::string& upstream, const std::string& tool,
            const std::string& outcome, Clock::time_point started, std::uint64_t bytes,
            double usd) {
  ToolCallReport r{channel.labels.tenant,
                   upstream,
                   tool,
                   outcome,
                   std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started),
                   bytes,
                   usd};
  log_event(LogLevel::info, "tool_call",
            {{"tenant", r.tenant},
             {"session", channel.labels.session},
             {"sandbox", channel.labels.sandbox},
             {"upstream", r.upstream},
             {"tool", r.tool},
             {"outcome", r.outcome},
             {"ms", r.duration.count()},
             {"bytes", r.bytes}});
  if (channel.observer) channel.observer(r);
}

struct CallRequest {
  std::string server, tool;
  json arguments = json::object();
};

std::optional<ChannelAnswer> read_call(const std::string& body, CallRequest& call) {
  auto parsed = parse_bounded_json(body);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object())
    return error_answer(400, "bad_request", "the request body is not a JSON object");
  const auto& v = parsed.value;
  if (!v.contains("server") || !v["server"].is_string() || !v.contains("tool") ||
      !v["tool"].is_string())
    return error_answer(400, "bad_request", "a call names its server and tool as strings");
  call.server = v["server"].get<std::string>();
  call.tool = v["tool"].get<std::string>();
  if (v.contains("arguments") && !v["arguments"].is_null()) {
    if (!v["arguments"].is_object())
      return error_answer(400, "bad_request", "a call's arguments are a JSON object");
    call.arguments = v["arguments"];
  }
  // Names are echoed back in refusals: keep them short and printable.
  auto printable = [](const std::string& s) {
    return !s.empty() && s.size() <= 128 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; });
  };
  if (!printable(call.server) || !printable(call.tool))
    return error_answer(400, "bad_request",
                        "server and tool names are 1 to 128 printable characters");
  return std::nullopt;
}

// This sandbox's client session of `upstream` (made at its first call).
std::shared_ptr<McpClient> client_for(ChannelContext& channel, const Upstream& upstream) {
  auto& held = channel.clients[upstream.definition->name];
  if (!held.client || held.definition != upstream.definition) {
    if (held.client) held.client->close();
    held.definition = upstream.definition;
    held.client = McpClient::create(channel.strand, upstream.definition);
  }
  return held.client;
}

// Why `call` may not be made from this sandbox, or nullopt with its upstream.
std::optional<ChannelAnswer> not_callable(const ChannelContext& channel, const CallRequest& call,
                                          std::shared_ptr<const Upstream>& upstream) {
  if (!channel.may_call(call.server))
    return error_answer(403, "not_allowed",
                        "this sandbox may call no upstream named '" + call.server +
                            "'; it may call: " + names_of(channel.allowed));
  upstream = channel.upstreams->find(call.server);
  if (!upstream)
    return error_answer(403, "not_allowed",
                        "upstream '" + call.server + "' is no longer configured on this gateway");
  if (!upstream->definition->allows(call.tool))
    return error_answer(403, "not_allowed",
                        "tool '" + call.tool + "' of upstream '" + call.server +
                            "' is not one this sandbox may call; sandgate_tools.list() names them");
  return std::nullopt;
}

// Counts the call against this execute call's cap; a refusal when it is over.
std::optional<ChannelAnswer> over_call_cap(ChannelContext& channel) {
  channel.count_for_this_call();
  if (channel.calls >= channel.limits.calls_per_execute)
    return error_answer(429, "limit",
                        "this execute call already made " +
                            std::to_string(channel.limits.calls_per_execute) +
                            " tool calls, the most one may; return what you have and go on in "
                            "the next call");
  ++channel.calls;
  return std::nullopt;
}

// The answer to a call the upstream answered: within this execute call's bytes, charged its
// price. Every call sent is counted in the sandbox's usage (the ledger's tool calls).
ChannelAnswer answered(ChannelContext& channel, const CallRequest& call, const Upstream& upstream,
                       CallOutcome outcome, Clock::time_point started) {
  channel.count_for_this_call();
  channel.bytes += outcome.bytes;
  if (channel.bytes > channel.limits.bytes_per_execute) {
    channel.account->record_call(call.server, 0);
    report(channel, call.server, call.tool, "too_large", started, outcome.bytes, 0);
    return error_answer(
        413, "too_large",
        "the tool calls of this execute call returned more than " +
            std::to_string(channel.limits.bytes_per_execute) +
            " bytes in all; ask for less (filters, pages) or go on in the next call");
  }
  double usd = upstream.definition->limits.usd_per_call;
  if (usd > 0 && !channel.account->charge(usd)) {
    channel.account->record_call(call.server, 0);
    report(channel, call.server, call.tool, "refused", started, outcome.bytes, usd);
    return error_answer(402, "spend_cap",
                        "the sandbox reached its spend cap with this tool call's price");
  }
  channel.account->record_call(call.server, usd);
  bool tool_error = outcome.result.is_object() && outcome.result.value("isError", false) == true;
  report(channel, call.server, call.tool, tool_error ? "tool_error" : "ok", started, outcome.bytes,
         usd);
  return json_answer(json{{"result", std::move(outcome.result)}});
}

asio::awaitable<ChannelAnswer> answer_call(std::shared_ptr<ChannelContext> channel,
                                           std::string body) {
  CallRequest call;
  if (auto refusal = read_call(body, call)) co_return *refusal;
  auto started = Clock::now();
  auto refused = [&](ChannelAnswer answer) {
    report(*channel, call.server, call.tool, "refused", started, 0, 0);
    return answer;
  };
  std::shared_ptr<const Upstream> upstream;
  if (auto refusal = not_callable(*channel, call, upstream)) co_return refused(*refusal);
  Clock::time_point call_deadline;
  if (auto none = no_call_running(*channel, call_deadline)) co_return *none;
  if (auto refusal = over_call_cap(*channel)) co_return refused(*refusal);
  auto deadline = std::min(call_deadline, started + upstream->definition->limits.call_timeout);
  auto mine = co_await channel->in_flight->acquire("", deadline);
  if (!mine)
    co_return refused(error_answer(
        429, "limit",
        "no tool call of this sandbox finished in time for this one to start (at most " +
            std::to_string(channel->limits.in_flight) + " run at once)"));
  auto place = co_await upstream->gate->acquire(channel->labels.tenant, deadline);
  if (!place)
    co_return refused(
        error_answer(503, "busy",
                     "upstream '" + call.server + "' is busy with this tenant's other calls (" +
                         std::to_string(upstream->gate->share_for(channel->labels.tenant)) +
                         " at once now); try fewer at once"));

  auto client = client_for(*channel, *upstream);
  CallOutcome outcome;
  try {
    outcome = co_await client->call_tool(call.tool, std::move(call.arguments), deadline);
  } catch (const UpstreamError& e) {
    channel->account->record_call(call.server, 0);
    report(*channel, call.server, call.tool, upstream_error_name(e.kind()), started, 0, 0);
    co_return error_answer(status_of(e.kind()), upstream_error_name(e.kind()), e.what());
  }
  if (client->tools_changed()) upstream->catalog->invalidate();
  co_return answered(*channel, call, *upstream, std::move(outcome), started);
}

// Each allowed upstream's tools (fetched by its catalog), in the tenant's order.
asio::awaitable<json> listing(std::shared_ptr<ChannelContext> channel,
                              const std::vector<std::string>& names, Clock::time_point deadline,
                              std::string* reference) {
  json servers = json::array();
  for (const auto& name : names) {
    json entry{{"name", name}};
    auto upstream = channel->upstreams->find(name);
    if (!upstream) {
      entry["error"] = "no longer configured on this gateway";
      servers.push_back(std::move(entry));
      continue;
    }
    entry["description"] = upstream->definition->description;
    try {
      auto tools = co_await upstream->catalog->tools(deadline);
      json list = json::array();
      for (const auto& tool : tools->tools) {
        json t{{"name", tool.name},
               {"description", tool.description},
               {"inputSchema", tool.input_schema}};
        if (!tool.output_schema.is_null()) t["outputSchema"] = tool.output_schema;
        list.push_back(std::move(t));
      }
      entry["tools"] = std::move(list);
      if (reference) *reference += tool_reference(*upstream->definition, *tools) + "\n";
    } catch (const UpstreamError& e) {
      entry["error"] = e.what();
      if (reference) *reference += "## " + name + "\n(unavailable: " + e.what() + ")\n\n";
    }
    servers.push_back(std::move(entry));
  }
  co_return servers;
}

}  // namespace

ChannelAnswer error_answer(unsigned status, const std::string& kind, const std::string& message) {
  return {status, "application/json",
          json{{"error", {{"kind", kind}, {"message", message}}}}.dump(
              -1, ' ', false, json::error_handler_t::replace)};
}

bool ChannelContext::may_call(const std::string& upstream) const {
  return std::find(allowed.begin(), allowed.end(), upstream) != allowed.end();
}

void ChannelContext::count_for_this_call() {
  auto now = account->call_number();
  if (now == counted_call) return;
  counted_call = now;
  calls = 0;
  bytes = 0;
}

asio::awaitable<ChannelAnswer> answer_request(std::shared_ptr<ChannelContext> channel,
                                              std::string method, std::string target,
                                              std::string body) {
  if (method == "POST" && target == "/call")
    co_return co_await answer_call(channel, std::move(body));
  bool list = target == "/list";
  bool reference = target == "/reference" || target.rfind("/reference/", 0) == 0;
  if (method != "GET" || (!list && !reference))
    co_return error_answer(404, "bad_request",
                           "the tool channel answers POST /call, GET /list and GET /reference");
  Clock::time_point deadline;
  if (auto none = no_call_running(*channel, deadline)) co_return *none;
  deadline = std::min(deadline, Clock::now() + kListTimeout);
  std::vector<std::string> names = channel->allowed;
  if (reference && target.size() > std::string("/reference/").size()) {
    std::string one = target.substr(std::string("/reference/").size());
    if (!channel->may_call(one))
      co_return error_answer(404, "not_allowed",
                             "this sandbox may call no upstream named that; it may call: " +
                                 names_of(channel->allowed));
    names = {one};
  }
  std::string text =
      "# Tools this sandbox may call (`name?` is optional)\n"
      "Python: sandgate_tools.SERVER.TOOL(**arguments); JavaScript: await "
      "require('sandgate_tools').SERVER.TOOL({...}); bash: sandgate-tool SERVER TOOL '{...}'. In "
      "Python and JavaScript a name that is not an identifier is written with '_' "
      "(get-sum: get_sum).\n\n";
  auto servers = co_await listing(channel, names, deadline, reference ? &text : nullptr);
  if (list) co_return json_answer(json{{"servers", std::move(servers)}});
  co_return ChannelAnswer{200, "text/plain; charset=utf-8", std::move(text)};
}

}  // namespace sandgate::upstream
