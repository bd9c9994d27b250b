#include "tests/support/gateway_launch.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace sandgate::test {

int free_port() {
  // Below the kernel's ephemeral range (32768 up), in a block of 8 ports of this test process's
  // own: tests run side by side, and a port that bind(0) handed out and gave back could be handed
  // to another test's gateway before this one's listens on it.
  static int next = 0;
  boost::asio::io_context io;
  const auto loopback = boost::asio::ip::make_address("127.0.0.1");
  for (int tries = 0; tries < 8; ++tries) {
    auto port = static_cast<unsigned short>(20000 + (::getpid() % 1500) * 8 + (next++ % 8));
    boost::system::error_code ec;
    boost::asio::ip::tcp::acceptor a(io);
    a.open(boost::asio::ip::tcp::v4(), ec);
    if (!ec) a.bind({loopback, port}, ec);
    if (!ec) return port;
  }
  boost::asio::ip::tcp::acceptor a(io, {loopback, 0});
  return a.local_endpoint().port();
}

std::vector<std::string> own_cgroup_wrapper(const std::string& name) {
  const char* parent = std::getenv("SANDGATE_TEST_CGROUP_PARENT");
  if (!parent) return {};
  return {"/bin/sh", "-c",
          "d=\"$0/${1:-gw-$$}\"; shift; mkdir -p \"$d\" || exit 1; "
          "if [ -d \"$d/sandgate-gateway\" ]; then d=\"$d/sandgate-gateway\"; fi; "
          "echo 0 > \"$d/cgroup.procs\" && exec \"$@\"",
          parent, name};
}

std::string own_cgroup_shell_prefix() {
  std::string prefix;
  for (const auto& word : own_cgroup_wrapper()) {
    std::string quoted;
    for (char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    prefix += "'" + quoted + "' ";
  }
  return prefix;
}

std::optional<IdRange> own_sandbox_ids() {
  std::ifstream map("/proc/self/uid_map");
  std::uint64_t inside = 1, outside = 1, count = 0;
  if (!(map >> inside >> outside >> count) || inside != 0 || outside != 0 || count != 4294967295u)
    return std::nullopt;
  constexpr std::uint32_t kIds = 4096;
  return IdRange{static_cast<std::uint32_t>(10'000'000 + (::getpid() % 900'000) * kIds), kIds};
}

std::vector<std::string> sandgate_command(const std::string& binary,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& wrapper,
                                          const std::string& cgroup) {
  std::vector<std::string> argv = own_cgroup_wrapper(cgroup);
  argv.insert(argv.end(), wrapper.begin(), wrapper.end());
  // No pool unless a test asks for one (a ready sandbox's build is seconds of CPU), or the
  // ctest entry that runs a share of the suite as production runs, pool on, sets
  // SANDGATE_TEST_POOL_SIZE. A test's own --pool-size comes later and wins.
  const char* pool = std::getenv("SANDGATE_TEST_POOL_SIZE");
  std::string pool_size = pool != nullptr && *pool != '\0' ? pool : "0";
  for (std::string a :
       {binary, std::string("--listen"), std::string("127.0.0.1:0"), std::string("--log-level"),
        std::string("warn"), std::string("--pool-size"), pool_size})
    argv.push_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  bool chosen = false;
  for (const auto& a : args) chosen = chosen || a == "--sandbox-uid-base";
  if (auto ids = own_sandbox_ids(); ids && !chosen) {
    argv.push_back("--sandbox-uid-base");
    argv.push_back(std::to_string(ids->first));
  }
  return argv;
}

}  // namespace sandgate::test
