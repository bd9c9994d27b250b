// The sandboxes' host uids stay clear of real accounts on a host; inside a user namespace the
// ids are the namespace's own.
#include <catch2/catch.hpp>

#include "sandbox/host.hpp"

using sandgate::sandbox::uid_base_problem;

TEST_CASE("a low uid base is refused on a host, allowed in a user namespace", "[sandbox][uids]") {
  const std::string host = "         0          0 4294967295\n";
  const std::string pod = "         0     131072      65536\n";
  CHECK(uid_base_problem(10000, host).find("below 100000") != std::string::npos);
  CHECK(uid_base_problem(99999, host) != "");
  CHECK(uid_base_problem(100000, host) == "");
  CHECK(uid_base_problem(1000000, host) == "");
  // The ConfigMap's 10000 in a hostUsers: false pod.
  CHECK(uid_base_problem(10000, pod) == "");
  // A map with several ranges is a user namespace too.
  CHECK(uid_base_problem(10000, "0 0 1000\n1000 200000 65536\n") == "");
}
