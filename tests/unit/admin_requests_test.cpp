#include "server/admin/admin_requests.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "egress/connection_history.hpp"
#include "session/registry.hpp"
#include "session/session_id.hpp"

using namespace sandgate;
using nlohmann::json;

namespace {

tenant::Terms terms(const std::string& name) {
  auto t = std::make_shared<tenant::TenantTerms>();
  t->name = name;
  t->max_sessions = 10;
  return t;
}

std::shared_ptr<session::Session> create(session::Registry& registry, const std::string& tenant) {
  return std::get<std::shared_ptr<session::Session>>(registry.create(terms(tenant)));
}

json ask(session::Registry& registry, const std::string& request) {
  return json::parse(server::answer_admin_request(registry, request, 0));
}

std::set<std::string> listed(const json& answer) {
  std::set<std::string> out;
  for (const auto& row : answer["sessions"]) out.insert(row["session"].get<std::string>());
  return out;
}

std::string prefix(const std::shared_ptr<session::Session>& s) {
  return std::string(session::log_prefix(s->id()));
}

}  // namespace

TEST_CASE("the admin channel lists and ends sessions by tenant and prefix", "[unit][admin]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(1, 1);
  session::Registry registry(io.get_executor(), {}, host, slots);
  auto a1 = create(registry, "a"), a2 = create(registry, "a"), b1 = create(registry, "b");

  auto of_a = ask(registry, R"({"op":"sessions","tenant":"a"})");
  CHECK(of_a["ok"] == true);
  CHECK(listed(of_a) == std::set<std::string>{prefix(a1), prefix(a2)});
  for (const auto& row : of_a["sessions"]) {
    CHECK(row["tenant"] == "a");
    CHECK(row["state"] == "none");
    CHECK(row["calls"] == 0);
    // A prefix, never the whole id.
    CHECK(row["session"].get<std::string>().size() == 8);
  }
  CHECK(ask(registry, R"({"op":"sessions"})")["sessions"].size() == 3);

  // By prefix: that session only, told why.
  auto one = ask(registry, json{{"op", "end"}, {"session", prefix(a1)}}.dump());
  CHECK(one["ended"] == json::array({prefix(a1)}));
  CHECK(a1->ended());
  CHECK_FALSE(a2->ended());
  CHECK(registry.why_ended(a1->id(), "a", session::SessionKind::session) ==
        std::string(server::kOperatorEndedWhy));
  // By whole id, and by tenant.
  CHECK(ask(registry, json{{"op", "end"}, {"session", a2->id()}}.dump())["ok"] == true);
  CHECK(a2->ended());
  CHECK(ask(registry, R"({"op":"end","tenant":"b"})")["ended"] == json::array({prefix(b1)}));
  CHECK(b1->ended());
  CHECK(registry.size() == 0);

  registry.end_all();
  host.shutdown();
  io.run_for(std::chrono::milliseconds(50));
}

TEST_CASE("the admin channel refuses malformed requests with a reason", "[unit][admin]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(1, 1);
  session::Registry registry(io.get_executor(), {}, host, slots);
  auto a = create(registry, "a");
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"tenant":"a"})", "names no op"},
      {R"({"op":"reboot"})", "unknown op (sessions, end, connections)"},
      {R"({"op":"end"})", "exactly one of a session and a tenant"},
      {R"({"op":"end","tenant":"a","session":"x"})", "exactly one of a session and a tenant"},
      {R"({"op":"end","tenant":5})", "non-empty strings"},
      {R"({"op":"end","tenant":""})", "non-empty strings"},
      {R"({"op":"sessions","session":"x"})", "takes a tenant"},
      {R"({"op":"end","session":"00000000"})", "no live session or handle is named 00000000"},
      {R"({"op":"end","tenant":"nobody"})", "has no live session"},
      {R"({"op":[[[[[[[[1]]]]]]]]})", "not a JSON object"},
  };
  for (const auto& [request, why] : cases) {
    INFO(request);
    auto answer = ask(registry, request);
    CHECK(answer["ok"] == false);
    CHECK(answer["error"].get<std::string>().find(why) != std::string::npos);
  }
  const std::string long_name(300, 'x');
  CHECK(ask(registry, json{{"op", "end"}, {"tenant", long_name}}.dump())["ok"] == false);
  CHECK_FALSE(a->ended());
  registry.end_all();
  host.shutdown();
  io.run_for(std::chrono::milliseconds(50));
}

TEST_CASE("the admin channel lists the egress connections of a session or a tenant",
          "[unit][admin]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(1, 1);
  session::Registry registry(io.get_executor(), {}, host, slots);
  egress::ConnectionHistory history;
  auto add = [&](const std::string& tenant, const std::string& session, const std::string& to,
                 const std::string& outcome, const std::string& reason, const std::string& secret) {
    egress::ConnectionHistory::Record r;
    r.started = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000250));
    r.tenant = tenant;
    r.session = session;
    r.method = "CONNECT";
    r.host = to;
    r.port = 443;
    r.outcome = outcome;
    r.reason = reason;
    r.secret = secret;
    r.bytes_up = 10;
    r.bytes_down = 20;
    history.add(r);
  };
  add("a", "aaaa0001", "api.example", "relayed", "", "api");
  add("a", "aaaa0002", "pypi.org", "refused", "pypi.org:443 is not on the list", "");
  add("b", "bbbb0001", "b.example", "relayed", "", "");
  auto ask_connections = [&](const json& request) {
    return json::parse(server::answer_admin_request(registry, request.dump(), 0, &history));
  };

  auto of_a = ask_connections({{"op", "connections"}, {"tenant", "a"}});
  REQUIRE(of_a["ok"] == true);
  REQUIRE(of_a["connections"].size() == 2);
  const json& first = of_a["connections"][0];
  CHECK(first["time"] == "2023-11-14T22:13:20.250Z");
  CHECK(first["session"] == "aaaa0001");
  CHECK(first["host"] == "api.example");
  CHECK(first["secret"] == "api");
  CHECK(first["bytes_down"] == 20);
  CHECK_FALSE(first.contains("reason"));
  CHECK(of_a["connections"][1]["reason"] == "pypi.org:443 is not on the list");
  CHECK_FALSE(of_a["connections"][1].contains("secret"));
  CHECK(of_a["kept"]["per_tenant"] == egress::ConnectionHistory::kPerTenant);
  // A session by its prefix or by an id that starts with it.
  auto one = ask_connections({{"op", "connections"}, {"session", "aaaa0002"}});
  REQUIRE(one["connections"].size() == 1);
  CHECK(one["connections"][0]["host"] == "pypi.org");
  CHECK(ask_connections(
            {{"op", "connections"}, {"session", "aaaa0002ffffffffffffffffffffffff"}})["connections"]
            .size() == 1);
  CHECK(ask_connections(
            {{"op", "connections"}, {"tenant", "b"}, {"session", "aaaa0001"}})["connections"]
            .empty());
  CHECK(ask_connections({{"op", "connections"}})["connections"].size() == 3);
  CHECK(ask_connections({{"op", "connections"}, {"since_s", 60}})["connections"].size() == 3);
  // Bad periods, and a gateway without a record, are refused with a reason.
  for (const json& since : {json(-1), json("10m"), json(1.5)}) {
    auto bad = ask_connections({{"op", "connections"}, {"since_s", since}});
    CHECK(bad["ok"] == false);
    CHECK(bad["error"].get<std::string>().find("since_s") != std::string::npos);
  }
  auto none = json::parse(server::answer_admin_request(registry, R"({"op":"connections"})", 0));
  CHECK(none["ok"] == false);
  CHECK(none["error"].get<std::string>().find("keeps no record") != std::string::npos);
  registry.end_all();
  host.shutdown();
  io.run_for(std::chrono::milliseconds(50));
}
