#include "upstream/code_mode_text.hpp"

namespace sandgate::upstream {

std::string code_mode_text(const Upstreams& upstreams, const std::vector<std::string>& names) {
  std::string listed;
  std::string example;
  for (const auto& name : names) {
    auto upstream = upstreams.find(name);
    if (!upstream) continue;
    listed += "\n- " + name;
    if (!upstream->definition->description.empty())
      listed += ": " + upstream->definition->description;
    if (example.empty()) example = name;
  }
  if (listed.empty()) return "";
  return "\n\nYour code can call the tools of these MCP servers (the gateway makes each call "
         "with its own credentials; none is in the sandbox):" +
         listed +
         "\nDiscover their tools from code: Python `import sandgate_tools; "
         "print(sandgate_tools.reference())` prints every tool's signature and description "
         "(`sandgate_tools.list()` the same as data). Call one as `sandgate_tools." +
         example + ".TOOL(**arguments)` or `sandgate_tools.call('" + example +
         "', 'TOOL', {...})`: it returns the tool's structured content, else its text (images "
         "as bytes), and raises sandgate_tools.ToolError on an error. JavaScript: `const tools = "
         "require('sandgate_tools'); await tools." +
         example + ".TOOL({...})`. bash: `sandgate-tool " + example +
         " TOOL '{\"arg\": 1}'` prints JSON; `sandgate-tool reference`. Prefer one execute call "
         "that loops, filters and joins over many tool calls, and return only what matters.";
}

}  // namespace sandgate::upstream
