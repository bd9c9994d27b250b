#pragma once
// A scratch directory for a test's gateways: a tokens file for two tenants ("tok-a" is tenant
// a, "tok-b" is tenant b) and a path for a state directory; removed, with everything the
// gateways wrote there, when the test ends.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "auth/token_store.hpp"

namespace sandgate::test {

struct TwoTenantDir {
  // `a_options`: what tenant a's line says after its name (e.g. "budget_usd_per_day=2").
  explicit TwoTenantDir(const std::string& purpose, const std::string& a_options = "")
      : dir(std::filesystem::temp_directory_path() /
            ("sandgate-" + purpose + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
    std::ofstream(tokens) << auth::to_hex(auth::sha256("tok-a")) << " a " << a_options << "\n"
                          << auth::to_hex(auth::sha256("tok-b")) << " b\n";
    ::chmod(tokens.c_str(), 0600);
  }
  ~TwoTenantDir() { std::filesystem::remove_all(dir); }
  TwoTenantDir(const TwoTenantDir&) = delete;
  TwoTenantDir& operator=(const TwoTenantDir&) = delete;

  std::filesystem::path dir;
  std::filesystem::path tokens = dir / "tokens";
  std::filesystem::path state = dir / "state";
};

}  // namespace sandgate::test
