// The gateway's egress connections shared between tenants (egress/connection_shares).
#include "egress/connection_shares.hpp"

#include <catch2/catch.hpp>

TEST_CASE("a tenant holds at most its share of the gateway's egress connections",
          "[unit][egress]") {
  sandgate::egress::ConnectionShares shares(5, 2);
  CHECK(shares.take("alice").empty());
  CHECK(shares.take("alice").empty());
  CHECK(shares.take("alice") ==
        "this tenant already has its share of the gateway's egress connections (2) open");
  CHECK(shares.open_for("alice") == 2);
  CHECK(shares.take("bob").empty());
  CHECK(shares.take("bob").empty());
  CHECK(shares.take("carol").empty());
  // The gateway's 5 are all held: a tenant under its share is told that instead.
  CHECK(shares.take("dave") == "the gateway's egress connections are all in use; try again soon");
  shares.give_back("alice");
  CHECK(shares.take("dave").empty());
  CHECK(shares.open() == 5);
  // A place is given back when its holder goes; an unknown tenant's give_back changes nothing.
  { sandgate::egress::SharePlace place(shares, "dave"); }
  CHECK(shares.open_for("dave") == 0);
  shares.give_back("nobody");
  CHECK(shares.open() == 4);
}
