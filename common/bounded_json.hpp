#pragma once
// JSON from outside the gateway (request bodies, a saved registry), parsed with a bound on
// nesting depth that is enforced while parsing: a document nested deeper is refused before any
// tree of that depth exists.
// nlohmann's parser is iterative, but copying, comparing and serializing a value recurse once
// per level, so ~200,000 nested '[' (400 KB, well under the body limit) overflowed the stack
// and took the whole gateway down.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace sandgate {

// MCP messages nest a handful of levels; 128 leaves room for any honest `_meta` or tool
// arguments while keeping every later recursion a few kilobytes of stack.
constexpr std::size_t kMaxJsonDepth = 128;

enum class JsonFault { none, syntax, too_deep };

struct BoundedJson {
  nlohmann::json value;  // discarded unless fault == none
  JsonFault fault = JsonFault::none;
};

BoundedJson parse_bounded_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace sandgate
