// The session's account: spend and age across its sandboxes, and what a new sandbox gets.
#include "session/session_account.hpp"

#include <catch2/catch.hpp>

using sandgate::session::SessionAccount;
using namespace std::chrono_literals;

TEST_CASE("a session's account carries spend and age from one sandbox to the next",
          "[unit][spend]") {
  sandgate::sandbox::Limits limits;
  limits.spend_cap_usd = 1.0;
  limits.lifetime = 60s;
  auto t0 = SessionAccount::Clock::now();
  SessionAccount account(limits, t0);
  CHECK(account.closed_reason(t0) == "");
  auto first = account.remaining(limits, t0 + 10s);
  CHECK(first.spend_cap_usd == Approx(1.0));
  CHECK(first.lifetime == 50s);
  CHECK(first.memory_bytes == limits.memory_bytes);  // everything else is the session's limits

  account.settle(0.4);  // a sandbox failed after spending $0.40
  account.settle(-1);   // never a credit
  auto second = account.remaining(limits, t0 + 20s + 300ms);
  CHECK(second.spend_cap_usd == Approx(0.6));
  CHECK(second.lifetime == 40s);  // 39.7 s, rounded up
  CHECK(account.closed_reason(t0 + 20s) == "");

  account.settle(0.6);
  CHECK(account.closed_reason(t0 + 20s) == "it has spent its $1.00 spend cap (spent $1.00)");
}

TEST_CASE("a session's lifetime is over at its end, whatever its sandboxes did",
          "[unit][lifetime]") {
  sandgate::sandbox::Limits limits;
  limits.lifetime = 3s;
  auto t0 = SessionAccount::Clock::now();
  SessionAccount account(limits, t0);
  CHECK(account.closed_reason(t0 + 2999ms) == "");
  CHECK(account.closed_reason(t0 + 3s) == "its lifetime of 3 s is over");
  // Never a lifetime below a second for a sandbox started just before the end.
  CHECK(account.remaining(limits, t0 + 2999ms).lifetime == 1s);
}
