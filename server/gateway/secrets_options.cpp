// The options of secrets the sandbox never holds (issue #44): the operator's secrets file, the
// gateway CA that issues the certificates the egress proxy shows a sandbox for a host carrying a
// secret, and the trust the proxy verifies the real host against.
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {

std::vector<Option> secrets_options() {
  return {
      {"--secrets-file", "SANDGATE_SECRETS_FILE", "",
       "Secrets the egress proxy adds to tenants' requests, so that sandboxes never hold them: "
       "one a line, '<name> host=<host[:port]> header=<Header-Name> file=<path of the header's "
       "value> [plain=yes]' (without plain=yes, HTTPS only: a plain-HTTP request to the host is "
       "refused); a tenant holds them with secrets=<name>[,...] and may then reach each one's "
       "host. The file and the value files are refused if their group or others may read or "
       "write them; values are read at start and on SIGHUP (a file that cannot be used keeps "
       "the secrets in force), and never logged.",
       [](Config& c, const std::string& v) { c.secrets_file = v; }},
      {"--secrets-ca-cert", "SANDGATE_SECRETS_CA_CERT", "",
       "PEM certificate of the CA that issues the certificates the egress proxy shows sandboxes "
       "for hosts carrying a secret (with --secrets-ca-key; replicas share one this way). "
       "Default: a CA made at first start, kept in --state-dir (egress-ca.pem, and its key "
       "egress-ca.key, 0600).",
       [](Config& c, const std::string& v) { c.registry.egress_proxy.ca_cert_file = v; }},
      {"--secrets-ca-key", "SANDGATE_SECRETS_CA_KEY", "",
       "PEM private key of --secrets-ca-cert; refused if its group or others may read it.",
       [](Config& c, const std::string& v) { c.registry.egress_proxy.ca_key_file = v; }},
      {"--egress-ca-file", "SANDGATE_EGRESS_CA_FILE", "",
       "PEM certificates the egress proxy trusts when it opens its own TLS to a host carrying a "
       "secret (certificate chain and host name verified). Default: the system's store.",
       [](Config& c, const std::string& v) { c.registry.egress_proxy.upstream_ca_file = v; }},
  };
}

}  // namespace sandgate::server::options_detail
