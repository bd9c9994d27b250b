// The network report of an execute call (server/tools/network_report): each connection in
// structuredContent.network, and one line of text naming the refusals.
#include "server/tools/network_report.hpp"

#include <catch2/catch.hpp>

using sandgate::egress::ConnectionLog;

TEST_CASE("a call's connections are reported, refusals with their reason, secrets by name",
          "[unit][egress][secrets]") {
  ConnectionLog log;
  auto relayed = log.open(7, "CONNECT", "api.example", 443);
  log.update(relayed, [](ConnectionLog::Entry& e) {
    e.outcome = "relayed";
    e.secret = "api";
    e.bytes_up = 120;
    e.bytes_down = 900;
  });
  auto refused = log.open(7, "CONNECT", "pypi.org", 443);
  log.update(refused, [](ConnectionLog::Entry& e) {
    e.outcome = "refused";
    e.reason = "refused: pypi.org:443 is not on this tenant's egress allow-list";
  });
  log.open(8, "GET", "other.example", 80);  // another call's

  nlohmann::json result = {{"content", nlohmann::json::array()},
                           {"structuredContent", nlohmann::json::object()}};
  sandgate::server::attach_network_report(result, log.of_call(7));
  const auto& connections = result["structuredContent"]["network"]["connections"];
  REQUIRE(connections.size() == 2);
  CHECK(connections[0] == nlohmann::json({{"host", "api.example"},
                                          {"port", 443},
                                          {"method", "CONNECT"},
                                          {"outcome", "relayed"},
                                          {"bytes_up", 120},
                                          {"bytes_down", 900},
                                          {"secret", "api"}}));
  CHECK(connections[1]["reason"] == "pypi.org:443 is not on this tenant's egress allow-list");
  CHECK(result["content"].back()["text"] ==
        "Network: 2 connections through the egress proxy (1 refused, 1 relayed); refused "
        "pypi.org:443: pypi.org:443 is not on this tenant's egress allow-list.");

  // Nothing opened: nothing added.
  nlohmann::json quiet = {{"content", nlohmann::json::array()},
                          {"structuredContent", nlohmann::json::object()}};
  sandgate::server::attach_network_report(quiet, log.of_call(9));
  CHECK_FALSE(quiet["structuredContent"].contains("network"));

  // Bounded per call: the rest are counted.
  for (std::size_t i = 0; i < ConnectionLog::kPerCall + 5; ++i) log.open(10, "GET", "h", 80);
  auto many = log.of_call(10);
  CHECK(many.entries.size() == ConnectionLog::kPerCall);
  CHECK(many.more == 5);
}
