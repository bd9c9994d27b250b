#pragma once
// What an execute call of an egress sandbox reached through the proxy and what it was refused
// (issue #44), added to the call's result: every connection in structuredContent.network (host,
// port, method, outcome, the reason of a refusal, bytes each way, the secret applied by name),
// and one line of text, so that the model sees that a host is not allowed instead of guessing
// from a timeout.
#include <nlohmann/json.hpp>

#include "egress/connection_log.hpp"

namespace sandgate::server {

// Adds the report to a result with structuredContent; nothing when the call opened nothing.
void attach_network_report(nlohmann::json& result, const egress::ConnectionLog::CallReport& report);

// The line of text: "Network: 3 connections: 2 relayed, 1 refused (pypi.org:443: not on …)".
std::string network_summary(const egress::ConnectionLog::CallReport& report);

}  // namespace sandgate::server
