#include "server/gateway/gateway_environments.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>

#include "common/logging.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

std::string environments_store_dir(const Config& config) {
  if (!config.environments.store_dir.empty()) return config.environments.store_dir;
  if (!config.state.dir.empty())
    return (std::filesystem::path(config.state.dir) / "environments").string();
  return "";
}

std::string unknown_environment(const Credentials& credentials,
                                const std::vector<std::string>& defined, bool file_given) {
  return tenant_naming_unknown(
      credentials, &tenant::TenantTerms::environments, "environment",
      [&](const std::string& name) {
        return name == environment::kBase ||
               std::find(defined.begin(), defined.end(), name) != defined.end();
      },
      file_given ? "the environments file does not define" : "no --environments file defines");
}

namespace {

std::vector<std::string> names_of(const std::map<std::string, environment::Definition>& defined) {
  std::vector<std::string> names;
  for (const auto& [name, definition] : defined) names.push_back(name);
  return names;
}

std::vector<std::string> names_of(const environment::Environments& environments) {
  std::vector<std::string> names;
  for (const auto& status : environments.all()) names.push_back(status.definition.name);
  return names;
}

}  // namespace

OpenedEnvironments open_environments(const Config& config, asio::any_io_executor executor,
                                     sandbox::SandboxHost& host, session::Registry& registry,
                                     Metrics& metrics, const Credentials& credentials) {
  OpenedEnvironments opened;
  if (config.environments.file.empty()) {
    if (auto unknown = unknown_environment(credentials, {}, false); !unknown.empty())
      opened.fatal = "--token-file: " + unknown;
    return opened;
  }
  std::map<std::string, environment::Definition> definitions;
  try {
    definitions = environment::read_definitions_file(config.environments.file);
  } catch (const environment::DefinitionError& e) {
    opened.fatal = std::string("--environments: ") + e.what();
    return opened;
  }
  if (auto unknown = unknown_environment(credentials, names_of(definitions), true);
      !unknown.empty()) {
    opened.fatal = "--token-file: " + unknown;
    return opened;
  }
  std::string dir = environments_store_dir(config);
  if (dir.empty()) {
    opened.fatal =
        "--environments needs somewhere to keep its layers: --environments-dir or --state-dir";
    return opened;
  }
  environment::LayerStore store(dir, config.environments.built_ahead);
  try {
    store.prepare();
  } catch (const std::exception& e) {
    opened.fatal = e.what();
    return opened;
  }
  environment::BuildServices services{&host, registry.egress_proxy(), registry.egress_shares()};
  opened.environments = std::make_shared<environment::Environments>(
      executor, std::move(store), services, config.environments.builds_at_once);
  opened.environments->set_build_observer(
      [&metrics](const std::string&, const std::string& outcome, double) {
        metrics.count_environment_build(outcome == "ready");
      });
  log_event(LogLevel::info, "environments_loaded",
            {{"environments", definitions.size()}, {"store", dir}});
  opened.environments->load(std::move(definitions));
  return opened;
}

std::vector<std::pair<std::string, PoolStats>> environment_pool_stats(
    const environment::Environments& environments, const sandbox::SandboxHost& host) {
  std::vector<std::pair<std::string, PoolStats>> out;
  auto pools = host.layer_pool_stats();
  for (const auto& status : environments.all()) {
    if (!status.layer) continue;
    for (const auto& [dir, stats] : pools)
      if (dir == status.layer->dir) out.emplace_back(status.definition.name, stats);
  }
  return out;
}

void reload_environments(const Config& config, const Credentials& credentials,
                         environment::Environments& environments) {
  try {
    auto definitions = environment::read_definitions_file(config.environments.file);
    log_event(LogLevel::info, "environments_reloaded", {{"environments", definitions.size()}});
    environments.load(std::move(definitions));
  } catch (const environment::DefinitionError& e) {
    log_event(LogLevel::error, "environments_reload_refused",
              {{"why", e.what()}, {"kept", "the environments as they were"}});
  }
  if (auto unknown = unknown_environment(credentials, names_of(environments), true);
      !unknown.empty())
    log_event(LogLevel::warn, "environment_unknown", {{"problem", unknown}});
}

namespace {

std::string building_text(const environment::Environments& environments) {
  std::string names;
  for (const auto& status : environments.all())
    if (status.state == environment::State::building)
      names += (names.empty() ? "" : ", ") + status.definition.name;
  return "environments still building: " + names;
}

asio::awaitable<void> wait_until_settled(
    std::shared_ptr<const environment::Environments> environments, HttpServer& server) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!environments->settled()) {
    server.set_not_ready_reason(building_text(*environments));
    timer.expires_after(std::chrono::milliseconds(500));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
  }
  server.set_ready(true);
  log_event(LogLevel::info, "environments_settled");
}

}  // namespace

void ready_when_environments_settled(std::shared_ptr<const environment::Environments> environments,
                                     HttpServer& server, asio::any_io_executor executor) {
  if (!environments || environments->settled()) {
    server.set_ready(true);
    return;
  }
  server.set_ready(false);
  server.set_not_ready_reason(building_text(*environments));
  asio::co_spawn(executor, wait_until_settled(std::move(environments), server), asio::detached);
}

}  // namespace sandgate::server
