// Fair share of the gateway's call slots between tenants (session/fair_share).
#include "session/fair_share.hpp"

#include <catch2/catch.hpp>

using namespace sandgate;

TEST_CASE("fair share: a tenant at its cap waits, freed slots go to the tenant running fewest",
          "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(4, 8);
  // alpha may run 2 at once: its third call waits although two slots are free.
  CHECK(share.arrive("alpha", 2).kind == Kind::run);
  CHECK(share.arrive("alpha", 2).kind == Kind::run);
  auto alpha3 = share.arrive("alpha", 2);
  CHECK(alpha3.kind == Kind::wait);
  CHECK(share.free_slots() == 2);
  // beta is not kept behind alpha's waiting call.
  CHECK(share.arrive("beta", 2).kind == Kind::run);
  CHECK(share.arrive("beta", 2).kind == Kind::run);
  CHECK(share.free_slots() == 0);
  auto beta3 = share.arrive("beta", 2);
  auto gamma1 = share.arrive("gamma", 2);
  REQUIRE(beta3.kind == Kind::wait);
  REQUIRE(gamma1.kind == Kind::wait);
  CHECK(share.waiting() == 3);

  // A slot frees: gamma runs nothing yet, so it goes first, though it came last (FIFO across
  // tenants would have picked alpha's call).
  CHECK(share.finish("alpha") == gamma1.ticket);
  // beta's slot frees: alpha and beta now run one each; alpha started its last call longer ago.
  CHECK(share.finish("beta") == alpha3.ticket);
  CHECK(share.finish("gamma") == beta3.ticket);
  CHECK(share.waiting() == 0);
  CHECK(share.running("alpha") == 2);
  CHECK(share.running("beta") == 2);
  CHECK(share.running("gamma") == 0);
  // Nobody waits: finishing frees the slot.
  CHECK_FALSE(share.finish("alpha").has_value());
  CHECK(share.free_slots() == 1);
  // A tenant that never ran a call cannot give back a slot.
  CHECK_FALSE(share.finish("nobody").has_value());
  CHECK(share.free_slots() == 1);
}

TEST_CASE("fair share: one tenant cannot fill the waiting places", "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(1, 3);
  CHECK(share.arrive("alpha", 1).kind == Kind::run);
  auto a2 = share.arrive("alpha", 1), a3 = share.arrive("alpha", 1), a4 = share.arrive("alpha", 1);
  CHECK(a4.kind == Kind::wait);
  // Full: alone, alpha is refused, as a single FIFO queue would refuse it.
  CHECK(share.arrive("alpha", 1).kind == Kind::refused);
  // beta takes the place of alpha's newest waiting call.
  auto b1 = share.arrive("beta", 1);
  REQUIRE(b1.kind == Kind::wait);
  CHECK(b1.pushed_out == a4.ticket);
  // alpha 2 waiting, beta 1: taking another of alpha's would leave it fewer than beta's.
  CHECK(share.arrive("beta", 1).kind == Kind::refused);
  auto c1 = share.arrive("gamma", 1);
  CHECK(c1.pushed_out == a3.ticket);
  CHECK(share.waiting() == 3);
  // Then, as slots free, each tenant running nothing: alpha started a call most recently, so
  // beta and gamma go first.
  CHECK(share.finish("alpha") == b1.ticket);
  CHECK(share.finish("beta") == c1.ticket);
  CHECK(share.finish("gamma") == a2.ticket);
}

TEST_CASE("fair share: with one tenant whose cap is the pool it is a FIFO semaphore",
          "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(2, 2);
  CHECK(share.arrive("t", 2).kind == Kind::run);
  CHECK(share.arrive("t", 2).kind == Kind::run);
  auto w1 = share.arrive("t", 2), w2 = share.arrive("t", 2);
  CHECK(share.arrive("t", 2).kind == Kind::refused);
  CHECK(share.finish("t") == w1.ticket);
  CHECK(share.finish("t") == w2.ticket);
  CHECK_FALSE(share.finish("t").has_value());
  CHECK_FALSE(share.finish("t").has_value());
  CHECK(share.free_slots() == 2);
  // Nothing waits: a cap of 0 is taken as 1, never as "never runs".
  CHECK(share.arrive("u", 0).kind == Kind::run);
  CHECK(share.arrive("u", 0).kind == Kind::wait);
}
