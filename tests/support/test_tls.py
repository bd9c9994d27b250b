#!/usr/bin/python3
"""Throwaway TLS for the test servers (package_index.py, test_issuer.py): a test CA and the
server certificates it signs, made with the openssl CLI, and a server mix-in that does each TLS
handshake in its request's own thread. Nothing here is trusted by anything until a test hands
a client the CA's file.

As a program:
    test_tls.py make-ca DIR [COMMON_NAME]
makes DIR (if missing), DIR/ca.pem and DIR/ca.key (EC P-256, valid one day), for a test that
signs server certificates with it later (test_issuer.py --tls DIR), or hands a client a CA
that signed nothing it will meet."""
import ipaddress
import os
import secrets
import ssl
import subprocess
import sys

CA_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
x509_extensions = ca_ext

[dn]
CN = {common_name}

[ca_ext]
# Python's ssl (and, since 3.13, its X509_STRICT default) and Node both insist on a CA that says
# it is one: critical basicConstraints and keyUsage keyCertSign.
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
"""

SERVER_CSR_CONFIG = """\
[req]
distinguished_name = dn
prompt = no

[dn]
CN = {common_name}
"""

SERVER_EXT = """\
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = {names}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def run_openssl(args, cwd):
    """Runs openssl, raising with its own words if it fails."""
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr.strip()}")


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def alt_name(host):
    """A subjectAltName entry for a host: IP:... for an address, DNS:... for a name."""
    try:
        ipaddress.ip_address(host)
        return f"IP:{host}"
    except ValueError:
        return f"DNS:{host}"


def make_ca(directory, common_name="sandgate test CA"):
    """Makes DIR/ca.pem and DIR/ca.key (and the config it used, DIR/ca.cnf)."""
    os.makedirs(directory, exist_ok=True)
    write_text(os.path.join(directory, "ca.cnf"), CA_CONFIG.format(common_name=common_name))
    # -config on every req: the system openssl.cnf's own v3_ca section would otherwise add
    # extensions of its own alongside ours.
    run_openssl(["req", "-x509", *EC_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
                 "-sha256", "-config", "ca.cnf"], directory)
    os.chmod(os.path.join(directory, "ca.key"), 0o600)


def sign_server_certificate(directory, alt_names, ca_directory=None):
    """Makes DIR/server.pem and DIR/server.key, for exactly `alt_names` (entries such as
    "DNS:localhost" or "IP:127.0.0.1": a test may leave out the name its client will ask for),
    signed by the CA in `ca_directory` (default: DIR). Also leaves server_csr.cnf,
    server_ext.cnf and server.csr in DIR."""
    ca_directory = os.path.abspath(ca_directory or directory)
    write_text(os.path.join(directory, "server_csr.cnf"),
               SERVER_CSR_CONFIG.format(common_name="sandgate test server"))
    write_text(os.path.join(directory, "server_ext.cnf"),
               SERVER_EXT.format(names=", ".join(dict.fromkeys(alt_names))))
    run_openssl(["req", "-new", *EC_KEY, "-keyout", "server.key", "-out", "server.csr",
                 "-sha256", "-config", "server_csr.cnf"], directory)
    # A random serial each run and no .srl file left behind: two runs' certificates must never
    # share issuer+serial, or a client that cached one would reject the other.
    run_openssl(["x509", "-req", "-in", "server.csr",
                 "-CA", os.path.join(ca_directory, "ca.pem"),
                 "-CAkey", os.path.join(ca_directory, "ca.key"),
                 "-set_serial", "0x" + secrets.token_hex(16), "-days", "1", "-sha256",
                 "-extfile", "server_ext.cnf", "-extensions", "server_ext",
                 "-out", "server.pem"], directory)
    os.chmod(os.path.join(directory, "server.key"), 0o600)


def server_context(directory):
    """A server's TLS context with DIR/server.pem and DIR/server.key, speaking HTTP/1.1."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(directory, "server.pem"),
                            os.path.join(directory, "server.key"))
    context.set_alpn_protocols(["http/1.1"])
    return context


class HandshakeInThread:
    """For a socketserver.ThreadingMixIn server with `ssl_context` set (None: plain): the TLS
    handshake happens here, in the request's own thread, not in accept(), so a client that
    connects and says nothing does not stall everyone else. A failed handshake (a client that
    refused the certificate) goes to handshake_failed, not to a traceback."""
    ssl_context = None

    def finish_request(self, request, client_address):
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(30)
        try:
            tls = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as error:
            self.handshake_failed(client_address, error)
            return
        tls.settimeout(None)
        try:
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)

    def handshake_failed(self, client_address, error):
        pass


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] != "make-ca":
        sys.exit("usage: test_tls.py make-ca DIR [COMMON_NAME]")
    make_ca(os.path.abspath(sys.argv[2]), *sys.argv[3:])
