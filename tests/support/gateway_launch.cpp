#include "tests/support/gateway_launch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>

namespace sandgate::test {

int free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
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

std::vector<std::string> sandgate_command(const std::string& binary,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& wrapper,
                                          const std::string& cgroup) {
  std::vector<std::string> argv = own_cgroup_wrapper(cgroup);
  argv.insert(argv.end(), wrapper.begin(), wrapper.end());
  for (std::string a : {binary, std::string("--listen"), std::string("127.0.0.1:0"),
                        std::string("--log-level"), std::string("warn")})
    argv.push_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace sandgate::test
