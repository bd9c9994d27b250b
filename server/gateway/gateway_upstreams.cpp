#include "server/gateway/gateway_upstreams.hpp"

#include "common/logging.hpp"
#include "upstream/definition.hpp"

namespace sandgate::server {

std::string unknown_upstream(const Credentials& credentials, const upstream::Upstreams& upstreams) {
  return tenant_naming_unknown(
      credentials, &tenant::TenantTerms::upstreams, "upstream",
      [&](const std::string& name) { return upstreams.find(name) != nullptr; },
      "the upstreams file does not define");
}

OpenedUpstreams open_upstreams(const Config& config, boost::asio::any_io_executor executor,
                               const Credentials& credentials, session::Registry& registry,
                               Metrics& metrics) {
  OpenedUpstreams opened;
  if (config.upstreams.file.empty()) return opened;
  upstream::UpstreamSet set;
  try {
    set = upstream::read_upstreams_file(config.upstreams.file);
  } catch (const std::exception& e) {
    opened.fatal = std::string("--upstreams ") + config.upstreams.file + ": " + e.what();
    return opened;
  }
  log_event(LogLevel::info, "upstreams_loaded", {{"count", set.size()}});
  opened.upstreams = std::make_shared<upstream::Upstreams>(std::move(executor), std::move(set),
                                                           config.auth.single_tenant());
  if (auto unknown = unknown_upstream(credentials, *opened.upstreams); !unknown.empty()) {
    opened.fatal = "--token-file: " + unknown;
    opened.upstreams.reset();
    return opened;
  }
  registry.use_upstreams(
      opened.upstreams, config.upstreams.limits, [&metrics](const upstream::ToolCallReport& r) {
        metrics.count_tool_call(r.upstream, r.outcome,
                                std::chrono::duration<double>(r.duration).count(), r.bytes);
      });
  return opened;
}

void reload_upstreams(const Config& config, const Credentials& credentials,
                      upstream::Upstreams& upstreams) {
  try {
    auto set = upstream::read_upstreams_file(config.upstreams.file);
    auto count = set.size();
    upstreams.replace(std::move(set));
    log_event(LogLevel::info, "upstreams_reloaded", {{"count", count}});
    if (auto unknown = unknown_upstream(credentials, upstreams); !unknown.empty())
      log_event(LogLevel::warn, "upstream_unknown", {{"problem", unknown}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "upstreams_reload_failed", {{"error", e.what()}});
  }
}

}  // namespace sandgate::server
