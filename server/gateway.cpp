#include "gateway.hpp"

#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <iostream>
#include <thread>

#include "auth/token_file.hpp"
#include "auth/token_store.hpp"
#include "http/http_server.hpp"
#include "isolation_notes.hpp"
#include "common/logging.hpp"
#include "mcp/mcp_endpoint.hpp"
#include "registry_checkpoint.hpp"
#include "sandbox/host.hpp"
#include "sandbox/inside/supervisor.hpp"
#include "session/registry.hpp"
#include "session/session_id.hpp"
#include "session/state_store.hpp"
#include "tools/standard_tools.hpp"
#include "tools/tool_registry.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

namespace {

std::optional<auth::TokenStore> load_tokens(const Config& config) {
  if (config.no_auth) return std::nullopt;
  if (config.token_file.empty()) return auth::TokenStore::single(config.token);
  auto loaded = auth::load_token_file(config.token_file);
  if (!loaded.warning.empty())
    log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
  return std::move(loaded.store);
}

// SIGHUP: the tokens file again, swapped in whole. Sessions stay (they belong to tenant names,
// not tokens); new sessions get the new per-tenant limits. A file that cannot be used keeps
// the tokens in force. Error texts name lines, never what is written on them.
void reload_tokens(const Config& config, auth::TokenStore* tokens) {
  if (!tokens || config.token_file.empty()) {
    log_event(LogLevel::warn, "tokens_reload_ignored",
              {{"reason", "SIGHUP reloads --token-file, and this gateway has none"}});
    return;
  }
  try {
    auto loaded = auth::load_token_file(config.token_file);
    if (!loaded.warning.empty())
      log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
    std::size_t count = loaded.store.size();
    tokens->replace(std::move(loaded.store));
    log_event(LogLevel::info, "tokens_reloaded", {{"tokens", count}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "tokens_reload_failed",
              {{"problem", e.what()}, {"kept_tokens", tokens->size()}});
  }
}

// The calls one tenant may run at once unless its tokens-file line says otherwise: half the
// pool, so that a tenant arriving while another is at its cap still finds slots; all of it
// where only one tenant can exist (one SANDGATE_TOKEN, or --no-auth).
std::uint32_t default_tenant_call_cap(const Config& config) {
  std::uint32_t pool = config.max_concurrent_calls;
  std::uint32_t set = config.registry.max_concurrent_calls_per_tenant;
  if (set) return std::min(set, pool);
  if (config.no_auth || config.token_file.empty()) return pool;
  return std::max<std::uint32_t>(1, pool / 2);
}

// A tenant's current policy by name, for sessions a restarted gateway serves again; nullopt
// when the tenant is gone from the tokens file (its sessions are dropped).
std::optional<session::TenantPolicy> tenant_policy(const Config& config,
                                                   const auth::TokenStore* tokens,
                                                   const std::string& name) {
  if (!tokens) {
    if (config.no_auth && name == "anonymous")
      return session::TenantPolicy{name, std::nullopt, std::nullopt, std::nullopt};
    return std::nullopt;
  }
  auto tenant = tokens->find_tenant(name);
  if (!tenant) return std::nullopt;
  return session::TenantPolicy{tenant->name, tenant->max_sessions, tenant->spend_cap_usd,
                               tenant->max_concurrent_calls};
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

}  // namespace

int gateway_main(int argc, char** argv, char** envp, const GatewayExtras& extras) {
  // The same binary is every sandbox's supervisor (exec'd as /proc/self/exe).
  if (sandbox::is_supervisor_invocation(argc, argv)) sandbox::supervisor_main(argc, argv);
  // Writes to a closed pipe or socket are errors to handle, not a reason to die.
  ::signal(SIGPIPE, SIG_IGN);

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
  sandbox::SandboxHost host(io.get_executor(), config.host);
  std::cout << host.isolation().to_text();
  if (!host.isolation().usable()) return 1;
  auto probe = asio::co_spawn(io, host.self_test(), asio::use_future);
  while (probe.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  std::string problem = probe.get();
  std::cout << "probe sandbox: " << (problem.empty() ? "ok" : problem) << "\n";
  host.shutdown();
  return problem.empty() ? 0 : 1;
}

int run_gateway(const Config& config, const GatewayExtras& extras) {
  std::optional<auth::TokenStore> tokens;
  try {
    tokens = load_tokens(config);
  } catch (const std::exception& e) {
    std::cerr << "sandgate: " << e.what() << "\n";
    return 2;
  }
  // Declared before the io_context, so destroyed after it: calls still pending at exit are
  // destroyed with the io_context, and their slot permits give back into a live CallSlots.
  session::CallSlots gateway_slots(config.max_concurrent_calls, config.max_queued_calls);
  asio::io_context io(static_cast<int>(thread_count(config)));
  auto background = asio::make_strand(io);
  sandbox::SandboxHost host(background, config.host);
  if (host.swept_at_start() > 0)
    log_event(LogLevel::warn, "swept_orphans", {{"cgroups", host.swept_at_start()}});
  session::RegistryConfig registry_config = config.registry;
  registry_config.max_concurrent_calls_per_tenant = default_tenant_call_cap(config);
  // Hibernation's store lives longer than the registry whose sessions use it.
  std::unique_ptr<session::StateStore> state;
  // With a --state-dir of its own choosing the operator keeps the registry and its archives
  // across restarts; a private default directory is removed at exit, as it always was.
  const bool keep_sessions = !config.state_dir.empty();
  if (config.registry.hibernate_after.count() > 0) {
    try {
      bool own_dir = config.state_dir.empty();
      state = std::make_unique<session::StateStore>(
          own_dir ? session::default_state_dir() : config.state_dir, config.state_max_bytes,
          own_dir, keep_sessions);
    } catch (const std::exception& e) {
      // A --state-dir that cannot be used is the operator's mistake; no writable default
      // (a read-only root without /tmp) only turns hibernation off.
      if (!config.state_dir.empty()) {
        std::cerr << "sandgate: " << e.what() << "\n";
        return 2;
      }
      log_event(LogLevel::warn, "hibernation_off", {{"why", e.what()}});
    }
  }
  if (state) {
    state->on_drop = [](const std::string& file, std::uint64_t bytes) {
      log_event(LogLevel::warn, "hibernation_archive_dropped",
                {{"file", file}, {"bytes", bytes}, {"why", "--state-max-mb reached"}});
    };
  }
  session::Registry registry(background, registry_config, host, gateway_slots, state.get());
  std::unique_ptr<RegistryCheckpoint> checkpoint;
  if (state && keep_sessions) {
    restore_saved_sessions(registry, *state, [&](const std::string& name) {
      return tenant_policy(config, tokens ? &*tokens : nullptr, name);
    });
    checkpoint = std::make_unique<RegistryCheckpoint>(background, registry, state->dir());
    asio::co_spawn(background, checkpoint->run(checkpoint_interval(registry_config)),
                   asio::detached);
  }
  if (state && state->left_over() > 0)
    log_event(LogLevel::warn, "swept_orphans", {{"hibernation_archives", state->left_over()}});
  registry.on_hibernate_failed = [](const std::string& file, const std::string& why) {
    log_event(LogLevel::warn, "hibernation_failed", {{"file", file}, {"why", why}});
  };
  Metrics metrics;
  registry.on_eviction([&metrics](const session::Eviction& e) {
    const char* reason = session::eviction_reason_name(e.reason);
    const bool sandbox_only = e.reason == session::EvictionReason::sandbox_cap ||
                              e.reason == session::EvictionReason::memory_budget;
    // Hibernated under pressure: counted apart from the idle sweep's hibernations.
    if (e.hibernated)
      metrics.count_pressure_hibernation(reason);
    else
      metrics.count_eviction(reason);
    const char* event = e.hibernated ? "sandbox_hibernated"
                                     : (sandbox_only ? "sandbox_evicted" : "session_evicted");
    log_event(LogLevel::info, event,
              {{"session", std::string(session::log_prefix(e.id))},
               {"tenant", e.tenant},
               {"kind", e.kind == session::SessionKind::handle ? "handle" : "session"},
               {"reason", reason},
               {"idle_s", e.idle.count()}});
  });
  host.set_make_room(
      [&registry](sandbox::Pressure pressure) { return registry.make_room(pressure); });
  // The host outlives the registry: its hook must not call into a registry that is gone.
  struct ForgetMakeRoom {
    sandbox::SandboxHost& host;
    ~ForgetMakeRoom() { host.set_make_room(nullptr); }
  } forget_make_room{host};
  ToolRegistry tools;
  add_standard_tools(tools, config, registry, metrics);
  if (extras.add_tools) extras.add_tools(tools, registry);
  McpEndpoint endpoint(config, tokens ? &*tokens : nullptr, registry, tools, metrics,
                       extras.extension);
  HttpServer server(io, config, endpoint, metrics, [&] {
    Gauges g{registry.size(), host.live_count(), 0, registry.spend_usd(), false};
    g.calls_waiting = gateway_slots.waiting();
    g.handles = registry.handles();
    if (state) {
      g.hibernated = registry.hibernated();
      g.state_bytes = state->bytes();
      g.hibernations = registry.idle_hibernations();
      g.resumes = state->resumes;
      g.archives_dropped = state->dropped;
    }
    return g;
  });

  asio::ip::tcp::endpoint bound;
  try {
    bound = server.start();
  } catch (const std::exception& e) {
    std::cerr << "sandgate: cannot listen on " << config.listen_host << ":" << config.listen_port
              << ": " << e.what() << "\n";
    return 2;
  }
  std::string scheme = config.tls_cert.empty() ? "http" : "https";
  std::string host_text = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                  : bound.address().to_string();
  std::cout << "sandgate listening on " << scheme << "://" << host_text << ":" << bound.port()
            << "/mcp" << std::endl;
  log_event(LogLevel::info, "listening",
            {{"address", host_text},
             {"port", bound.port()},
             {"tls", !config.tls_cert.empty()},
             {"auth", config.no_auth ? "off" : "on"},
             {"isolation", host.isolation().mode},
             {"cgroups", host.isolation().cgroups.describe()},
             {"sandbox_memory_budget_mib", host.isolation().cgroups.memory_budget >> 20},
             {"tenant_max_concurrent_calls", registry_config.max_concurrent_calls_per_tenant},
             {"state_dir", state ? state->dir() : std::string("(hibernation off)")}});
  auto notes = isolation_notes(host.isolation());
  for (const auto& note : notes) log_event(LogLevel::warn, "isolation_degraded", {{"note", note}});
  server.set_degraded_notes(std::move(notes));

  // Ready once a real sandbox has run a real program.
  if (!host.isolation().usable()) {
    server.set_not_ready_reason(host.isolation().problem);
    log_event(LogLevel::error, "isolation_refused", {{"problem", host.isolation().problem}});
  } else {
    asio::co_spawn(background, host.self_test(),
                   [&server](std::exception_ptr, std::string problem) {
                     if (problem.empty()) {
                       server.set_ready(true);
                       log_event(LogLevel::info, "ready");
                     } else {
                       server.set_not_ready_reason("sandbox self-test failed: " + problem);
                       log_event(LogLevel::error, "self_test_failed", {{"problem", problem}});
                     }
                   });
  }

  // SIGHUP: the tokens file again (its default action would end the gateway).
  asio::signal_set reload_signal(io, SIGHUP);
  std::function<void()> wait_for_reload = [&] {
    reload_signal.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      reload_tokens(config, tokens ? &*tokens : nullptr);
      wait_for_reload();
    });
  };
  wait_for_reload();

  // Shutdown, phase one: stop accepting, end every session (running calls end with a tool
  // error), close idle connections. Phase two, after the grace period: stop everything.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::steady_timer grace(io);
  std::function<void()> wait_for_drain = [&] {
    if (server.open_connections() == 0 || std::chrono::steady_clock::now() >= grace.expiry()) {
      io.stop();
      return;
    }
    asio::steady_timer* poll = new asio::steady_timer(io, std::chrono::milliseconds(50));
    poll->async_wait([&, poll](auto) {
      delete poll;
      wait_for_drain();
    });
  };
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    log_event(LogLevel::info, "shutdown", {{"signal", signal}, {"sessions", registry.size()}});
    server.set_ready(false);
    reload_signal.cancel();
    server.stop_accepting();
    grace.expires_after(config.shutdown_grace);
    if (!checkpoint) {
      registry.end_all();
      host.shutdown();
      wait_for_drain();
      return;
    }
    // Restart survival: idle sandboxes are hibernated (within half the grace period), the
    // registry is written, and only then are the sessions let go of, their archives kept.
    // Calls in flight end as without it.
    auto deadline = std::chrono::steady_clock::now() + config.shutdown_grace / 2;
    asio::co_spawn(
        background, registry.hibernate_all_idle(deadline),
        [&](std::exception_ptr, std::size_t hibernated) {
          bool saved = checkpoint->finish();
          log_event(
              LogLevel::info, "sessions_saved",
              {{"sessions", registry.size()}, {"hibernated_now", hibernated}, {"written", saved}});
          registry.release_all("the gateway is restarting");
          host.shutdown();
          wait_for_drain();
        });
  });

  std::vector<std::thread> threads;
  for (unsigned i = 1; i < thread_count(config); ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  registry.end_all();
  host.shutdown();
  log_event(LogLevel::info, "stopped");
  return 0;
}

}  // namespace sandgate::server
