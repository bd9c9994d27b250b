#!/usr/bin/python3
"""An HTTPS API on loopback that answers 200 only to the right key, for the test of secrets the
sandbox never holds (issue #44): the gateway's egress proxy must add the key, and the sandbox's
code never has it.

Usage:
    /usr/bin/python3 tests/support/secret_api.py --dir DIR --key-file PATH --json-file PATH
                                                 [--host 127.0.0.2] [--header X-Api-Key]

It makes, in DIR: a test CA (ca/ca.pem) and three server certificates:
  good/       for api.sandgate.test, other.sandgate.test and the --host address, by the test CA
  wrong/      for elsewhere.sandgate.test only, by the test CA (a name the client did not ask)
  untrusted/  for api.sandgate.test and the --host address, by another CA (stranger/)
and listens on --host with each (HTTPS) and once with plain HTTP. Then it writes one JSON object
to --json-file: {"port", "wrong_port", "untrusted_port", "plain_port", "ca"}.

Every request is answered by what its --header says, compared with the content of --key-file
(less one trailing newline): 200 when it carries exactly one such header with exactly that
value, else 401. The body is JSON: {"key": "right"|"wrong"|"none", "count": N, "host": Host,
"path": path, "body_bytes": N} — never the key, never what the request carried. Paths:
  /redirect   302 to https://other.sandgate.test:<port>/whoami (a host without the secret)
  /chunked    the same answer, chunked
  anything    the answer above
Each request is logged to stderr as one line: `secret_api: <scheme> <port> <Host> <path>
key=<verdict> count=<N>`. Serves until SIGTERM."""
import argparse
import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_tls import HandshakeInThread, make_ca, server_context, sign_server_certificate

parser = argparse.ArgumentParser()
parser.add_argument("--dir", required=True)
parser.add_argument("--key-file", required=True)
parser.add_argument("--json-file", required=True)
parser.add_argument("--host", default="127.0.0.2")
parser.add_argument("--header", default="X-Api-Key")
args = parser.parse_args()


def log(line):
    sys.stderr.write("secret_api: " + line + "\n")
    sys.stderr.flush()


def expected_key():
    with open(args.key_file) as f:
        key = f.read()
    return key[:-1] if key.endswith("\n") else key


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        values = self.headers.get_all(args.header) or []
        verdict = "none" if not values else ("right" if values == [expected_key()] else "wrong")
        host = self.headers.get("Host", "")
        port = self.server.server_address[1]
        log(f"{self.server.scheme} {port} {host} {self.path} key={verdict} count={len(values)}")
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", f"https://other.sandgate.test:{self.server.good_port}/whoami")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        text = json.dumps({"key": verdict, "count": len(values), "host": host, "path": self.path,
                           "body_bytes": len(body)}).encode()
        self.send_response(200 if verdict == "right" else 401)
        self.send_header("Content-Type", "application/json")
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (text[:5], text[5:]):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(text)

    do_GET = do_POST = do_PUT = do_HEAD = answer


class Server(HandshakeInThread, http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context):
        super().__init__((args.host, 0), Handler)
        self.ssl_context = context
        self.scheme = "https" if context else "http"
        self.good_port = 0

    def handshake_failed(self, client_address, error):
        log(f"https {self.server_address[1]} TLS handshake failed: {error}")

    def handle_error(self, request, client_address):
        log(f"{self.scheme} connection ended: {sys.exc_info()[1]!r}")


def main():
    base = os.path.abspath(args.dir)
    for sub in ("ca", "good", "wrong", "stranger", "untrusted"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    make_ca(os.path.join(base, "ca"))
    make_ca(os.path.join(base, "stranger"), "a CA nobody trusts")
    ip = f"IP:{args.host}"
    sign_server_certificate(os.path.join(base, "good"),
                            ["DNS:api.sandgate.test", "DNS:other.sandgate.test", ip],
                            os.path.join(base, "ca"))
    sign_server_certificate(os.path.join(base, "wrong"), ["DNS:elsewhere.sandgate.test"],
                            os.path.join(base, "ca"))
    sign_server_certificate(os.path.join(base, "untrusted"), ["DNS:api.sandgate.test", ip],
                            os.path.join(base, "stranger"))
    servers = {
        "port": Server(server_context(os.path.join(base, "good"))),
        "wrong_port": Server(server_context(os.path.join(base, "wrong"))),
        "untrusted_port": Server(server_context(os.path.join(base, "untrusted"))),
        "plain_port": Server(None),
    }
    good = servers["port"].server_address[1]
    for server in servers.values():
        server.good_port = good
        threading.Thread(target=server.serve_forever, daemon=True).start()
    announced = {name: server.server_address[1] for name, server in servers.items()}
    announced["ca"] = os.path.join(base, "ca", "ca.pem")
    with open(args.json_file + ".tmp", "w") as f:
        json.dump(announced, f)
    os.rename(args.json_file + ".tmp", args.json_file)
    print(f"secret api listening on https://{args.host}:{good}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
