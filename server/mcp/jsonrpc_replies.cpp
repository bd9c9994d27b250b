#include "jsonrpc_replies.hpp"

#include "server/http/responses.hpp"

namespace sandgate::server {

Reply refuse(const Request& req, http::status status, int code, const std::string& message,
             const nlohmann::json& data, const nlohmann::json& id) {
  nlohmann::json body = jsonrpc::error(id, code, message);
  if (!data.is_null()) body["error"]["data"] = data;
  return {json_response(status, body, req.version()), nullptr};
}

Reply accepted(const Request& req) {
  Response res{http::status::accepted, req.version()};
  res.prepare_payload();
  return {std::move(res), nullptr};
}

Reply json_reply(const Request& req, const nlohmann::json& message) {
  return {json_response(http::status::ok, message, req.version()), nullptr};
}

}  // namespace sandgate::server
