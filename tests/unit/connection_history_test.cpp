#include "egress/connection_history.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::egress;
using Clock = ConnectionHistory::Clock;

namespace {

ConnectionHistory::Record record(const std::string& tenant, const std::string& session,
                                 const std::string& host, std::uint16_t port = 443) {
  ConnectionHistory::Record r;
  r.tenant = tenant;
  r.session = session;
  r.host = host;
  r.port = port;
  r.method = "CONNECT";
  r.outcome = "relayed";
  return r;
}

std::vector<std::string> hosts_of(const std::vector<ConnectionHistory::Record>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.host);
  return out;
}

}  // namespace

TEST_CASE("the connection history lists a tenant's or a session's connections, oldest first",
          "[unit][egress]") {
  ConnectionHistory history;
  const auto t0 = Clock::now();
  history.add(record("a", "aaaa0001", "one.example"), t0);
  history.add(record("b", "bbbb0001", "two.example"), t0 + std::chrono::seconds(1));
  history.add(record("a", "aaaa0002", "three.example"), t0 + std::chrono::seconds(2));
  const auto now = t0 + std::chrono::seconds(3);

  CHECK(hosts_of(history.find({"a", "", {}}, now)) ==
        std::vector<std::string>{"one.example", "three.example"});
  CHECK(hosts_of(history.find({"b", "", {}}, now)) == std::vector<std::string>{"two.example"});
  CHECK(hosts_of(history.find({"", "aaaa0002", {}}, now)) ==
        std::vector<std::string>{"three.example"});
  // A session of another tenant is not found under this one.
  CHECK(history.find({"b", "aaaa0002", {}}, now).empty());
  CHECK(history.find({"nobody", "", {}}, now).empty());
  // Every tenant's, in the order they ended.
  CHECK(hosts_of(history.find({}, now)) ==
        std::vector<std::string>{"one.example", "two.example", "three.example"});
  // Only those that ended within the period.
  CHECK(hosts_of(history.find({"", "", std::chrono::seconds(2)}, now)) ==
        std::vector<std::string>{"two.example", "three.example"});
}

TEST_CASE("the connection history keeps the last kPerTenant of a tenant and none past kKept",
          "[unit][egress]") {
  ConnectionHistory history;
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < ConnectionHistory::kPerTenant + 5; ++i)
    history.add(record("a", "s", "h" + std::to_string(i)), t0);
  history.add(record("b", "s", "other"), t0);
  auto kept = history.find({"a", "", {}}, t0);
  REQUIRE(kept.size() == ConnectionHistory::kPerTenant);
  CHECK(kept.front().host == "h5");
  CHECK(kept.back().host == "h" + std::to_string(ConnectionHistory::kPerTenant + 4));
  // Another tenant's record is untouched by a's bound.
  CHECK(history.find({"b", "", {}}, t0).size() == 1);
  CHECK(history.size() == ConnectionHistory::kPerTenant + 1);

  // Past kKept nothing is listed, and the next record sweeps the old ones out.
  const auto later = t0 + ConnectionHistory::kKept + std::chrono::minutes(2);
  CHECK(history.find({}, later).empty());
  history.add(record("c", "s", "fresh"), later);
  CHECK(history.size() == 1);
  CHECK(hosts_of(history.find({}, later)) == std::vector<std::string>{"fresh"});
}

TEST_CASE("past kTotal the tenant holding the most loses its oldest, not the others",
          "[unit][egress]") {
  ConnectionHistory history;
  const auto t0 = Clock::now();
  // Enough tenants at their own bound to reach kTotal, and one quiet tenant.
  history.add(record("quiet", "s", "kept"), t0);
  const std::size_t busy = ConnectionHistory::kTotal / ConnectionHistory::kPerTenant;
  for (std::size_t t = 0; t < busy; ++t)
    for (std::size_t i = 0; i < ConnectionHistory::kPerTenant; ++i)
      history.add(record("busy" + std::to_string(t), "s", "h" + std::to_string(i)), t0);
  CHECK(history.size() == ConnectionHistory::kTotal);
  CHECK(hosts_of(history.find({"quiet", "", {}}, t0)) == std::vector<std::string>{"kept"});
}

TEST_CASE("a relay's connection end becomes a record without the refusal's prefix",
          "[unit][egress]") {
  ConnectionHistory history;
  RelayLabels labels{"alice", "abcd1234", "sbx"};
  ConnectionEnd end;
  end.kind = ConnectionEnd::Kind::refused;
  end.labels = &labels;
  end.method = "CONNECT";
  end.host = "pypi.org";
  end.port = 443;
  end.reason = "refused: pypi.org:443 is not on this tenant's egress allow-list";
  end.duration = std::chrono::milliseconds(12);
  history.add(end);
  auto kept = history.find({"alice", "abcd1234", {}});
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].outcome == "refused");
  CHECK(kept[0].reason == "pypi.org:443 is not on this tenant's egress allow-list");
  CHECK(kept[0].duration_ms == 12);
  CHECK(kept[0].secret.empty());
}
