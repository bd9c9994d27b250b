// What hibernation costs: packing a sandbox's /work (inside the sandbox, tar + gzip -1) and
// resuming it (a fresh sandbox, then the archive unpacked inside it), for 10 MiB of /work,
// incompressible (random) and text-like; and the resume into a ready sandbox from the pool
// (warm starts). Prints Markdown.
//
//   hibernate_bench [iterations]
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <iostream>
#include <vector>

#include "bench/common/await.hpp"
#include "bench/common/measure.hpp"
#include "sandbox/host.hpp"
#include "sandbox/inside/supervisor.hpp"

namespace sb = sandgate::sandbox;
using namespace sandgate::bench;

int main(int argc, char** argv) {
  if (sb::is_supervisor_invocation(argc, argv)) sb::supervisor_main(argc, argv);
  int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  boost::asio::io_context io;
  sb::HostConfig config;
  config.limits.work_bytes = 64ull << 20;
  sb::SandboxHost host(io.get_executor(), config);
  // The same resume into a ready sandbox from the pool (warm starts): a host keeping one.
  sb::HostConfig pooled_config = config;
  pooled_config.pool = {1, {"numpy", "pandas", "matplotlib.pyplot"}};
  pooled_config.uid_base = config.uid_base + 2 * config.max_sandboxes;
  sb::SandboxHost pooled(io.get_executor(), pooled_config);
  if (!host.isolation().usable()) {
    std::cerr << "sandboxes unavailable: " << host.isolation().problem << "\n";
    return 1;
  }
  struct Kind {
    const char* name;
    const char* make;
  };
  const Kind kinds[] = {
      {"10 MiB random", "head -c 10485760 /dev/urandom > /work/data"},
      {"10 MiB text (100 files)",
       "for i in $(seq 100); do seq 1 20000 | head -c 104857 > /work/f$i.txt; done"},
  };
  std::cout << "| /work | archive KiB | pack p50 ms | create p50 ms | resume p50 ms (create + "
               "restore) | resume p90 ms | resume into a ready sandbox p50 ms | p90 ms |\n"
               "|---|---|---|---|---|---|---|---|\n";
  // Runs the io_context (and with it the pooled host's refill) until it holds a ready sandbox:
  // its build must not run beside the timings of the host without a pool.
  auto pool_filled = [&] {
    auto give_up = Clock::now() + std::chrono::seconds(120);
    while (pooled.pool_stats().ready == 0 && Clock::now() < give_up) {
      io.restart();
      io.run_for(std::chrono::milliseconds(20));
    }
    return pooled.pool_stats().ready > 0;
  };
  for (const auto& kind : kinds) {
    if (!pool_filled()) {
      std::cerr << "the pool never filled\n";
      return 1;
    }
    auto first = await(io, host.create(config.limits));
    sb::RunRequest make;
    make.language = sb::Language::bash;
    make.code = kind.make;
    make.fresh = true;
    await(io, first->run(make));
    std::vector<double> pack, create, resume;
    sandgate::UniqueFd archive;  // the last pack's memfd, restored from in place
    std::uint64_t archive_size = 0;
    for (int i = 0; i < iterations; ++i) {
      auto t = Clock::now();
      auto packed = await(io, first->pack_work());
      pack.push_back(ms_since(t));
      if (!packed.done) {
        std::cerr << "pack failed: " << packed.failure << "\n";
        return 1;
      }
      archive = std::move(packed.fd);
      archive_size = packed.size;
    }
    first->end(sb::EndReason::closed);
    for (int i = 0; i < iterations; ++i) {
      auto t = Clock::now();
      auto fresh = await(io, host.create(config.limits));
      create.push_back(ms_since(t));
      auto restored = await(io, fresh->restore_work(sandgate::UniqueFd(::dup(archive.get()))));
      resume.push_back(ms_since(t));
      if (!restored.done) {
        std::cerr << "restore failed: " << restored.failure << "\n";
        return 1;
      }
      fresh->end(sb::EndReason::closed);
    }
    std::vector<double> ready_resume;
    for (int i = 0; i < iterations; ++i) {
      // Untimed: the pool builds its next ready sandbox (a new conversation at its pace).
      pool_filled();
      auto hits = pooled.pool_stats().hits;
      auto t = Clock::now();
      auto fresh = await(io, pooled.create(pooled_config.limits));
      auto restored = await(io, fresh->restore_work(sandgate::UniqueFd(::dup(archive.get()))));
      ready_resume.push_back(ms_since(t));
      if (!restored.done || pooled.pool_stats().hits != hits + 1) {
        std::cerr << "resume into a ready sandbox failed: " << restored.failure << "\n";
        return 1;
      }
      fresh->end(sb::EndReason::closed);
    }
    auto r = stats(resume), p = stats(ready_resume);
    std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", kind.name,
                archive_size >> 10, stats(pack).p50, stats(create).p50, r.p50, r.p90, p.p50, p.p90);
  }
  std::cout << "\n" << machine() << ", " << iterations << " iterations each\n";
  host.shutdown();
  pooled.shutdown();
  io.restart();
  io.run_for(std::chrono::seconds(1));
  return 0;
}
