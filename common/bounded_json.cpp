#include "common/bounded_json.hpp"

namespace sandgate {
namespace {

using nlohmann::json;

// nlohmann's own DOM builder behind a depth counter: the first array or object that would
// open level max_depth + 1 stops the parse, so nothing deeper is ever allocated.
class DepthBoundedSax {
 public:
  DepthBoundedSax(json& root, std::size_t max_depth) : dom_(root, false), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& s) { return dom_.string(s); }
  bool binary(json::binary_t& b) { return dom_.binary(b); }
  bool key(json::string_t& k) { return dom_.key(k); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& ex) {
    return dom_.parse_error(position, token, ex);
  }

  bool too_deep() const { return too_deep_; }

 private:
  bool enter() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

BoundedJson parse_bounded_json(std::string_view text, std::size_t max_depth) {
  BoundedJson out;
  DepthBoundedSax sax(out.value, max_depth);
  bool ok = json::sax_parse(text, &sax, json::input_format_t::json, /*strict=*/true);
  if (!ok) {
    out.fault = sax.too_deep() ? JsonFault::too_deep : JsonFault::syntax;
    // A partial tree (at most max_depth deep) is dropped here, not handed on.
    out.value = json(json::value_t::discarded);
  }
  return out;
}

}  // namespace sandgate
