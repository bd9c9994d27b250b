#pragma once
// The gateway's own certificate authority (issue #44): it issues the certificates the egress
// proxy shows a sandbox when it terminates the sandbox's TLS to a host carrying a secret. Its
// certificate (never its key) is trusted inside egress sandboxes; its key stays in the gateway:
// made at first start and kept (0600) in the state dir, or given as files so that replicas
// share one. OpenSSL 3.
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace sandgate::egress {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// A certificate for one host and its key (the key is the CA's one leaf key: shared).
struct LeafCertificate {
  std::shared_ptr<X509> certificate;
  std::shared_ptr<EVP_PKEY> key;
};

class GatewayCa {
 public:
  // The CA in `cert_file`/`key_file`. The key file is refused if its group or others may read
  // it; the certificate must be a CA's. Throws std::runtime_error saying why.
  static GatewayCa load(const std::string& cert_file, const std::string& key_file);
  // The CA kept in `dir` (egress-ca.pem, egress-ca.key), made there if neither exists.
  static GatewayCa load_or_make(const std::string& dir);
  // A CA for this process only (never written anywhere).
  static GatewayCa make();

  // The CA's certificate, PEM: what sandboxes trust.
  const std::string& certificate_pem() const { return pem_; }
  // A certificate for `host` (a normalised DNS name or IP literal, as its subjectAltName),
  // valid from an hour ago for 7 days, signed by the CA. Thread-safe. Throws on failure.
  LeafCertificate issue(const std::string& host) const;

 private:
  GatewayCa(X509Ptr certificate, PkeyPtr key);

  std::shared_ptr<X509> certificate_;
  std::shared_ptr<EVP_PKEY> key_;
  std::shared_ptr<EVP_PKEY> leaf_key_;
  std::string pem_;
};

}  // namespace sandgate::egress
