#pragma once
// A real package index for the tests that install packages through the gateway's egress proxy
// (egress_test.cpp, environments_test.cpp): tests/support/package_index.py on 127.0.0.2 — not
// 127.0.0.1, which a sandbox's NO_PROXY sends to its own loopback — and the names the gateway's
// resolver gives it, through an /etc/hosts of its own (hosts_wrapper).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "tests/support/skip.hpp"

namespace sandgate::test {

inline std::string digest(const std::string& token) {
  return sandgate::auth::to_hex(sandgate::auth::sha256(token));
}

// The index: HTTPS on `port` and plain HTTP on `plain_port`, both on 127.0.0.2, its certificate
// covering index.sandgate.test and other.sandgate.test (so that only the proxy's SNI check, not
// certificate verification, can refuse a ClientHello naming the other).
class PackageIndex {
 public:
  PackageIndex()
      : dir_(std::filesystem::temp_directory_path() /
             ("sandgate-index-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    std::string json_file = (dir_ / "index.json").string();
    server_.emplace("package index",
                    std::vector<std::string>{"/usr/bin/python3", PACKAGE_INDEX_SCRIPT, "--dir",
                                             dir_.string(), "--host", "127.0.0.2", "--name",
                                             "index.sandgate.test", "--name", "other.sandgate.test",
                                             "--plain-http-port", "0", "--json-file", json_file},
                    std::vector<std::string>{"PATH=/usr/bin:/bin"}, LaunchOptions{});
    std::ifstream in(json_file);
    json announced = json::parse(in);
    port = announced["port"].get<int>();
    plain_port = announced["plain_port"].get<int>();
    std::ifstream ca_file(announced["ca"].get<std::string>());
    ca = std::string((std::istreambuf_iterator<char>(ca_file)), {});
  }
  ~PackageIndex() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  int port = 0;
  int plain_port = 0;
  std::string ca;

 private:
  std::filesystem::path dir_;
  std::optional<ServerProcess> server_;
};

// The test's names, for the gateway's resolver.
inline constexpr const char* kHosts =
    "127.0.0.1 localhost\n"
    "127.0.0.2 index.sandgate.test other.sandgate.test\n"
    "169.254.169.254 metadata.sandgate.test\n"
    "10.20.30.40 private.sandgate.test\n";

// Runs the gateway in a mount namespace of its own with `hosts` over /etc/hosts (sh execs it:
// the process is the gateway's).
inline std::vector<std::string> hosts_wrapper(const std::string& hosts) {
  return {"/usr/bin/unshare",
          "-m",
          "--propagation",
          "private",
          "/bin/sh",
          "-c",
          "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
          hosts};
}

// Whether this test may give the gateway an /etc/hosts of its own (a mount namespace: root);
// skips it, saying so, where not.
inline bool can_run_with_own_hosts() {
  if (::geteuid() != 0) {
    skip_test("root", "the gateway's own /etc/hosts needs a mount namespace (root)");
    return false;
  }
  return true;
}

}  // namespace sandgate::test
