// upstream/tool_reference: what `sandgate_tools.reference()` shows the model of an upstream's
// tools (issue #45).
#include "upstream/tool_reference.hpp"

#include <catch2/catch.hpp>

using nlohmann::json;
using sandgate::upstream::signature_of;
using sandgate::upstream::tool_reference;

TEST_CASE("a tool's signature lists its required properties first, then the optional ones",
          "[unit][upstream]") {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"limit", {{"type", "integer"}}},
                   {"query", {{"type", "string"}}},
                   {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                   {"mode", {{"enum", {"fast", "exact"}}}},
                   {"either", {{"type", {"string", "null"}}}}}},
                 {"required", {"query"}}};
  CHECK(signature_of(schema) ==
        "query: string, either?: string | null, limit?: integer, mode?: \"fast\" | \"exact\", "
        "tags?: string[]");
  CHECK(signature_of(json::object()) == "");
  CHECK(signature_of(json{{"properties", 3}}) == "");  // a hostile schema is no signature
  CHECK(signature_of(json{{"properties", {{"x", 5}}}}) == "x?: any");
}

TEST_CASE("an upstream's reference names it, its description and each tool's signature",
          "[unit][upstream]") {
  sandgate::upstream::UpstreamDefinition tickets;
  tickets.name = "tickets";
  tickets.description = "the ticket system";
  sandgate::upstream::ToolList list;
  list.tools.push_back({"search",
                        "Search tickets.\nBy text.",
                        {{"type", "object"},
                         {"properties", {{"query", {{"type", "string"}}}}},
                         {"required", {"query"}}},
                        nullptr});
  list.tools.push_back({"get", "", json::object(), {{"type", "object"}}});
  CHECK(tool_reference(tickets, list) ==
        "## tickets — the ticket system\n"
        "tickets.search(query: string)\n"
        "    Search tickets.\n"
        "    By text.\n"
        "tickets.get() -> object\n");
  CHECK(tool_reference(tickets, {}) ==
        "## tickets — the ticket system\n(no tools this sandbox may call)\n");
}
