#pragma once
// What the execute tool's description adds for a tenant with upstreams (issue #45): their names
// and descriptions and how to discover and call their tools from each language — never their
// schemas, which the model reads on demand (sandgate_tools.reference()).
#include <string>
#include <vector>

#include "upstream/upstreams.hpp"

namespace sandgate::upstream {

// "" when none of `names` is configured.
std::string code_mode_text(const Upstreams& upstreams, const std::vector<std::string>& names);

}  // namespace sandgate::upstream
