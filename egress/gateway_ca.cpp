#include "egress/gateway_ca.hpp"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sandgate::egress {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

[[noreturn]] void openssl_failed(const std::string& what) {
  unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  throw std::runtime_error(what + ": " + text);
}

PkeyPtr new_key() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) openssl_failed("cannot make an EC key");
  return key;
}

void set_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) openssl_failed("cannot make a serial number");
  bytes[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) == nullptr) {
    BN_free(bn);
    openssl_failed("cannot set a serial number");
  }
  BN_free(bn);
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) {
    X509_EXTENSION_free(ext);
    openssl_failed("cannot add a certificate extension");
  }
  X509_EXTENSION_free(ext);
}

void set_name(X509_NAME* name, const std::string& common_name) {
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1)
    openssl_failed("cannot set a certificate's name");
}

X509Ptr make_ca_certificate(EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) openssl_failed("cannot make a certificate");
  set_serial(cert.get());
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  set_name(X509_get_subject_name(cert.get()), "sandgate egress CA");
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  X509_set_pubkey(cert.get(), key);
  // Python's ssl (X509_STRICT) and Node want a CA that says it is one, and a key identifier.
  add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  if (X509_sign(cert.get(), key, EVP_sha256()) == 0) openssl_failed("cannot sign the CA");
  return cert;
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) openssl_failed("cannot write PEM");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string key_pem_of(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    openssl_failed("cannot write PEM");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// The whole of a small file, checked on the open file: a key must not be readable by others.
std::string read_file(const std::string& path, bool private_key) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 20);
  if (ok && private_key && (st.st_mode & (S_IRWXG | S_IRWXO))) {
    ::close(fd);
    throw std::runtime_error(path + " may be read by its group or others (chmod 600 it)");
  }
  if (ok) {
    text.resize(static_cast<std::size_t>(st.st_size));
    ok = ::read(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot read " + path);
  return text;
}

// Writes a new file (never over one: two replicas starting at once on one state dir must not
// each make a CA over the other's).
void write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

}  // namespace

GatewayCa::GatewayCa(X509Ptr certificate, PkeyPtr key)
    : certificate_(certificate.release(), X509Free()),
      key_(key.release(), PkeyFree()),
      leaf_key_(new_key().release(), PkeyFree()),
      pem_(pem_of(certificate_.get())) {}

GatewayCa GatewayCa::load(const std::string& cert_file, const std::string& key_file) {
  std::string cert_text = read_file(cert_file, false);
  std::string key_text = read_file(key_file, true);
  BioPtr cert_bio(BIO_new_mem_buf(cert_text.data(), static_cast<int>(cert_text.size())));
  X509Ptr cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!cert) openssl_failed(cert_file + " holds no PEM certificate");
  BioPtr key_bio(BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  OPENSSL_cleanse(key_text.data(), key_text.size());
  if (!key) openssl_failed(key_file + " holds no PEM private key");
  if (X509_check_private_key(cert.get(), key.get()) != 1)
    openssl_failed(key_file + " is not the key of " + cert_file);
  if (X509_check_ca(cert.get()) == 0)
    throw std::runtime_error(cert_file + " is not a CA certificate (basicConstraints CA:TRUE)");
  return GatewayCa(std::move(cert), std::move(key));
}

GatewayCa GatewayCa::load_or_make(const std::string& dir) {
  const std::string cert_file = dir + "/egress-ca.pem", key_file = dir + "/egress-ca.key";
  namespace fs = std::filesystem;
  if (fs::exists(cert_file) || fs::exists(key_file)) return load(cert_file, key_file);
  PkeyPtr key = new_key();
  X509Ptr cert = make_ca_certificate(key.get());
  std::string key_text = key_pem_of(key.get());
  // The key first: a certificate without its key would stop the next start.
  write_new_file(key_file, key_text, 0600);
  OPENSSL_cleanse(key_text.data(), key_text.size());
  write_new_file(cert_file, pem_of(cert.get()), 0644);
  return GatewayCa(std::move(cert), std::move(key));
}

GatewayCa GatewayCa::make() {
  PkeyPtr key = new_key();
  X509Ptr cert = make_ca_certificate(key.get());
  return GatewayCa(std::move(cert), std::move(key));
}

LeafCertificate GatewayCa::issue(const std::string& host) const {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) openssl_failed("cannot make a certificate");
  set_serial(cert.get());
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7L * 24 * 3600);
  // A common name is at most 64 characters; the subjectAltName is what clients check.
  set_name(X509_get_subject_name(cert.get()), host.size() <= 64 ? host : "sandgate egress");
  X509_set_issuer_name(cert.get(), X509_get_subject_name(certificate_.get()));
  X509_set_pubkey(cert.get(), leaf_key_.get());
  boost::system::error_code not_address;
  boost::asio::ip::make_address(host, not_address);
  add_extension(cert.get(), certificate_.get(), NID_subject_alt_name,
                (not_address ? "DNS:" : "IP:") + host);
  add_extension(cert.get(), certificate_.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), certificate_.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(cert.get(), certificate_.get(), NID_ext_key_usage, "serverAuth");
  add_extension(cert.get(), certificate_.get(), NID_subject_key_identifier, "hash");
  add_extension(cert.get(), certificate_.get(), NID_authority_key_identifier, "keyid:always");
  if (X509_sign(cert.get(), key_.get(), EVP_sha256()) == 0)
    openssl_failed("cannot sign a certificate");
  return {std::shared_ptr<X509>(cert.release(), X509Free()), leaf_key_};
}

}  // namespace sandgate::egress
