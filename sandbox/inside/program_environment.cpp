#include "program_environment.hpp"

#include "rootfs.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/protocol.hpp"

namespace sandgate::sandbox {
namespace {

// The proxy is on the sandbox's own loopback (protocol::kEgressProxyPort), its only interface.
const std::string kProxy = "http://127.0.0.1:" + std::to_string(protocol::kEgressProxyPort);

}  // namespace

// Every python3 (a bash script's too) finds sandgate's sitecustomize and matplotlib backend on
// its path (kPythonSupportDir); the backend is Agg whose show() hands the figures to the
// gateway where there is a channel for them.
//
// Packages a program installs land in /work, so they last as long as its files (hibernation
// included): `pip install` defaults to the user site, /work/.local, because the system's
// site-packages is read-only (the externally-managed marker is for the host's package manager,
// whose files a sandbox cannot touch anyway), and `npm install` writes /work/node_modules.
// Their caches would only fill /work (pip's is off; npm needs one: /tmp).
//
// An environment's packages come before the system's (its numpy, not Debian's), after
// sandgate's support files; what a program installs into /work/.local comes after both.
ProgramEnvironment::ProgramEnvironment(bool egress, bool layer, bool layer_writable,
                                       bool gateway_ca, bool tool_channel) {
  const std::string python_dir = kLayerPythonDir, node_dir = kLayerNodeDir;
  std::string path = "/work/.local/bin:";
  std::string python_path = std::string(kPythonSupportDir);
  if (layer) {
    path += python_dir + "/bin:" + node_dir + "/bin:";
    python_path += ":" + python_dir;
  }
  path += "/usr/bin:/bin";
  // sandgate-tool (issue #45) last: a program's own command of that name wins.
  if (tool_channel) path += std::string(":") + kToolsBinDir;
  variables_ = {"PATH=" + path,
                "HOME=/work",
                "LANG=C.UTF-8",
                "TMPDIR=/tmp",
                "USER=sandbox",
                "MPLBACKEND=module://sandgate_matplotlib",
                "PYTHONPATH=" + python_path,
                "PYTHONDONTWRITEBYTECODE=1",
                "PYTHONUSERBASE=/work/.local",
                "PIP_BREAK_SYSTEM_PACKAGES=1",
                "PIP_NO_CACHE_DIR=1",
                "PIP_DISABLE_PIP_VERSION_CHECK=1",
                "npm_config_cache=/tmp/.npm",
                "npm_config_update_notifier=false",
                "npm_config_fund=false",
                "npm_config_audit=false"};
  // require() finds the layer's global modules (CommonJS, as the sandbox runs JavaScript), and
  // sandgate_tools where the sandbox has a tool channel.
  std::string node_path;
  if (layer) node_path = node_dir + "/lib/node_modules";
  if (tool_channel) node_path += (node_path.empty() ? "" : ":") + std::string(kToolsNodeDir);
  if (!node_path.empty()) variables_.push_back("NODE_PATH=" + node_path);
  if (layer_writable) {
    // The build: stock installs go into the layer, not the user site or /work. pip's target
    // also skips the externally-managed check (it is not the system's site-packages).
    variables_.push_back("PIP_TARGET=" + python_dir);
    variables_.push_back("npm_config_prefix=" + node_dir);
  }
  if (egress) {
    // Every client library's way of being told of the proxy.
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                             "npm_config_proxy", "npm_config_https_proxy"})
      variables_.push_back(std::string(name) + "=" + kProxy);
    variables_.push_back("NO_PROXY=localhost,127.0.0.1,::1");
    variables_.push_back("no_proxy=localhost,127.0.0.1,::1");
    // Node's own fetch reads the proxy variables only when told to (Node 22.21 and 24 on).
    variables_.push_back("NODE_USE_ENV_PROXY=1");
  }
  if (egress && gateway_ca) {
    // The trust for TLS through the proxy (kEgressCaBundle, rootfs.hpp: the system's store and
    // the gateway CA, issue #44), for Python's ssl, requests, curl, Node and pip alike.
    for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                             "NODE_EXTRA_CA_CERTS", "PIP_CERT"})
      variables_.push_back(std::string(name) + "=" + kEgressCaBundle);
  }
  figures_variable_ = "SANDGATE_FIGURES_FD=3";
  for (auto& variable : variables_) {
    plain_.push_back(variable.data());
    with_figures_.push_back(variable.data());
  }
  with_figures_.push_back(figures_variable_.data());
  plain_.push_back(nullptr);
  with_figures_.push_back(nullptr);
}

}  // namespace sandgate::sandbox
