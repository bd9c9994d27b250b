#include "end_sandbox.hpp"

#include "common/logging.hpp"
#include "execute_tool.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
using nlohmann::json;

json EndSandboxTool::definition() const {
  return {
      {"name", name_},
      {"title", "End a sandbox"},
      {"description",
       "End a sandbox now: its processes stop and its /work files are deleted. Pass the "
       "sandbox_id an execute result returned. In a session, omit it to end the session's "
       "own sandbox (the next execute starts a fresh one)."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"sandbox_id",
           {{"type", "string"}, {"description", "The sandbox to end, as execute returned it."}}}}},
        {"additionalProperties", false}}},
      {"annotations",
       {{"title", "End a sandbox"},
        {"readOnlyHint", false},
        {"destructiveHint", true},
        {"idempotentHint", true},
        {"openWorldHint", false}}}};
}

boost::asio::awaitable<json> EndSandboxTool::call(ToolCall call) {
  const json& args = call.arguments;
  if (!args.is_object()) co_return tool_error("Invalid arguments: arguments must be an object.");
  for (const auto& [key, value] : args.items())
    if (key != "sandbox_id")
      co_return tool_error("Invalid arguments: unknown argument `" + key +
                           "`; expected sandbox_id.");
  auto id_arg = args.find("sandbox_id");
  if (id_arg == args.end() || id_arg->is_null()) {
    if (!call.session)
      co_return tool_error(
          "Invalid arguments: `sandbox_id` is required here (there is no "
          "session whose sandbox could be meant).");
    bool ended = call.session->end_sandbox("ended by end_sandbox");
    co_return json{
        {"content", json::array({{{"type", "text"},
                                  {"text", ended ? "This session's sandbox ended; its files are "
                                                   "gone. The next execute starts a fresh one."
                                                 : "This session has no running sandbox."}}})},
        {"isError", false}};
  }
  if (!id_arg->is_string() || !session::looks_like_handle(id_arg->get<std::string>()))
    co_return tool_error("Invalid arguments: `sandbox_id` is not a sandbox id this gateway made.");
  std::string id = id_arg->get<std::string>();
  const std::string& tenant = call.tenant->name;
  if (!registry_.remove(id, tenant, session::SessionKind::handle, "it was ended by end_sandbox"))
    co_return tool_error(unusable_handle_text(id, handle_unusable_reason(registry_, id, tenant)));
  co_await registry_.removal_saved();  // ended for good, even if the gateway crashes next
  log_event(LogLevel::info, "sandbox_handle_ended",
            {{"session", std::string(session::log_prefix(id))}, {"tenant", tenant}});
  co_return json{
      {"content", json::array({{{"type", "text"},
                                {"text", "Sandbox " + id + " ended; its files are gone."}}})},
      {"isError", false}};
}

}  // namespace sandgate::server
