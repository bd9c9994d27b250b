#include "postgres_cluster.hpp"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/gateway_launch.hpp"

namespace sandgate::test {
namespace {

const std::filesystem::path kBin = "/usr/lib/postgresql/15/bin";

bool as_root() {
  return ::geteuid() == 0;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<std::string> PostgresCluster::missing() {
  for (const char* tool : {"initdb", "pg_ctl", "postgres", "psql"})
    if (!std::filesystem::exists(kBin / tool))
      return "PostgreSQL 15 is not installed (no " + (kBin / tool).string() +
             "; scripts/install-deps.sh installs it)";
  if (as_root() && ::getpwnam("postgres") == nullptr)
    return "running as root and there is no `postgres` user to run the cluster as";
  return std::nullopt;
}

int PostgresCluster::run(const std::string& command) const {
  // runuser keeps the environment minimal enough; the cluster's files are the user's.
  std::string line = (as_root() ? "runuser -u postgres -- " : "") + command + " >> '" +
                     (dir_ / "commands.log").string() + "' 2>&1";
  int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

PostgresCluster::PostgresCluster() {
  if (auto why = missing()) throw std::runtime_error(*why);
  char pattern[] = "/tmp/sandgate-pg-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  // The gateways (root) read the password file; the cluster's owner writes the data folder.
  { std::ofstream(dir_ / "password") << "pw-" << ::getpid() << "-" << port_ << "\n"; }
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_all |
                                         std::filesystem::perms::group_exec |
                                         std::filesystem::perms::others_exec);
  std::filesystem::create_directory(dir_ / "data");
  std::ofstream(dir_ / "commands.log").close();
  if (as_root()) {
    const passwd* pw = ::getpwnam("postgres");
    for (const auto& p : {dir_, dir_ / "data", dir_ / "password", dir_ / "commands.log"})
      if (::chown(p.c_str(), pw->pw_uid, pw->pw_gid) != 0)
        throw std::runtime_error("chown " + p.string() + " failed");
  }
  port_ = free_port();
  if (run((kBin / "initdb").string() + " -D '" + (dir_ / "data").string() +
          "' -U sandgate --auth-host=scram-sha-256 --auth-local=trust --pwfile='" +
          (dir_ / "password").string() + "' --no-sync -E UTF8 --locale=C") != 0)
    throw std::runtime_error("initdb failed: " + slurp(dir_ / "commands.log"));
  start();
}

PostgresCluster::~PostgresCluster() {
  if (running_)
    run((kBin / "pg_ctl").string() + " -D '" + (dir_ / "data").string() + "' -m immediate stop");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PostgresCluster::start() {
  // Loopback TCP only, the socket in the cluster's own folder; fsync off (a throwaway cluster).
  if (run((kBin / "pg_ctl").string() + " -D '" + (dir_ / "data").string() + "' -l '" +
          (dir_ / "server.log").string() + "' -w -t 60 -o \"-p " + std::to_string(port_) + " -k '" +
          dir_.string() + "' -c listen_addresses=127.0.0.1 -c fsync=off\" start") != 0)
    throw std::runtime_error("pg_ctl start failed: " + slurp(dir_ / "commands.log") +
                             slurp(dir_ / "server.log"));
  running_ = true;
}

void PostgresCluster::stop() {
  if (run((kBin / "pg_ctl").string() + " -D '" + (dir_ / "data").string() + "' -m fast -w stop") !=
      0)
    throw std::runtime_error("pg_ctl stop failed: " + slurp(dir_ / "commands.log"));
  running_ = false;
}

std::string PostgresCluster::url() const {
  return "postgresql://sandgate@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

std::string PostgresCluster::psql(const std::string& sql) const {
  const auto out = dir_ / "psql.out";
  std::ofstream(dir_ / "query.sql") << sql << "\n";
  std::string command = (as_root() ? "runuser -u postgres -- " : std::string()) +
                        (kBin / "psql").string() + " -X -q -At -v ON_ERROR_STOP=1 -h '" +
                        dir_.string() + "' -p " + std::to_string(port_) +
                        " -U sandgate -d postgres -f '" + (dir_ / "query.sql").string() + "' > '" +
                        out.string() + "' 2>&1";
  int status = std::system(command.c_str());
  std::string text = slurp(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("psql failed: " + text);
  return text;
}

}  // namespace sandgate::test
