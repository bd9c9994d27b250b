#pragma once
// The operator's secrets file (--secrets-file, issue #44): the credentials the egress proxy adds
// to a tenant's requests so that its sandboxes never hold them. One secret a line:
//
//   <name> host=<host[:port]> header=<Header-Name> file=<path holding the header's value>
//          [plain=yes]
//
// Blank lines and lines starting with '#' are ignored; the three keys are each required once, in
// any order. `plain=yes` lets plain-HTTP requests to the host get the header too (else only
// HTTPS ones, through the proxy's TLS termination; plain ones are refused). A relative `file=` is
// relative to the secrets file's directory. The value is the file's content less one trailing
// newline. A tenant's tokens-file or OAuth policy line holds secrets by name: `secrets=<name>[,…]`.
//
// Values are read when the file is loaded (at start and on SIGHUP) and kept in memory only; no
// error names a value, and none repeats what a line says beyond its line number and the key.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "egress/header_secret.hpp"

namespace sandgate::secrets {

class SecretSet {
 public:
  // Null when no secret has that name.
  std::shared_ptr<const egress::HeaderSecret> find(const std::string& name) const;
  std::size_t size() const { return by_name_.size(); }
  void add(std::shared_ptr<const egress::HeaderSecret> secret);
  bool contains(const std::string& name) const { return by_name_.contains(name); }

 private:
  std::map<std::string, std::shared_ptr<const egress::HeaderSecret>> by_name_;
};

// Reads one value file (a path as the line gives it, made absolute by the caller): its content,
// or throws std::runtime_error saying why not (never the content).
using ValueReader = std::function<std::string(const std::string& path)>;

// Parses the file's text; `directory` makes relative `file=` paths absolute. Throws
// std::runtime_error "secrets file line N: <reason>".
SecretSet parse_secrets(std::string_view text, const std::string& directory,
                        const ValueReader& read_value);

// Reads the file at `path` and every value file it names. Each must be a regular file that
// neither its group nor others may read or write, or it is refused. Throws std::runtime_error
// saying which file and why.
SecretSet load_secrets_file(const std::string& path);

// Reads a value file as load_secrets_file does (its mode checked on the open file).
std::string read_private_file(const std::string& path, std::size_t max_bytes);

}  // namespace sandgate::secrets
