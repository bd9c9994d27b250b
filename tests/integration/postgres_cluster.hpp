#pragma once
// A real, throwaway PostgreSQL 15 for the ledger's tests (issue #28): a cluster made with
// initdb in a temporary folder, started with pg_ctl on a free loopback port, its superuser
// `sandgate` with a password (scram-sha-256 over TCP, as a deployment would have it), and
// removed afterwards. initdb refuses to run as root: as root the cluster runs as the `postgres`
// user the Debian package made.
#include <filesystem>
#include <optional>
#include <string>

namespace sandgate::test {

class PostgresCluster {
 public:
  // Why no cluster can be made here (PostgreSQL 15's binaries missing, no unprivileged user to
  // run them as), or nullopt.
  static std::optional<std::string> missing();

  PostgresCluster();  // made and started; throws std::runtime_error with initdb's or pg_ctl's log
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // postgresql://sandgate@127.0.0.1:PORT/postgres — without the password.
  std::string url() const;
  // A file (readable by the test's gateways) holding the password.
  std::string password_file() const { return (dir_ / "password").string(); }
  int port() const { return port_; }

  // Stops the server (fast: open connections are cut) and starts it again, on the same port.
  void stop();
  void start();
  // Runs `sql` with psql as the superuser; its output, rows on lines, fields split by '|'.
  std::string psql(const std::string& sql) const;

 private:
  // `command` as the cluster's owner; its exit status.
  int run(const std::string& command) const;

  std::filesystem::path dir_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace sandgate::test
