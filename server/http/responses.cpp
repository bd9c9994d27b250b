#include "responses.hpp"

#include "common/json_dump.hpp"

namespace sandgate::server {

Response json_response(http::status status, const nlohmann::json& body, unsigned version) {
  Response res{status, version};
  res.set(http::field::content_type, "application/json");
  res.body() = dump_json(body);
  res.prepare_payload();
  return res;
}

Response plain_response(const Request& request, http::status status, std::string body,
                        const char* content_type) {
  Response res{status, request.version()};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace sandgate::server
