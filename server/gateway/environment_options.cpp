// The options of environments (issue #43): the operator's definitions, where their layers are
// built and kept, layers built ahead, and how many builds run at once.
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
std::vector<Option> environment_options() {
  return {
      {"--environments", "SANDGATE_ENVIRONMENTS", "",
       "JSON file of named environments (name -> {setup, verify, egress, preload, description, "
       "pool, build_timeout_s, max_size_mb}; docs/configuration.md). Each is built once into a "
       "layer its tenants' sandboxes mount read-only at /env; a tenant's tokens-file or OAuth "
       "policy line names its own with `environments=NAME[,NAME...]`. Reloaded on SIGHUP (a bad "
       "file is refused at start, and a bad reload keeps the old set). /readyz answers 503 until "
       "every environment is built or failed.",
       [](Config& c, const std::string& v) { c.environments.file = v; }},
      {"--environments-dir", "SANDGATE_ENVIRONMENTS_DIR", "",
       "Where environment layers are built and kept, by their definition's hash. Unset: "
       "<--state-dir>/environments (--environments needs one of the two).",
       [](Config& c, const std::string& v) { c.environments.store_dir = v; }},
      {"--environments-built", "SANDGATE_ENVIRONMENTS_BUILT", "",
       "Comma-separated directories of layers built ahead (`sandgate environments build --into "
       "DIR`, e.g. in an image's build stage): a layer found there whose definition matches is "
       "used without building.",
       [](Config& c, const std::string& v) { c.environments.built_ahead = to_list(v); }},
      {"--environment-builds", "SANDGATE_ENVIRONMENT_BUILDS", "1",
       "Environment builds run at once (each in a sandbox of its own, at a background CPU share).",
       [](Config& c, const std::string& v) {
         c.environments.builds_at_once = static_cast<std::size_t>(to_u64(v, 1, 4));
       }},
  };
}

}  // namespace sandgate::server::options_detail
