// The gateway CA (egress/gateway_ca): kept in the state dir with its key 0600, the same CA on the
// next start, and leaf certificates a verifier trusting the CA accepts for their name only.
#include "egress/gateway_ca.hpp"

#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace {

// Whether `leaf` verifies against `ca_pem` for `host` (a name or an IP literal).
bool verifies(const std::string& ca_pem, X509* leaf, const std::string& host, bool ip) {
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  if (ip)
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  else
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(ca);
  return ok;
}

}  // namespace

TEST_CASE("the gateway CA is kept in the state dir and issues certificates for one host each",
          "[unit][egress][secrets]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sandgate-ca-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto ca = sandgate::egress::GatewayCa::load_or_make(dir.string());
  struct stat st {};
  REQUIRE(::stat((dir / "egress-ca.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(ca.certificate_pem().find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK(ca.certificate_pem().find("PRIVATE") == std::string::npos);
  // The next start finds the same CA.
  auto again = sandgate::egress::GatewayCa::load_or_make(dir.string());
  CHECK(again.certificate_pem() == ca.certificate_pem());

  auto named = ca.issue("api.sandgate.test");
  CHECK(verifies(ca.certificate_pem(), named.certificate.get(), "api.sandgate.test", false));
  CHECK_FALSE(
      verifies(ca.certificate_pem(), named.certificate.get(), "other.sandgate.test", false));
  auto literal = ca.issue("127.0.0.2");
  CHECK(verifies(ca.certificate_pem(), literal.certificate.get(), "127.0.0.2", true));
  CHECK_FALSE(verifies(ca.certificate_pem(), literal.certificate.get(), "127.0.0.3", true));
  // Another CA's leaf is not this CA's.
  auto stranger = sandgate::egress::GatewayCa::make();
  CHECK_FALSE(
      verifies(stranger.certificate_pem(), named.certificate.get(), "api.sandgate.test", false));

  // A key others may read is refused.
  ::chmod((dir / "egress-ca.key").c_str(), 0644);
  CHECK_THROWS_WITH(sandgate::egress::GatewayCa::load_or_make(dir.string()),
                    Catch::Contains("may be read by its group or others"));
  fs::remove_all(dir);
}
