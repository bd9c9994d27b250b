// The sandboxes' host uids stay clear of real accounts on a host; inside a user namespace the
// ids are the namespace's own.
#include <catch2/catch.hpp>

#include "sandbox/host.hpp"

using sandgate::sandbox::suid_dumpable_problem;
using sandgate::sandbox::uid_base_problem;

TEST_CASE("a low uid base is refused on a host, allowed in a user namespace", "[sandbox][uids]") {
  const std::string host = "         0          0 4294967295\n";
  const std::string pod = "         0     131072      65536\n";
  CHECK(uid_base_problem(10000, host).find("below 100000") != std::string::npos);
  CHECK(uid_base_problem(99999, host) != "");
  CHECK(uid_base_problem(100000, host) == "");
  CHECK(uid_base_problem(1000000, host) == "");
  // 10000 in a hostUsers: false pod.
  CHECK(uid_base_problem(10000, pod) == "");
  // A map with several ranges is a user namespace too.
  CHECK(uid_base_problem(10000, "0 0 1000\n1000 200000 65536\n") == "");
}

TEST_CASE("without a configured base, the sandboxes' ids fit where the gateway runs",
          "[sandbox][uids]") {
  using sandgate::sandbox::automatic_uid_base;
  const std::string host = "         0          0 4294967295\n";
  const std::string pod = "         0     131072      65536\n";
  // On a host (or a hostUsers: true pod): clear of real accounts.
  CHECK(automatic_uid_base(64, host, host) == 1000000);
  // In a hostUsers: false pod: inside its 65536 ids, above an image's own accounts.
  CHECK(automatic_uid_base(64, pod, pod) == 10000);
  // Too many sandboxes for 10000 + 2n to fit under 65536: the lowest base that fits.
  CHECK(automatic_uid_base(30000, pod, pod) == 1000);
  // A map of several ranges: the first range start at or above 10000 that holds them all.
  const std::string split = "0 100000 1000\n20000 300000 500\n40000 400000 5000\n";
  CHECK(automatic_uid_base(64, split, split) == 20000);
  CHECK(automatic_uid_base(1000, split, split) == 40000);
  // Ids must be mapped for groups too.
  CHECK(automatic_uid_base(1000, split, "0 100000 30000\n") == 1000000);
  // Nothing fits: the host default, which the isolation check then refuses with its reason.
  CHECK(automatic_uid_base(40000, pod, pod) == 1000000);
}

TEST_CASE("fs.suid_dumpable 1 refuses sandboxes, 0 and 2 do not", "[sandbox][isolation-check]") {
  CHECK(suid_dumpable_problem("1\n").find("fs.suid_dumpable is 1") != std::string::npos);
  CHECK(suid_dumpable_problem("0\n").empty());
  CHECK(suid_dumpable_problem("2\n").empty());
  CHECK(suid_dumpable_problem("").empty());  // not readable: the kernel's default, 0
}
