#include "server/gateway/environments_command.hpp"

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>

#include "environment/environments.hpp"
#include "server/gateway/config.hpp"
#include "server/gateway/gateway_environments.hpp"

namespace sandgate::server {
namespace {

using nlohmann::json;
namespace asio = boost::asio;

struct Listed {
  std::string name, hash, state, reason, layer;
  std::uint64_t size_bytes = 0;
};

bool build_under_way(const std::string& store_dir, const std::string& hash) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(store_dir) / "building", ec))
    if (entry.path().filename().string().rfind(hash + ".", 0) == 0) return true;
  return false;
}

std::vector<Listed> list_store(const std::map<std::string, environment::Definition>& definitions,
                               const environment::LayerStore& store) {
  std::vector<Listed> out;
  for (const auto& [name, definition] : definitions) {
    Listed item{name, environment::layer_hash(definition), "not built", "", "", 0};
    if (auto layer = store.find(item.hash)) {
      item.state = "ready";
      item.layer = layer->dir;
      item.size_bytes = layer->size_bytes;
    } else if (build_under_way(store.root(), item.hash)) {
      item.state = "building";
    } else if (auto failure = store.failure(item.hash)) {
      item.state = "failed";
      item.reason = failure->reason;
    }
    out.push_back(std::move(item));
  }
  return out;
}

void print(const std::vector<Listed>& items, bool as_json, std::ostream& out) {
  if (as_json) {
    json list = json::array();
    for (const auto& i : items)
      list.push_back({{"name", i.name},
                      {"state", i.state},
                      {"hash", i.hash},
                      {"size_bytes", i.size_bytes},
                      {"layer", i.layer},
                      {"reason", i.reason}});
    out << list.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return;
  }
  out << std::left << std::setw(20) << "NAME" << std::setw(11) << "STATE" << std::setw(14) << "HASH"
      << std::setw(10) << "SIZE MiB"
      << "REASON\n";
  for (const auto& i : items)
    out << std::left << std::setw(20) << i.name << std::setw(11) << i.state << std::setw(14)
        << i.hash.substr(0, 12) << std::setw(10) << (i.size_bytes >> 20) << i.reason << "\n";
}

// Builds every environment into `into` with a sandbox host of the configured limits.
int build_ahead(const Config& config, const std::string& into,
                std::map<std::string, environment::Definition> definitions, std::ostream& err) {
  asio::io_context io;
  sandbox::HostConfig host_config = config.host;
  host_config.pool.size = 0;  // builds only
  sandbox::SandboxHost host(io.get_executor(), host_config);
  if (!host.isolation().usable()) {
    err << "sandgate: sandboxes are disabled on this host: " << host.isolation().problem << "\n";
    return 1;
  }
  environment::LayerStore store(into);
  store.prepare();
  auto proxy = std::make_shared<const egress::ProxyConfig>(config.registry.egress_proxy);
  auto shares = std::make_shared<egress::ConnectionShares>(proxy->max_connections_total,
                                                           proxy->max_connections_total);
  auto environments = std::make_shared<environment::Environments>(
      io.get_executor(), std::move(store),
      environment::BuildServices{&host, proxy, shares, /*warm_pools=*/false},
      config.environments.builds_at_once);
  environments->load(std::move(definitions));
  while (!environments->settled()) io.run_one_for(std::chrono::milliseconds(200));
  host.shutdown();
  return 0;
}

}  // namespace

int environments_command(const std::vector<std::string>& args, char** envp, std::ostream& out,
                         std::ostream& err) {
  bool as_json = false, build = false;
  std::string into;
  // It serves nothing: the options only say where the file and the store are, and the limits
  // a build gets; no credentials are needed.
  std::vector<std::string> gateway_args{"sandgate", "--no-auth", "--listen", "127.0.0.1:0"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      as_json = true;
    } else if (i == 0 && args[i] == "build") {
      build = true;
    } else if (args[i] == "--into" && i + 1 < args.size()) {
      into = args[++i];
    } else if (args[i].rfind("--into=", 0) == 0) {
      into = args[i].substr(7);
    } else {
      gateway_args.push_back(args[i]);
    }
  }
  std::vector<char*> argv;
  for (auto& a : gateway_args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto parsed = parse_config(static_cast<int>(gateway_args.size()), argv.data(), envp);
  if (!parsed.config) {
    (parsed.exit_code == 0 ? out : err) << parsed.message;
    return parsed.exit_code;
  }
  const Config& config = *parsed.config;
  if (config.environments.file.empty()) {
    err << "sandgate environments: --environments FILE (or SANDGATE_ENVIRONMENTS) is required\n";
    return 2;
  }
  if (build && into.empty()) {
    err << "sandgate environments build: --into DIR is required\n";
    return 2;
  }
  try {
    auto definitions = environment::read_definitions_file(config.environments.file);
    if (build) {
      int status = build_ahead(config, into, definitions, err);
      if (status != 0) return status;
      auto listed = list_store(definitions, environment::LayerStore(into));
      print(listed, as_json, out);
      for (const auto& item : listed)
        if (item.state != "ready") return 1;
      return 0;
    }
    std::string dir = environments_store_dir(config);
    if (dir.empty()) {
      err << "sandgate environments: --environments-dir or --state-dir is required\n";
      return 2;
    }
    print(list_store(definitions, environment::LayerStore(dir, config.environments.built_ahead)),
          as_json, out);
    return 0;
  } catch (const std::exception& e) {
    err << "sandgate environments: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace sandgate::server
