// The options of replicas (a deployment of several gateways): this one's name, how to reach the
// others, and the secret their forwards carry.
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <variant>

#include "common/host_port.hpp"
#include "sandbox/file_util.hpp"
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

// The host[:port] of the URL after the '=' of a --peers item, as the forwarder will connect to.
std::string_view peer_authority(std::string_view item, std::size_t eq) {
  std::string_view authority = item.substr(eq + 1 + 7);  // after "http://"
  return authority.substr(0, authority.find('/'));
}

}  // namespace

std::vector<Option> replica_options() {
  return {
      {"--replica-name", "SANDGATE_REPLICA_NAME", "",
       "This replica's name (a DNS label, e.g. the StatefulSet pod name). Session ids then name "
       "their replica, and requests for another replica's session are forwarded to it. Also "
       "recorded in the saved registry (`--state-dir`): a gateway with another name ignores that "
       "file, with a warning.",
       [](Config& c, const std::string& v) { c.registry.replica_name = v; }},
      {"--peers", "SANDGATE_PEERS", "",
       "Comma-separated NAME=http://HOST:PORT of the other replicas.",
       [](Config& c, const std::string& v) {
         c.peers.by_name.clear();
         for (const auto& item : to_list(v)) {
           auto eq = item.find('=');
           if (eq == std::string::npos || item.compare(eq + 1, 7, "http://") != 0 ||
               !std::holds_alternative<HostPort>(split_host_port(peer_authority(item, eq))))
             throw std::invalid_argument("expected NAME=http://HOST:PORT");
           c.peers.by_name.emplace_back(item.substr(0, eq), item.substr(eq + 1));
         }
       }},
      {"--peer-url-template", "SANDGATE_PEER_URL_TEMPLATE", "",
       "URL of a replica by name, '{replica}' replaced (e.g. "
       "http://{replica}.sandgate-peers:8080); used for names --peers does not list. The host "
       "must be '{replica}.' (maybe after a fixed prefix) and a fixed DNS suffix, so a session id "
       "can only name a host under that suffix.",
       [](Config& c, const std::string& v) {
         if (auto problem = peer_url_template_problem(v); !problem.empty())
           throw std::invalid_argument(problem);
         c.peers.url_template = v;
       }},
      {"--peer-secret-file", "SANDGATE_PEER_SECRET_FILE", "",
       "File holding a secret every replica of the deployment shares (at least 32 characters, "
       "e.g. `openssl rand -hex 32`). A replica sends it with each request it forwards; a "
       "connection that presents it counts against no address's --max-connections-per-address, "
       "so one client's long calls through a replica cannot make another refuse that replica's "
       "forwards. Unset: forwards count like any client's connections.",
       [](Config& c, const std::string& v) {
         auto text = sandbox::read_file(v);
         if (!text) throw std::invalid_argument("cannot read " + v);
         while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back())))
           text->pop_back();
         if (text->size() < kMinPeerSecret || text->find_first_of("\r\n") != std::string::npos)
           throw std::invalid_argument("the peer secret must be one line of at least " +
                                       std::to_string(kMinPeerSecret) + " characters");
         c.peers.secret = std::move(*text);
       }},
  };
}

}  // namespace sandgate::server::options_detail
