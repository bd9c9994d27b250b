#include "server/gateway/gateway.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <iostream>
#include <thread>

#include "auth/token_store.hpp"
#include "common/logging.hpp"
#include "common/on_scope_exit.hpp"
#include "egress/connection_history.hpp"
#include "sandbox/host.hpp"
#include "sandbox/inside/supervisor.hpp"
#include "server/admin/admin_channel.hpp"
#include "server/admin/admin_command.hpp"
#include "server/admin/admin_requests.hpp"
#include "server/gateway/environments_command.hpp"
#include "server/gateway/gateway_environments.hpp"
#include "server/gateway/gateway_tokens.hpp"
#include "server/gateway/gateway_upstreams.hpp"
#include "server/gateway/isolation_notes.hpp"
#include "server/gateway/process_memory.hpp"
#include "server/gateway/registry_checkpoint.hpp"
#include "server/gateway/secrets_ca.hpp"
#include "server/gateway/shutdown.hpp"
#include "server/gateway/tenant_defaults.hpp"
#include "server/gateway/usage_command.hpp"
#include "server/gateway/usage_ledger.hpp"
#include "server/http/http_server.hpp"
#include "server/mcp/mcp_endpoint.hpp"
#include "server/mcp/resource_metadata.hpp"
#include "server/stdio/stdio_transport.hpp"
#include "server/tools/standard_tools.hpp"
#include "server/tools/tool_registry.hpp"
#include "session/registry.hpp"
#include "session/session_id.hpp"
#include "session/state_store.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

namespace {

// What a revoked tenant's running calls are told (and a handle's later call).
constexpr const char* kRevokedWhy = "this tenant's access was revoked";

// The connections one tenant's sandboxes may hold open through the egress proxies at once:
// half of the gateway's, as for call slots, so that one tenant holding all it may leaves
// another room; all of them where only one tenant can exist.
std::size_t default_tenant_egress_share(const Config& config) {
  std::size_t total = config.registry.egress_proxy.max_connections_total;
  if (config.auth.single_tenant()) return total;
  return std::max<std::size_t>(1, total / 2);
}

// As often as the registry sweeps: a checkpoint sees each hibernation soon after it happens.
std::chrono::milliseconds checkpoint_interval(const session::RegistryConfig& c) {
  auto every = c.sweep_interval;
  auto half = [](std::chrono::seconds s) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(s) / 2;
  };
  every = std::min(every, half(c.idle_timeout));
  if (c.hibernate_after.count() > 0) every = std::min(every, half(c.hibernate_after));
  return std::max(std::chrono::milliseconds(100), every);
}

unsigned thread_count(const Config& config) {
  if (config.threads) return config.threads;
  return std::max(2u, std::thread::hardware_concurrency());
}

// Hibernation's archives: in --state-dir (the operator keeps the registry and its archives
// across restarts), else in a private directory removed at exit. `fatal` says why a
// --state-dir cannot be used; no writable default (a read-only root without /tmp) only turns
// hibernation off.
struct OpenedStateStore {
  std::unique_ptr<session::StateStore> store;
  std::string fatal;
};

OpenedStateStore open_state_store(const Config& config) {
  OpenedStateStore opened;
  if (config.registry.hibernate_after.count() == 0) return opened;
  const bool own_dir = config.state.dir.empty();
  try {
    opened.store = std::make_unique<session::StateStore>(
        own_dir ? session::default_state_dir() : config.state.dir, config.state.max_bytes, own_dir,
        /*keep_archives=*/!own_dir);
  } catch (const std::exception& e) {
    if (!own_dir) {
      opened.fatal = e.what();
      return opened;
    }
    log_event(LogLevel::warn, "hibernation_off", {{"why", e.what()}});
    return opened;
  }
  opened.store->on_drop = [](const std::string& file, std::uint64_t bytes) {
    log_event(LogLevel::warn, "hibernation_archive_dropped",
              {{"file", file}, {"bytes", bytes}, {"why", "--state-max-mb reached"}});
  };
  return opened;
}

// Where sessions survive restarts (an explicit --state-dir): the saved registry is served again
// (each tenant under its current policy), then written on a timer from now on. Null otherwise.
// Archives nobody's session holds are removed either way, and counted in a warning.
std::unique_ptr<RegistryCheckpoint> restore_and_checkpoint(
    asio::any_io_executor background, session::Registry& registry, const Config& config,
    const session::RegistryConfig& registry_config, session::StateStore* state,
    const Credentials& credentials) {
  std::unique_ptr<RegistryCheckpoint> checkpoint;
  if (state && !config.state.dir.empty()) {
    restore_saved_sessions(
        registry, *state, [&](const std::string& name) { return tenant_named(credentials, name); });
    checkpoint = std::make_unique<RegistryCheckpoint>(background, registry, state->dir());
    asio::co_spawn(background, checkpoint->run(checkpoint_interval(registry_config)),
                   asio::detached);
    registry.on_removal_saved([saving = checkpoint.get()] { return saving->saved(); });
  }
  if (state && state->left_over() > 0)
    log_event(LogLevel::warn, "swept_orphans", {{"hibernation_archives", state->left_over()}});
  return checkpoint;
}

// A session, handle or sandbox ended (or hibernated) to make room: counted and logged.
void record_eviction(Metrics& metrics, const session::Eviction& e) {
  const char* reason = session::eviction_reason_name(e.reason);
  const bool sandbox_only = e.reason == session::EvictionReason::sandbox_cap ||
                            e.reason == session::EvictionReason::memory_budget ||
                            e.reason == session::EvictionReason::tenant_share;
  // Hibernated under pressure: counted apart from the idle sweep's hibernations.
  if (e.hibernated)
    metrics.count_pressure_hibernation(reason);
  else
    metrics.count_eviction(reason);
  const char* event =
      e.hibernated ? "sandbox_hibernated" : (sandbox_only ? "sandbox_evicted" : "session_evicted");
  log_event(LogLevel::info, event,
            {{"session", std::string(session::log_prefix(e.id))},
             {"tenant", e.tenant},
             {"kind", e.kind == session::SessionKind::handle ? "handle" : "session"},
             {"reason", reason},
             {"idle_s", e.idle.count()}});
}

// The end of every egress connection: counted, and kept for the operator's `sandgate
// connections` (issue #44). Set before sessions are restored, so that theirs are too.
void observe_egress(session::Registry& registry, Metrics& metrics,
                    std::shared_ptr<egress::ConnectionHistory> history) {
  registry.on_egress([&metrics, history](const egress::ConnectionEnd& end) {
    metrics.count_egress(egress::connection_end_name(end.kind), end.bytes_up, end.bytes_down);
    history->add(end);
  });
}

// The registry's hooks: failed hibernations and evictions logged (and counted), and the host's
// way to ask it for room under pressure.
void connect_registry(session::Registry& registry, sandbox::SandboxHost& host, Metrics& metrics) {
  registry.on_hibernate_failed = [](const std::string& file, const std::string& why) {
    log_event(LogLevel::warn, "hibernation_failed", {{"file", file}, {"why", why}});
  };
  registry.on_eviction([&metrics](const session::Eviction& e) { record_eviction(metrics, e); });
  host.set_make_room(
      [&registry](sandbox::Pressure pressure) { return registry.make_room(pressure); });
}

// What /metrics reports beside the counters, read at each scrape.
Gauges gauges_of(const session::Registry& registry, const sandbox::SandboxHost& host,
                 const session::CallSlots& slots, const session::StateStore* state,
                 const environment::Environments* environments) {
  Gauges g{registry.size(), host.live_count(), 0, registry.spend_usd(), false};
  g.calls_waiting = slots.waiting();
  g.handles = registry.handles();
  g.idle_sweeps = registry.sweeps();
  g.pool = host.pool_stats();
  if (environments) g.environment_pools = environment_pool_stats(*environments, host);
  g.gateway_resident_bytes = process_resident_bytes();
  g.gateway_memory_reserve_bytes = host.config().gateway_memory_reserve;
  if (state) {
    g.hibernated = registry.hibernated();
    g.state_bytes = state->bytes();
    g.hibernations = registry.idle_hibernations();
    g.resumes = state->resumes;
    g.archives_dropped = state->dropped;
  }
  return g;
}

// Binds and starts accepting; nothing (with the reason on stderr) when it cannot.
std::optional<asio::ip::tcp::endpoint> start_listening(HttpServer& server, const HttpConfig& http) {
  try {
    return server.start();
  } catch (const std::exception& e) {
    std::cerr << "sandgate: cannot listen on " << http.listen_host << ":" << http.listen_port
              << ": " << e.what() << "\n";
    return std::nullopt;
  }
}

// The address on stdout (for whoever started the gateway) and the start-up facts in the log.
void announce_listening(const Config& config, const asio::ip::tcp::endpoint& bound,
                        const sandbox::SandboxHost& host, const session::StateStore* state) {
  const tenant::TenantTerms tenants = tenant_defaults(config);
  std::string scheme = config.http.tls_cert.empty() ? "http" : "https";
  std::string host_text = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                  : bound.address().to_string();
  std::cout << "sandgate listening on " << scheme << "://" << host_text << ":" << bound.port()
            << "/mcp" << std::endl;
  log_event(LogLevel::info, "listening",
            {{"address", host_text},
             {"port", bound.port()},
             {"tls", !config.http.tls_cert.empty()},
             {"auth", config.auth.no_auth ? "off" : "on"},
             {"isolation", host.isolation().mode},
             {"cgroups", host.isolation().cgroups_description()},
             {"cgroup_setup", host.isolation().cgroup_setup()},
             {"sandbox_memory_budget_mib", host.isolation().sandbox_memory_budget() >> 20},
             {"tenant_max_concurrent_calls", tenants.max_concurrent_calls},
             {"tenant_max_sandboxes", tenants.max_sandboxes},
             {"state_dir", state ? state->dir() : std::string("(hibernation off)")}});
}

// Ready once a real sandbox has run a real program; never while isolation is refused.
template <class Executor>
void start_readiness_probe(Executor background, sandbox::SandboxHost& host, HttpServer& server,
                           std::shared_ptr<const environment::Environments> environments) {
  if (!host.isolation().usable()) {
    server.set_not_ready_reason(host.isolation().problem);
    log_event(LogLevel::error, "isolation_refused", {{"problem", host.isolation().problem}});
    return;
  }
  asio::co_spawn(background, host.self_test(),
                 [&server, background, environments](std::exception_ptr, std::string problem) {
                   if (problem.empty()) {
                     // Ready now, or once every environment is built or failed.
                     ready_when_environments_settled(environments, server, background);
                     log_event(LogLevel::info, "ready");
                   } else {
                     server.set_not_ready_reason("sandbox self-test failed: " + problem);
                     log_event(LogLevel::error, "self_test_failed", {{"problem", problem}});
                   }
                 });
}

// The registry's settings with the tenant shares that follow from the gateway's pools.
session::RegistryConfig effective_registry_config(const Config& config) {
  session::RegistryConfig registry = config.registry;
  registry.egress_proxy.max_connections_per_tenant = default_tenant_egress_share(config);
  return registry;
}

// A layer of isolation the kernel or the deployment lacks: logged, and named by /readyz.
void report_isolation(const sandbox::SandboxHost& host, HttpServer& server) {
  auto notes = isolation_notes(host.isolation());
  for (const auto& note : notes) log_event(LogLevel::warn, "isolation_degraded", {{"note", note}});
  server.set_degraded_notes(std::move(notes));
}

// Until the signal set is cancelled (at shutdown). A tenant the tokens file no longer names is
// revoked at once: its token already gets 401, and here its sessions and handles end — running
// calls told so, sandboxes and hibernated archives gone. Its ledger rows stay. The environments
// file is read again too.
asio::awaitable<void> reload_credentials_on_sighup(
    asio::signal_set& signals, const Config& config, Credentials& credentials,
    session::Registry& registry, std::shared_ptr<environment::Environments> environments,
    std::shared_ptr<upstream::Upstreams> upstreams) {
  for (;;) {
    auto [ec, signal] = co_await signals.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    for (const auto& tenant : reload_credentials(config, credentials)) {
      auto ended = registry.end_tenant(tenant, kRevokedWhy);
      log_event(LogLevel::warn, "tenant_revoked",
                {{"tenant", tenant}, {"sessions_ended", ended.size()}});
    }
    if (environments) reload_environments(config, credentials, *environments);
    if (upstreams) reload_upstreams(config, credentials, *upstreams);
  }
}

// With OAuth: the protected resource metadata (RFC 9728) at its well-known paths, and the
// issuers' keys fetched now, so that the first token waits for nothing.
void start_oauth(const Config& config, Credentials& credentials, HttpServer& server,
                 asio::any_io_executor executor) {
  if (!credentials.oauth) return;
  for (const auto& path : resource_metadata_paths(config.auth.oauth.resource_url))
    server.serve_document(path, "application/json", resource_metadata_document(config.auth.oauth));
  credentials.oauth->prefetch(executor);
}

// The calling thread and `count - 1` more run the io_context until it stops.
void run_io_threads(asio::io_context& io, unsigned count) {
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < count; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
}

// Orphaned cgroups a previous run left (swept now) in the log, and the pool's failed builds.
void report_host_events(sandbox::SandboxHost& host) {
  if (host.swept_at_start() > 0)
    log_event(LogLevel::warn, "swept_orphans", {{"cgroups", host.swept_at_start()}});
  host.set_pool_failure_hook([](const std::string& why) {
    log_event(LogLevel::warn, "pool_refill_failed", {{"why", why}});
  });
}

// The usage ledger, fed by the registry; null (with the reason on stderr) when it cannot be
// opened.
std::unique_ptr<UsageLedger> open_usage_ledger(const Config& config, session::Registry& registry,
                                               Metrics& metrics, Credentials& credentials) {
  try {
    return UsageLedger::open(config, registry, metrics, [&credentials](const std::string& t) {
      return spend_label(credentials, t);
    });
  } catch (const std::exception& e) {
    std::cerr << "sandgate: " << e.what() << "\n";
    return nullptr;
  }
}

// The operator's channel (server/admin/) in the state directory: the hibernation store's, else
// an explicit --state-dir; none (logged) without either, or when the socket cannot be made.
std::unique_ptr<AdminChannel> open_admin_channel(const Config& config, asio::io_context& io,
                                                 session::Registry& registry,
                                                 const session::StateStore* state,
                                                 const egress::ConnectionHistory& connections) {
  const std::string dir = state ? state->dir() : config.state.dir;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) {
    log_event(LogLevel::info, "admin_channel_off", {{"why", "no state directory"}});
    return nullptr;
  }
  try {
    auto channel = std::make_unique<AdminChannel>(
        io.get_executor(), admin_socket_path(dir),
        [&registry, &connections](std::string_view request, unsigned uid) {
          return answer_admin_request(registry, request, uid, &connections);
        });
    channel->start();
    log_event(LogLevel::info, "admin_channel", {{"socket", channel->path()}});
    return channel;
  } catch (const std::exception& e) {
    log_event(LogLevel::warn, "admin_channel_off", {{"why", e.what()}});
    return nullptr;
  }
}

// What run_gateway has built before it serves: each part outlives serve().
struct GatewayParts {
  const Config& config;
  const GatewayExtras& extras;
  Metrics& metrics;
  Credentials& credentials;
  session::CallSlots& gateway_slots;
  asio::io_context& io;
  asio::strand<asio::io_context::executor_type>& background;
  sandbox::SandboxHost& host;
  session::StateStore* state;
  session::Registry& registry;
  UsageLedger* usage;
  RegistryCheckpoint* checkpoint;
  std::shared_ptr<environment::Environments> environments;  // null without --environments
  std::shared_ptr<upstream::Upstreams> upstreams;           // null without --upstreams
  std::shared_ptr<const egress::ConnectionHistory> connections;
};

// The tools, the MCP endpoint and the HTTP server; serves until a signal ends the gateway,
// then lets every sandbox go. Returns the process exit code.
int serve(const GatewayParts& g) {
  ToolRegistry tools;
  add_standard_tools(tools, effective_tool_limits(g.config), g.registry, g.metrics, g.environments,
                     g.upstreams);
  if (g.extras.add_tools) g.extras.add_tools(tools, g.registry);
  McpEndpoint endpoint(mcp_endpoint_config(g.config), g.credentials.token_store(),
                       g.credentials.oauth.get(), g.registry, tools, g.metrics, g.extras.extension);
  HttpServer server(g.io, effective_http_config(g.config), endpoint, g.metrics, [&] {
    return gauges_of(g.registry, g.host, g.gateway_slots, g.state, g.environments.get());
  });

  start_oauth(g.config, g.credentials, server, g.io.get_executor());
  std::unique_ptr<StdioTransport> stdio;
  if (g.config.stdio) {
    // Nothing but protocol on stdout. What this host isolates with, and what it lacks, on stderr.
    std::cerr << g.host.isolation().to_text();
    for (const auto& lacking : isolation_notes(g.host.isolation()))
      std::cerr << "lacking: " << lacking << "\n";
    std::cerr << std::flush;
    stdio = std::make_unique<StdioTransport>(
        g.io.get_executor(), endpoint, STDIN_FILENO, STDOUT_FILENO,
        effective_http_config(g.config).body_limit_bytes,
        // The client closed its end (or went away): the gateway stops, ending the sandbox.
        [] { ::kill(::getpid(), SIGTERM); });
  } else {
    auto bound = start_listening(server, g.config.http);
    if (!bound) return 2;
    announce_listening(g.config, *bound, g.host, g.state);
  }
  // Removed (stop()) when serve() returns: a clean exit leaves no socket behind.
  auto admin = open_admin_channel(g.config, g.io, g.registry, g.state, *g.connections);
  report_isolation(g.host, server);
  start_readiness_probe(g.background, g.host, server, g.environments);

  // SIGHUP: the tokens and policy files again (its default action would end the gateway).
  asio::signal_set reload_signal(g.io, SIGHUP);
  asio::co_spawn(g.io,
                 reload_credentials_on_sighup(reload_signal, g.config, g.credentials, g.registry,
                                              g.environments, g.upstreams),
                 asio::detached);
  GracefulShutdown shutdown(g.io, g.background, {server, g.registry, g.host, g.checkpoint},
                            g.config.shutdown_grace, [&reload_signal, &g] {
                              reload_signal.cancel();
                              if (g.environments) g.environments->stop();
                            });
  shutdown.arm();
  if (stdio) stdio->start();

  run_io_threads(g.io, thread_count(g.config));
  if (stdio) stdio->stop();
  g.registry.end_all();
  // Every sandbox is let go of now: their last records are put, and saved here.
  if (g.usage) g.usage->stop();
  g.host.shutdown();
  log_event(LogLevel::info, "stopped");
  return 0;
}

}  // namespace

int gateway_main(int argc, char** argv, char** envp, const GatewayExtras& extras) {
  // The same binary is every sandbox's supervisor (exec'd as /proc/self/exe).
  if (sandbox::is_supervisor_invocation(argc, argv)) sandbox::supervisor_main(argc, argv);
  // Writes to a closed pipe or socket are errors to handle, not a reason to die.
  ::signal(SIGPIPE, SIG_IGN);

  // `sandgate usage …`: the ledger's reader, with options of its own.
  if (argc >= 2 && std::string_view(argv[1]) == "usage")
    return usage_command(std::vector<std::string>(argv + 2, argv + argc), envp, std::cout,
                         std::cerr);
  // `sandgate environments …`: the environments' states, or their build ahead.
  if (argc >= 2 && std::string_view(argv[1]) == "environments")
    return environments_command(std::vector<std::string>(argv + 2, argv + argc), envp, std::cout,
                                std::cerr);
  // `sandgate sessions …`, `sandgate end …`, `sandgate connections …`: the admin channel of the
  // gateway running there.
  if (argc >= 2 && is_admin_verb(argv[1]))
    return admin_command(argv[1], std::vector<std::string>(argv + 2, argv + argc), envp, std::cout,
                         std::cerr);
  auto parsed = parse_config(argc, argv, envp);
  if (!parsed.config) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message;
    return parsed.exit_code;
  }
  init_logging(parsed.config->log_level);
  if (parsed.config->check_isolation) return check_isolation(*parsed.config);
  return run_gateway(*parsed.config, extras);
}

int check_isolation(const Config& config) {
  asio::io_context io;
  sandbox::HostConfig probe_only = config.host;
  probe_only.pool.size = 0;  // one probe sandbox, nothing built ahead
  sandbox::SandboxHost host(io.get_executor(), probe_only);
  std::cout << host.isolation().to_text();
  if (!host.isolation().usable()) return 1;
  auto probe = asio::co_spawn(io, host.self_test(), asio::use_future);
  while (probe.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  std::string problem = probe.get();
  std::cout << "probe sandbox: " << (problem.empty() ? "ok" : problem) << "\n";
  host.shutdown();
  return problem.empty() ? 0 : 1;
}

namespace {

// The sandboxes' host as the flags say, with what other parts add to every sandbox.
sandbox::HostConfig host_config_of(const Config& config,
                                   const egress::TlsTermination* termination) {
  sandbox::HostConfig host_config = config.host;
  if (termination) host_config.egress_ca_pem = termination->ca().certificate_pem();
  // With upstreams, every sandbox (the ready pool's included) has the tool channel's socket;
  // a tenant without upstreams finds nobody answering on it (Registry::equip).
  host_config.limits.tool_channel = !config.upstreams.file.empty();
  return host_config;
}

}  // namespace

int run_gateway(const Config& config, const GatewayExtras& extras) {
  Metrics metrics;
  Credentials credentials;
  try {
    credentials = load_credentials(config, metrics);
  } catch (const std::exception& e) {
    std::cerr << "sandgate: " << e.what() << "\n";
    return 2;
  }
  // Declared before the io_context, so destroyed after it: calls still pending at exit are
  // destroyed with the io_context, and their slot permits give back into a live CallSlots.
  session::CallSlots gateway_slots(config.calls.max_concurrent, config.calls.max_queued);
  asio::io_context io(static_cast<int>(thread_count(config)));
  auto background = asio::make_strand(io);
  // Hosts carrying a secret: the CA whose certificate the egress sandboxes trust (issue #44).
  std::shared_ptr<egress::TlsTermination> termination;
  try {
    termination = open_tls_termination(config);
  } catch (const std::exception& e) {
    std::cerr << "sandgate: the egress CA: " << e.what() << "\n";
    return 2;
  }
  sandbox::SandboxHost host(background, host_config_of(config, termination.get()));
  report_host_events(host);
  session::RegistryConfig registry_config = effective_registry_config(config);
  registry_config.egress_proxy.termination = termination;
  // Hibernation's store lives longer than the registry whose sessions use it.
  auto opened = open_state_store(config);
  if (!opened.fatal.empty()) {
    std::cerr << "sandgate: " << opened.fatal << "\n";
    return 2;
  }
  std::unique_ptr<session::StateStore> state = std::move(opened.store);
  session::Registry registry(background, registry_config, host, gateway_slots, state.get());
  auto connections = std::make_shared<egress::ConnectionHistory>();
  observe_egress(registry, metrics, connections);
  // Before sessions are restored: theirs are recorded too.
  std::unique_ptr<UsageLedger> usage = open_usage_ledger(config, registry, metrics, credentials);
  if (!usage) return 2;
  // Stopped (after a last save) before the registry goes: its hook asks the registry.
  OnScopeExit stop_usage([&usage] {
    if (usage) usage->stop();
  });
  // Before sessions are restored: those of tenants with upstreams get tool channels too.
  auto upstreams = open_upstreams(config, io.get_executor(), credentials, registry, metrics);
  if (!upstreams.fatal.empty()) {
    std::cerr << "sandgate: " << upstreams.fatal << "\n";
    return 2;
  }
  auto checkpoint = restore_and_checkpoint(background, registry, config, registry_config,
                                           state.get(), credentials);
  // The checkpoint goes before the registry: the registry must not call into it afterwards.
  OnScopeExit forget_checkpoint([&registry] { registry.on_removal_saved(nullptr); });
  connect_registry(registry, host, metrics);
  auto environments = open_environments(config, background, host, registry, metrics, credentials);
  if (!environments.fatal.empty()) {
    std::cerr << "sandgate: " << environments.fatal << "\n";
    return 2;
  }
  // The host outlives the registry: its hook must not call into a registry that is gone.
  OnScopeExit forget_make_room([&host] { host.set_make_room(nullptr); });
  return serve({config, extras, metrics, credentials, gateway_slots, io, background, host,
                state.get(), registry, usage.get(), checkpoint.get(),
                std::move(environments.environments), std::move(upstreams.upstreams),
                std::move(connections)});
}

}  // namespace sandgate::server
