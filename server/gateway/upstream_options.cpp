// The options of code mode (issue #45): the operator's upstream MCP servers, and the bounds on
// the tool calls one execute call's programs make through their sandbox's channel.
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
std::vector<Option> upstream_options() {
  return {
      {"--upstreams", "SANDGATE_UPSTREAMS", "",
       "JSON file of upstream MCP servers (name -> {url, headers, tools, description, ca_file, "
       "limits}; docs/configuration.md) whose tools sandboxed code may call through the gateway, "
       "which holds their credentials (header values read from files only their owner may "
       "read). A tenant's tokens-file or OAuth policy line names its own with "
       "`upstreams=NAME[,NAME...]`. Reloaded on SIGHUP (a bad file is refused at start, and a "
       "bad reload keeps the old set).",
       [](Config& c, const std::string& v) { c.upstreams.file = v; }},
      {"--tool-calls-per-execute", "SANDGATE_TOOL_CALLS_PER_EXECUTE", "500",
       "Upstream tool calls the programs of one execute call may make in all.",
       [](Config& c, const std::string& v) {
         c.upstreams.limits.calls_per_execute = static_cast<std::uint32_t>(to_u64(v, 1, 100000));
       }},
      {"--tool-calls-at-once", "SANDGATE_TOOL_CALLS_AT_ONCE", "16",
       "Upstream tool calls one sandbox may have in flight at once (more wait for a place).",
       [](Config& c, const std::string& v) {
         c.upstreams.limits.in_flight = static_cast<std::uint32_t>(to_u64(v, 1, 1024));
       }},
      {"--tool-mb-per-execute", "SANDGATE_TOOL_MB_PER_EXECUTE", "32",
       "MiB of upstream answers the programs of one execute call may receive in all.",
       [](Config& c, const std::string& v) {
         c.upstreams.limits.bytes_per_execute = to_u64(v, 1, 4096) << 20;
       }},
  };
}

}  // namespace sandgate::server::options_detail
