#include "common/json_dump.hpp"

namespace sandgate {

namespace {

using nlohmann::json;

// A generous guess of the serialized size: strings plus an eighth for escapes.
std::size_t size_guess(const json& value) {
  switch (value.type()) {
    case json::value_t::string: {
      std::size_t n = value.get_ref<const std::string&>().size();
      return n + n / 8 + 2;
    }
    case json::value_t::object: {
      std::size_t n = 2;
      for (auto it = value.begin(); it != value.end(); ++it)
        n += it.key().size() + 4 + size_guess(it.value());
      return n;
    }
    case json::value_t::array: {
      std::size_t n = 2;
      for (const auto& element : value) n += 1 + size_guess(element);
      return n;
    }
    default:
      return 24;
  }
}

}  // namespace

std::string dump_json(const json& value) {
  std::string out;
  out.reserve(size_guess(value));
  // What json::dump does, into our buffer instead of a fresh one.
  nlohmann::detail::serializer<json> serializer(
      nlohmann::detail::output_adapter<char, std::string>(out), ' ',
      json::error_handler_t::replace);
  serializer.dump(value, false, false, 0);
  return out;
}

}  // namespace sandgate
