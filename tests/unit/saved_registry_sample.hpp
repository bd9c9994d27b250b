#pragma once
// A saved registry of three entries and a scratch directory, for the tests of the registry file
// (saved_sessions_test.cpp) and of the registry's restart (registry_restart_test.cpp).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "session/saved_sessions.hpp"
#include "session/session_id.hpp"

namespace sandgate::test {

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-saved-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

inline session::SavedRegistry sample(const std::string& replica = "r1") {
  using session::SavedSandbox;
  using session::SessionKind;
  session::SavedRegistry r;
  r.replica = replica;
  r.sessions.push_back({session::new_session_id(replica), SessionKind::session, "alpha",
                        1'700'000'000'000, 1'700'000'100'000, 0.125, SavedSandbox::hibernated, ""});
  r.sessions.push_back({session::new_handle_id(replica), SessionKind::handle, "beta",
                        1'700'000'000'001, 1'700'000'000'002, 0.0, SavedSandbox::live, ""});
  r.sessions.push_back({session::new_session_id(replica), SessionKind::session, "alpha", 5, 6, 1e-7,
                        SavedSandbox::none, ""});
  return r;
}

}  // namespace sandgate::test
