#pragma once
// Whole responses built the same way everywhere: JSON or plain text, in the request's HTTP
// version, with Content-Length set.
#include <nlohmann/json.hpp>
#include <string>

#include "http_types.hpp"

namespace sandgate::server {

Response json_response(http::status status, const nlohmann::json& body, unsigned version = 11);
Response plain_response(const Request& request, http::status status, std::string body,
                        const char* content_type = "text/plain; charset=utf-8");

}  // namespace sandgate::server
