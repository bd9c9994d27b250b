#pragma once
// Structured logs: one JSON object per line on stderr, metadata only. Callers never pass code,
// stdin, output or tokens; the event names and fields are the whole vocabulary.
#include <nlohmann/json.hpp>
#include <string>

namespace sandgate {

enum class LogLevel { debug, info, warn, error };

void init_logging(const std::string& level);
void log_event(LogLevel level, const std::string& event,
               nlohmann::json fields = nlohmann::json::object());

}  // namespace sandgate
