#include "common/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace sandgate {

void init_logging(const std::string& level) {
  auto logger = spdlog::stderr_logger_mt("sandgate");
  // The message is already a JSON object; spdlog adds the time and level around it.
  logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})",
                      spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void log_event(LogLevel level, const std::string& event, nlohmann::json fields) {
  fields["event"] = event;
  // Strip the braces: the pattern supplies them around ts/level and these fields.
  std::string body = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  body = body.substr(1, body.size() - 2);
  switch (level) {
    case LogLevel::debug:
      spdlog::debug("{}", body);
      break;
    case LogLevel::info:
      spdlog::info("{}", body);
      break;
    case LogLevel::warn:
      spdlog::warn("{}", body);
      break;
    case LogLevel::error:
      spdlog::error("{}", body);
      break;
  }
}

}  // namespace sandgate
