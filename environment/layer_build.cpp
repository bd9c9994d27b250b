#include "layer_build.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "egress/relay.hpp"
#include "environment/build_disk_watch.hpp"

namespace sandgate::environment {
namespace asio = boost::asio;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
// The verify command proves the layer; it has no reason to run for long.
constexpr std::chrono::seconds kVerifyTimeout{300};

// The relay's view of a build's sandbox: bytes go to its spend (whose cap is out of reach: an
// operator's build is not a tenant's call), and the per-call cap counts from its one call.
class BuildEgressAccount final : public egress::RelayAccount {
 public:
  explicit BuildEgressAccount(std::weak_ptr<sandbox::Sandbox> sandbox)
      : sandbox_(std::move(sandbox)) {}
  bool charge(std::uint64_t bytes) override {
    auto sandbox = sandbox_.lock();
    return sandbox && sandbox->charge_egress(bytes);
  }
  std::uint64_t call_number() const override {
    auto sandbox = sandbox_.lock();
    return sandbox ? sandbox->calls_started() : 0;
  }

 private:
  std::weak_ptr<sandbox::Sandbox> sandbox_;
};

std::string joined(const std::vector<std::string>& entries) {
  std::string out;
  for (const auto& entry : entries) out += (out.empty() ? "" : ",") + entry;
  return out;
}

void start_build_egress(const std::shared_ptr<sandbox::Sandbox>& sandbox,
                        const Definition& definition, const BuildServices& services,
                        const asio::any_io_executor& executor) {
  UniqueFd listener = sandbox->take_egress_listener();
  if (!listener || !services.proxy || !services.shares) return;
  auto policy = std::make_shared<egress::TenantEgress>();
  policy->allowed = egress::AllowList::parse(joined(definition.egress));
  policy->max_bytes_per_call = 64 * kGiB;
  policy->max_bytes_per_sandbox = 64 * kGiB;
  egress::RelayLabels labels{"environment:" + definition.name, "build", sandbox->id()};
  auto relay = egress::Relay::start(executor, std::move(listener), std::move(policy),
                                    std::make_shared<BuildEgressAccount>(sandbox), services.proxy,
                                    services.shares, std::move(labels));
  sandbox->when_ended([relay] { relay->stop(); });
}

// What went wrong with a run that did not exit 0, in words; "" when it did.
std::string run_problem(const sandbox::RunResult& run, const std::string& step,
                        std::chrono::seconds timeout) {
  switch (run.outcome) {
    case sandbox::RunOutcome::timed_out:
      return "the " + step + " ran past its " + std::to_string(timeout.count()) + " s";
    case sandbox::RunOutcome::cancelled:
      return "the " + step + " was cancelled";
    case sandbox::RunOutcome::sandbox_ended:
      return "the " + step + "'s sandbox ended: " + run.failure;
    case sandbox::RunOutcome::completed:
      break;
  }
  if (run.oom_killed) return "the " + step + " ran out of memory";
  if (run.signal != 0) return "the " + step + " was killed by signal " + std::to_string(run.signal);
  if (run.exit_code != 0)
    return "the " + step + " exited with status " + std::to_string(run.exit_code);
  return "";
}

std::string output_of(const std::string& step, const sandbox::RunResult& run) {
  return "--- " + step + " stdout\n" + run.stdout_text + "\n--- " + step + " stderr\n" +
         run.stderr_text + "\n";
}

// Runs `script` in a sandbox made with `limits`, ended before this returns (its processes gone);
// "" when it exited 0, else why not. `egress_for`: start the build's relay. A writable layer is
// watched while the script runs: past `max_layer_bytes` the sandbox ends.
asio::awaitable<std::string> run_in_sandbox(sandbox::Limits limits, std::string script,
                                            std::string step, std::chrono::seconds timeout,
                                            const Definition* egress_for,
                                            const BuildServices& services, std::string& output,
                                            std::uint64_t max_layer_bytes = 0) {
  std::shared_ptr<sandbox::Sandbox> sandbox;
  try {
    sandbox = co_await services.host->create(limits);
  } catch (const sandbox::SandboxError& e) {
    co_return "the " + step + "'s sandbox could not be made: " + e.what();
  }
  // Behind the sessions' calls: a build never slows a tenant down.
  sandbox->warm_in_background();
  if (egress_for)
    start_build_egress(sandbox, *egress_for, services, co_await asio::this_coro::executor);
  sandbox::RunRequest request;
  request.language = sandbox::Language::bash;
  request.code = std::move(script);
  request.timeout = timeout;
  request.fresh = true;
  std::optional<BuildDiskWatch> watch;
  if (limits.layer_writable)
    watch.emplace(limits.layer_dir, max_layer_bytes,
                  [weak = std::weak_ptr(sandbox)](std::string why) {
                    if (auto running = weak.lock()) running->end(sandbox::EndReason::failed, why);
                  });
  auto run = co_await sandbox->run(std::move(request));
  // Every process of it is gone once end() returns (its pid namespace's init is reaped).
  sandbox->end(sandbox::EndReason::closed, "the " + step + " ended");
  std::string too_large = watch ? watch->tripped() : "";
  watch.reset();
  output += output_of(step, run);
  if (!too_large.empty()) co_return too_large;
  co_return run_problem(run, step, timeout);
}

}  // namespace

sandbox::Limits build_limits(const sandbox::Limits& gateway, const Definition& definition) {
  sandbox::Limits limits = gateway;
  limits.memory_bytes = std::max<std::uint64_t>(limits.memory_bytes, 2 * kGiB);
  limits.work_bytes = std::max<std::uint64_t>(limits.work_bytes, kGiB);
  limits.tmp_bytes = std::max<std::uint64_t>(limits.tmp_bytes, kGiB);
  limits.output_bytes = 64 << 10;
  limits.spend_cap_usd = 1'000;
  limits.lifetime = definition.build_timeout + std::chrono::seconds(60);
  limits.egress = !definition.egress.empty();
  limits.tool_channel = false;  // a build calls no tenant's tools
  return limits;
}

asio::awaitable<BuildOutcome> build_layer(Definition definition, std::string hash,
                                          LayerStore& store, BuildServices services) {
  BuildOutcome outcome;
  std::string dir;
  try {
    dir = store.begin_build(hash);
  } catch (const std::exception& e) {
    outcome.reason = std::string("the build's directory could not be made: ") + e.what();
    co_return outcome;
  }
  sandbox::Limits setup_limits = build_limits(services.host->config().limits, definition);
  setup_limits.layer_dir = dir;
  setup_limits.layer_writable = true;
  outcome.reason =
      co_await run_in_sandbox(setup_limits, definition.setup, "setup", definition.build_timeout,
                              setup_limits.egress ? &definition : nullptr, services, outcome.output,
                              definition.max_size_bytes);
  std::uint64_t size = 0;
  if (outcome.reason.empty()) {
    try {
      size = store.seal(dir, definition.max_size_bytes);
    } catch (const std::exception& e) {
      outcome.reason = e.what();
    }
  }
  if (outcome.reason.empty()) {
    // The finished layer alone: read-only, no egress, the gateway's own limits.
    sandbox::Limits verify_limits = services.host->config().limits;
    verify_limits.layer_dir = dir;
    verify_limits.egress = false;
    verify_limits.tool_channel = false;
    verify_limits.output_bytes = 64 << 10;
    auto timeout = std::min(definition.build_timeout, kVerifyTimeout);
    verify_limits.lifetime = timeout + std::chrono::seconds(60);
    outcome.reason = co_await run_in_sandbox(verify_limits, definition.verify, "verify", timeout,
                                             nullptr, services, outcome.output);
  }
  if (outcome.reason.empty()) {
    try {
      outcome.layer = store.commit(dir, hash, definition.name, size);
    } catch (const std::exception& e) {
      outcome.reason = std::string("the layer could not be stored: ") + e.what();
    }
  }
  if (!outcome.layer) store.discard(dir);
  co_return outcome;
}

}  // namespace sandgate::environment
