// deploy/'s Grafana dashboard and Prometheus alert rules against the real binary's /metrics:
// every series they name, and every label value they select with `=`, is in a real answer of a
// gateway that served calls (promtool checks that they parse: "deploy: promtool check rules").
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cpu_priced.hpp"
#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every PromQL expression of the dashboard (rows' nested panels too), one after another.
void collect_exprs(const json& panels, std::string& exprs) {
  for (const auto& panel : panels) {
    if (panel.contains("panels")) collect_exprs(panel["panels"], exprs);
    for (const auto& target : panel.value("targets", json::array()))
      exprs += target["expr"].get<std::string>() + "\n";
  }
}

// A scrape: each series' name, and the label pairs (`key="value"`) seen on its lines.
struct Scrape {
  std::set<std::string> names;
  std::map<std::string, std::set<std::string>> labels;
};

Scrape parse_scrape(const std::string& body) {
  Scrape s;
  std::istringstream lines(body);
  const std::regex pair(R"re((\w+)="([^"]*)")re");
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    s.names.insert(name);
    auto open = line.find('{');
    if (open == std::string::npos) continue;
    std::string inside = line.substr(open, line.find('}') - open);
    for (std::sregex_iterator it(inside.begin(), inside.end(), pair), end; it != end; ++it)
      s.labels[name].insert((*it)[1].str() + "=\"" + (*it)[2].str() + "\"");
  }
  return s;
}

// Checks every series `text` names (sandgate_…), and each `label="value"` equality matcher of
// its selectors, against the scrape; returns how many series names it found.
std::size_t check_used_series(const std::string& what, const std::string& text, const Scrape& s) {
  const std::regex series(R"(sandgate_[a-z0-9_]+)");
  std::set<std::string> used;
  for (std::sregex_iterator it(text.begin(), text.end(), series), end; it != end; ++it)
    used.insert(it->str());
  for (const auto& name : used) {
    INFO(what << " uses " << name);
    CHECK(s.names.contains(name));
  }
  // name{a="x", b=~"y"}: only `=` matchers name a value that must be served.
  const std::regex selector(R"re((sandgate_[a-z0-9_]+)\{([^}]*)\})re");
  const std::regex equality(R"re((\w+)\s*=\s*"([^"]*)")re");
  for (std::sregex_iterator it(text.begin(), text.end(), selector), end; it != end; ++it) {
    const std::string name = (*it)[1].str(), matchers = (*it)[2].str();
    for (std::sregex_iterator m(matchers.begin(), matchers.end(), equality); m != end; ++m) {
      std::string wanted = (*m)[1].str() + "=\"" + (*m)[2].str() + "\"";
      INFO(what << " selects " << name << "{" << wanted << "}");
      auto seen = s.labels.find(name);
      CHECK((seen != s.labels.end() && seen->second.contains(wanted)));
    }
  }
  return used.size();
}

}  // namespace

TEST_CASE("every series the dashboard and the alert rules use is served",
          "[integration][monitoring]") {
  TwoTenantDir dir("monitoring");
  GatewayProcess gw(cpu_priced(dir));
  // Calls of two tenants, so that their spend is saved and labelled; one with a non-zero exit.
  for (const char* token : {"tok-a", "tok-b"}) {
    std::string session = gw.initialize(token);
    auto ran = gw.execute(session, "echo hi; exit 3", "bash", 30, 1, token);
    CHECK(tool_text(ran).find("hi") != std::string::npos);
  }
  std::string body;
  REQUIRE(eventually([&] {
    body = gw.request(http::verb::get, "/metrics").body;
    return body.find("sandgate_tenant_spend_usd_total{tenant=\"a\"}") != std::string::npos &&
           body.find("sandgate_tenant_spend_usd_total{tenant=\"b\"}") != std::string::npos;
  }));
  const Scrape scrape = parse_scrape(body);
  REQUIRE(scrape.names.size() > 20);

  const std::string root = SANDGATE_SOURCE_DIR;
  json dashboard = json::parse(read_text(root + "/deploy/grafana/sandgate-dashboard.json"));
  std::string exprs;
  collect_exprs(dashboard["panels"], exprs);
  // The template variable's query names a series too.
  for (const auto& variable : dashboard["templating"]["list"])
    exprs += variable.value("definition", "") + "\n";
  CHECK(check_used_series("the dashboard", exprs, scrape) >= 20);

  std::string rules = read_text(root + "/deploy/prometheus/sandgate-rules.yml");
  CHECK(check_used_series("the alert rules", rules, scrape) >= 6);
}
