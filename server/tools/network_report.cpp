#include "server/tools/network_report.hpp"

#include <map>

namespace sandgate::server {
namespace {

std::string authority(const egress::ConnectionLog::Entry& entry) {
  bool v6 = entry.host.find(':') != std::string::npos;
  return (v6 ? "[" + entry.host + "]" : entry.host) + ":" + std::to_string(entry.port);
}

// The reason without its "refused: " prefix (the outcome says it).
std::string reason_text(const std::string& reason) {
  static constexpr std::string_view kRefused = "refused: ";
  return reason.rfind(kRefused, 0) == 0 ? reason.substr(kRefused.size()) : reason;
}

}  // namespace

std::string network_summary(const egress::ConnectionLog::CallReport& report) {
  const std::size_t total = report.entries.size() + report.more;
  std::string text = "Network: " + std::to_string(total) +
                     (total == 1 ? " connection through the egress proxy"
                                 : " connections through the egress proxy");
  std::map<std::string, std::size_t> by_outcome;
  for (const auto& entry : report.entries) ++by_outcome[entry.outcome];
  std::string counts;
  for (const auto& [outcome, n] : by_outcome)
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + outcome;
  text +=
      " (" + counts + (report.more ? ", " + std::to_string(report.more) + " not listed" : "") + ")";
  // Each refusal's reason once (at most three): what the model needs to change.
  std::map<std::string, std::string> refusals;
  for (const auto& entry : report.entries)
    if (entry.outcome == "refused" && refusals.size() < 3)
      refusals.emplace(authority(entry) + ": " + reason_text(entry.reason), "");
  for (const auto& [line, unused] : refusals) text += "; refused " + line;
  return text + ".";
}

void attach_network_report(nlohmann::json& result,
                           const egress::ConnectionLog::CallReport& report) {
  if (report.entries.empty() && report.more == 0) return;
  if (!result.contains("structuredContent")) return;
  nlohmann::json connections = nlohmann::json::array();
  for (const auto& entry : report.entries) {
    nlohmann::json item = {{"host", entry.host},         {"port", entry.port},
                           {"method", entry.method},     {"outcome", entry.outcome},
                           {"bytes_up", entry.bytes_up}, {"bytes_down", entry.bytes_down}};
    if (!entry.reason.empty()) item["reason"] = reason_text(entry.reason);
    if (!entry.secret.empty()) item["secret"] = entry.secret;
    connections.push_back(std::move(item));
  }
  nlohmann::json network = {{"connections", std::move(connections)}};
  if (report.more > 0) network["not_listed"] = report.more;
  result["structuredContent"]["network"] = std::move(network);
  result["content"].push_back({{"type", "text"}, {"text", network_summary(report)}});
}

}  // namespace sandgate::server
