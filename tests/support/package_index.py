#!/usr/bin/python3
"""A real package index on loopback, for the egress tests: a sandbox that may `pip install` or
`npm install` through the gateway's forward proxy needs somewhere real to install from, and
there is no internet on the test machines.

Usage:
    /usr/bin/python3 tests/support/package_index.py --dir DIR [--port 0] [--host 127.0.0.1]
                                                    [--plain-http-port PORT] [--name NAME]...
                                                    [--json-file PATH]

It makes, in DIR (created if missing):
  ca.pem, ca.key            a throwaway test CA (EC P-256, valid one day)
  server.pem, server.key    a server certificate it signed, for localhost, 127.0.0.1, ::1, the
                            --host address and every --name
  sandgate_probe-1.0-py3-none-any.whl   a wheel whose sandgate_probe.VALUE is
                                        "installed from the test index"
  sandgate-probe-1.0.0.tgz  an npm package that exports "installed from the test registry"
  (and the openssl configs and CSR it used, *.cnf and server.csr)
The wheel and the tarball are byte-for-byte the same on every run (fixed timestamps), so a
test may pin their hashes; the certificates are new each run.

Then it serves over HTTPS (and, with --plain-http-port, the same routes over plain HTTP):
  GET /simple/                          PEP 503 project list
  GET /simple/sandgate-probe/           PEP 503 project page (any spelling pip normalises to
                                        that name, e.g. /simple/sandgate_probe/, works too)
  GET /sandgate-probe                   npm packument (also for Accept:
                                        application/vnd.npm.install-v1+json)
  GET /files/<wheel or tarball>         the artifacts
  GET /big?bytes=N                      N bytes (default 10 MiB, at most 1 GiB): byte i is
                                        i % 251, sent in 64 KiB writes with Content-Length
  anything else                         404
HEAD works on every route. A proxy's absolute-form request target (GET http://host/path) is
accepted too.

Once it listens it prints ONE line of JSON to stdout, e.g.
  {"port": 40123, "ca": "/abs/DIR/ca.pem", "wheel": "sandgate_probe-1.0-py3-none-any.whl",
   "npm_tarball": "sandgate-probe-1.0.0.tgz", "index_url": "https://127.0.0.1:40123/simple/",
   "registry_url": "https://127.0.0.1:40123/"}
with "plain_port" added when --plain-http-port is given (with --json-file: written to that file,
and stdout says "package index listening on https://HOST:PORT" instead). It serves until SIGTERM or SIGINT,
then exits 0.

Each request is logged to stderr as one line, so a test can prove that a request did, or did
not, reach the index:
  package_index: https GET /simple/sandgate-probe/ 200
  package_index: http GET /big?bytes=1024 200
(the request target exactly as the client sent it). A failed TLS handshake is logged as
  package_index: https TLS handshake failed from 127.0.0.1: <reason>

The packument's tarball URL is built from the request's Host header and the listener's scheme,
so a client that came as https://localhost:P/ (or through a proxy) fetches the tarball the
same way it fetched the packument.

Clients trust the CA with PIP_CERT=DIR/ca.pem or --cert (pip; but REQUESTS_CA_BUNDLE or
CURL_CA_BUNDLE in the environment override both, a quirk of requests), --cafile DIR/ca.pem
or npm_config_cafile=DIR/ca.pem (npm), NODE_EXTRA_CA_CERTS=DIR/ca.pem (node and npm),
SSL_CERT_FILE=DIR/ca.pem (Python's ssl), curl --cacert DIR/ca.pem."""
import argparse
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import sys
import tarfile
import threading
import urllib.parse
import zipfile

# Beside this file: Python puts a script's own directory first on sys.path.
from test_tls import (HandshakeInThread, alt_name, make_ca, server_context,
                      sign_server_certificate)

LOG_PREFIX = "package_index:"

WHEEL_NAME = "sandgate_probe-1.0-py3-none-any.whl"
WHEEL_PROJECT = "sandgate-probe"  # the PEP 503 normalised name
WHEEL_VALUE = "installed from the test index"

NPM_NAME = "sandgate-probe"
NPM_VERSION = "1.0.0"
NPM_TARBALL = "sandgate-probe-1.0.0.tgz"
NPM_VALUE = "installed from the test registry"

BIG_DEFAULT = 10 * 1024 * 1024
BIG_MAX = 1024 * 1024 * 1024
CHUNK = 64 * 1024
# A prime period, so that no two 64 KiB chunks are alike and a byte lost or repeated anywhere
# shows up in a comparison against the expected content.
BIG_PERIOD = 251

# The artifacts' timestamps: fixed, so that the files (and their hashes) are the same each run.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
TAR_MTIME = 1577836800  # 2020-01-01T00:00:00Z


# ---------------------------------------------------------------------------------------------
# Certificates (test_tls.py makes them)

def subject_alt_names(host, names):
    """localhost, 127.0.0.1 and ::1 always; the listening address and any --name too (a test
    whose gateway resolves a test name through its own /etc/hosts asks for that name)."""
    return ["DNS:localhost", "IP:127.0.0.1", "IP:::1", alt_name(host),
            *(f"DNS:{name}" for name in names)]


def make_certificates(directory, host="127.0.0.1", names=()):
    """Makes DIR/ca.pem (+ca.key) and DIR/server.pem (+server.key) signed by it."""
    make_ca(directory, "sandgate test package index CA")
    sign_server_certificate(directory, subject_alt_names(host, names))


# ---------------------------------------------------------------------------------------------
# The wheel

def record_hash(data):
    """A RECORD hash: sha256=<urlsafe base64 without padding> (PEP 376 / the wheel spec)."""
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def wheel_files():
    """The wheel's files but RECORD, as (archive name, bytes), in archive order."""
    dist_info = "sandgate_probe-1.0.dist-info"
    metadata = ("Metadata-Version: 2.1\n"
                "Name: sandgate-probe\n"
                "Version: 1.0\n"
                "Summary: A probe package served by sandgate's test package index\n")
    wheel = ("Wheel-Version: 1.0\n"
             "Generator: sandgate package_index.py\n"
             "Root-Is-Purelib: true\n"
             "Tag: py3-none-any\n")
    return [
        ("sandgate_probe/__init__.py", f'VALUE = "{WHEEL_VALUE}"\n'.encode()),
        (f"{dist_info}/METADATA", metadata.encode()),
        (f"{dist_info}/WHEEL", wheel.encode()),
        (f"{dist_info}/top_level.txt", b"sandgate_probe\n"),
    ], f"{dist_info}/RECORD"


def zip_entry(name):
    """A ZipInfo with a fixed time and rw-r--r-- permissions (a bare ZipInfo has mode 0)."""
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100644 << 16
    return info


def build_wheel():
    """The wheel's bytes. RECORD lists every file with its hash and size, and itself with
    neither, as the wheel spec says; pip checks this."""
    files, record_name = wheel_files()
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files)
    record += f"{record_name},,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files + [(record_name, record.encode())]:
            archive.writestr(zip_entry(name), data)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# The npm tarball

def tar_entry(name, size):
    """A TarInfo that carries no trace of who built it or when."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = TAR_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build_npm_tarball():
    """The tarball's bytes: package/package.json and package/index.js, gzipped."""
    package_json = json.dumps({"name": NPM_NAME, "version": NPM_VERSION, "main": "index.js"},
                              indent=2).encode() + b"\n"
    index_js = f'module.exports = "{NPM_VALUE}";\n'.encode()
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in (("package/package.json", package_json),
                           ("package/index.js", index_js)):
            archive.addfile(tar_entry(name, len(data)), io.BytesIO(data))
    # gzip.compress with mtime=0 rather than tarfile's "w:gz", which stamps the time of day
    # into the gzip header and so changes the tarball's hash each run.
    return gzip.compress(tar_bytes.getvalue(), compresslevel=9, mtime=0)


# ---------------------------------------------------------------------------------------------
# What is served

class Content:
    """The artifacts and the pages that point at them, built once at start."""

    def __init__(self, wheel, tarball):
        self.files = {WHEEL_NAME: wheel, NPM_TARBALL: tarball}
        self.wheel_sha256 = hashlib.sha256(wheel).hexdigest()
        self.tarball_sha1 = hashlib.sha1(tarball).hexdigest()
        self.tarball_integrity = "sha512-" + base64.b64encode(
            hashlib.sha512(tarball).digest()).decode()

    def simple_root(self):
        return html_page("Simple index",
                         f'<a href="/simple/{WHEEL_PROJECT}/">{WHEEL_PROJECT}</a>')

    def simple_project(self):
        href = f"/files/{WHEEL_NAME}#sha256={self.wheel_sha256}"
        return html_page(f"Links for {WHEEL_PROJECT}", f'<a href="{href}">{WHEEL_NAME}</a>')

    def packument(self, base_url):
        """The npm packument. The tarball URL is absolute (npm wants one), built from the
        address the client used, so that a client that came as localhost or through a proxy
        fetches the tarball the same way."""
        version = {
            "name": NPM_NAME,
            "version": NPM_VERSION,
            "main": "index.js",
            "_id": f"{NPM_NAME}@{NPM_VERSION}",
            "dist": {
                "tarball": f"{base_url}/files/{NPM_TARBALL}",
                "shasum": self.tarball_sha1,
                "integrity": self.tarball_integrity,
            },
        }
        return {
            "_id": NPM_NAME,
            "name": NPM_NAME,
            "dist-tags": {"latest": NPM_VERSION},
            "versions": {NPM_VERSION: version},
        }


def html_page(title, body):
    return (f"<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" "
            f"content=\"1.0\"><title>{title}</title></head>\n"
            f"<body>\n{body}\n</body>\n</html>\n").encode()


def pep503_normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def big_pattern():
    """BIG_PERIOD + CHUNK bytes of the /big content, so any chunk is one slice of it."""
    period = bytes(i % BIG_PERIOD for i in range(BIG_PERIOD))
    return period * (CHUNK // BIG_PERIOD + 2)


BIG_PATTERN = big_pattern()


def format_host(host):
    """A host as it goes in a URL: IPv6 literals in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1 so that clients keep connections alive, as they would with a real index; every
    # answer has a Content-Length, which that needs.
    protocol_version = "HTTP/1.1"
    server_version = "sandgate-test-index/1.0"
    # A client that stops reading (a byte-cap test) must not hold a thread for ever.
    timeout = 300

    def do_GET(self):
        self.answer(send_body=True)

    def do_HEAD(self):
        self.answer(send_body=False)

    def do_POST(self):
        """Any path: reads the body its Content-Length frames and says how many bytes came and
        which path was asked for (the egress tests' uploads and smuggling probes)."""
        length = int(self.headers.get("Content-Length") or 0)
        left = length
        while left > 0:
            chunk = self.rfile.read(min(left, CHUNK))
            if not chunk:
                break
            left -= len(chunk)
        body = f"received {length - left} bytes for POST {self.path}\n".encode()
        self.send_bytes(body, "text/plain", True)

    def answer(self, send_body):
        target = self.path
        # A proxy may pass on the absolute form (GET http://host:port/path); a server must
        # accept it (RFC 9112, 3.2.2).
        if re.match(r"^https?://", target, re.IGNORECASE):
            parsed = urllib.parse.urlsplit(target)
            target = parsed.path + ("?" + parsed.query if parsed.query else "")
        path, _, query = target.partition("?")
        content = self.server.content
        if path == "/simple/" or path == "/simple":
            self.send_bytes(content.simple_root(), "text/html; charset=utf-8", send_body)
        elif (path.startswith("/simple/")
              and pep503_normalise(path[len("/simple/"):].strip("/")) == WHEEL_PROJECT):
            self.send_bytes(content.simple_project(), "text/html; charset=utf-8", send_body)
        elif path == f"/{NPM_NAME}":
            body = json.dumps(content.packument(self.base_url()), indent=2).encode() + b"\n"
            self.send_bytes(body, "application/json", send_body)
        elif path.startswith("/files/") and path[len("/files/"):] in content.files:
            name = path[len("/files/"):]
            kind = "application/zip" if name.endswith(".whl") else "application/octet-stream"
            self.send_bytes(content.files[name], kind, send_body)
        elif path == "/big":
            self.send_big(query, send_body)
        else:
            self.send_bytes(b"not found\n", "text/plain", send_body, status=404)

    def base_url(self):
        """scheme://host:port as this client addressed us: its Host header, else our own."""
        host = self.headers.get("Host") or f"{format_host(self.server.public_host)}:" \
                                            f"{self.server.server_address[1]}"
        return f"{self.server.scheme}://{host}"

    def send_bytes(self, body, content_type, send_body, status=200):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.write_quietly(body)

    def send_big(self, query, send_body):
        fields = urllib.parse.parse_qs(query)
        try:
            size = int(fields.get("bytes", [str(BIG_DEFAULT)])[0])
        except ValueError:
            size = -1
        if not 0 <= size <= BIG_MAX:
            self.send_bytes(f"bytes must be 0..{BIG_MAX}\n".encode(), "text/plain", send_body,
                            status=400)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if not send_body:
            return
        pattern = memoryview(BIG_PATTERN)
        for offset in range(0, size, CHUNK):
            start = offset % BIG_PERIOD
            if not self.write_quietly(pattern[start:start + min(CHUNK, size - offset)]):
                return

    def write_quietly(self, data):
        """Writes; a client that went away (a byte cap cut it off) is normal here."""
        try:
            self.wfile.write(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True
            return False

    def log_request(self, code="-", size="-"):
        status = code.value if hasattr(code, "value") else code
        # A malformed request is answered before command and path are parsed, or at all set.
        command = getattr(self, "command", None) or "-"
        target = getattr(self, "path", None) or "-"
        log(f"{self.server.scheme} {command} {target} {status}")

    def log_message(self, format, *args):
        # BaseHTTPRequestHandler's own lines (errors on malformed requests) are already
        # covered by log_request's line for the error answer.
        pass


def log(line):
    print(f"{LOG_PREFIX} {line}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Servers

class IndexServer(HandshakeInThread, http.server.ThreadingHTTPServer):
    daemon_threads = True  # a stuck client must not keep the process from exiting

    def __init__(self, host, port, content, ssl_context):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.content = content
        self.ssl_context = ssl_context
        self.scheme = "https" if ssl_context else "http"
        self.public_host = host
        super().__init__((host, port), Handler)

    def server_bind(self):
        # HTTPServer.server_bind looks our own address up with getfqdn, which can hang for
        # seconds on a machine with no DNS; nothing here needs that name.
        socketserver.TCPServer.server_bind(self)
        self.server_name = self.public_host
        self.server_port = self.server_address[1]

    def handshake_failed(self, client_address, error):
        log(f"https TLS handshake failed from {client_address[0]}: {error}")

    def handle_error(self, request, client_address):
        # A client that drops the connection mid-request is routine in these tests; say so in
        # one line rather than a traceback.
        log(f"{self.scheme} connection from {client_address[0]} ended: {sys.exc_info()[1]!r}")


def start(server):
    # A short poll interval: shutdown() waits up to one interval for each server, and a test
    # that stops the index should not wait for it.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name=server.scheme, daemon=True)
    thread.start()
    return thread


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="where the CA, certificates and "
                                                     "artifacts are written")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--name", action="append", default=[],
                        help="a DNS name the certificate also covers (repeatable)")
    parser.add_argument("--json-file", default=None,
                        help="write the JSON line here instead, and print \"package index "
                             "listening on https://HOST:PORT\" (what the C++ tests' launcher "
                             "reads: the port after the line's last colon)")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port; 0 picks a free one")
    parser.add_argument("--plain-http-port", type=int, default=None,
                        help="also serve plain HTTP on this port (0 picks a free one)")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)

    make_certificates(directory, args.host, args.name)
    wheel, tarball = build_wheel(), build_npm_tarball()
    for name, data in ((WHEEL_NAME, wheel), (NPM_TARBALL, tarball)):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    content = Content(wheel, tarball)

    # SIGTERM/SIGINT only set an event: shutdown() waits for serve_forever to return, so it
    # must be called from a thread other than the servers'.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    servers = [IndexServer(args.host, args.port, content, server_context(directory))]
    if args.plain_http_port is not None:
        servers.append(IndexServer(args.host, args.plain_http_port, content, None))
    for server in servers:
        start(server)

    port = servers[0].server_address[1]
    base = f"https://{format_host(args.host)}:{port}"
    announcement = {
        "port": port,
        "ca": os.path.join(directory, "ca.pem"),
        "wheel": WHEEL_NAME,
        "npm_tarball": NPM_TARBALL,
        "index_url": f"{base}/simple/",
        "registry_url": f"{base}/",
    }
    if args.plain_http_port is not None:
        announcement["plain_port"] = servers[1].server_address[1]
    if args.json_file:
        # Whole before the line that says it is ready: a reader never sees half of it.
        with open(args.json_file + ".part", "w") as f:
            f.write(json.dumps(announcement))
        os.replace(args.json_file + ".part", args.json_file)
        print(f"package index listening on {base}", flush=True)
    else:
        print(json.dumps(announcement), flush=True)

    # wait() with a timeout so that the signal handler gets to run promptly.
    while not stop.wait(0.2):
        pass
    for server in servers:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
