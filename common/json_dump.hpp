#pragma once
// Serializes JSON into a buffer allocated once. A result can carry a program's output twice
// (structuredContent and its text form); grown by doubling, the body of a 1 MiB result passes
// through ever larger buffers, and those copies are what set the gateway's peak memory.
#include <nlohmann/json.hpp>
#include <string>

namespace sandgate {

// Invalid UTF-8 is replaced (U+FFFD), never an exception.
std::string dump_json(const nlohmann::json& value);

}  // namespace sandgate
