#include "progress_token.hpp"

namespace sandgate::server {
using nlohmann::json;

namespace {

bool has_token(const json& meta) {
  return meta.is_object() && meta.contains("progressToken");
}

}  // namespace

std::string progress_token_problem(const json& meta) {
  if (!has_token(meta)) return "";
  const json& token = meta["progressToken"];
  if (token.is_number_integer()) return "";
  if (token.is_string() && token.get_ref<const std::string&>().size() <= kMaxProgressTokenBytes)
    return "";
  return "Invalid params: _meta.progressToken must be an integer or a string of at most " +
         std::to_string(kMaxProgressTokenBytes) + " bytes";
}

json progress_token_of(const json& meta) {
  return has_token(meta) ? meta["progressToken"] : json();
}

}  // namespace sandgate::server
