#!/usr/bin/python3
"""A stand-in authorization server for the OAuth tests of the real binary: it serves the files
of a directory the test writes (its metadata under /.well-known/..., its key set), so a test
can rotate keys, make the set huge, or stop the server, between requests.

Usage: test_issuer.py DIR [--tls CA_DIR [--name HOST]...]. Prints "test issuer listening on
http://127.0.0.1:PORT" (https with --tls) once it listens on 127.0.0.1 (an ephemeral port).
Each GET appends its path to DIR/_requests (the test counts key-set fetches); a file DIR/_delay
holding seconds makes every answer wait that long first. Names starting with "_" are never
served.

--tls serves HTTPS with a certificate for exactly the --name hosts (default 127.0.0.1; an
address or a DNS name), signed by the CA in CA_DIR (test_tls.py make-ca), made in DIR/_tls. A
client that refuses the certificate never gets as far as a request, so DIR/_requests names
none of its.

DIR/_redirects.json, a JSON object of path -> URL, makes a GET of that path answer
302 Found with that Location (a test sends the gateway to another origin).

POST /introspect is RFC 7662 token introspection: the client must send the Authorization
header DIR/_client_auth holds (else 401), and the answer is DIR/_introspection.json's entry for
the token (a JSON object of token -> answer), or {"active": false}."""
import argparse
import http.server
import json
import os
import sys
import time
import urllib.parse

# Beside this file: Python puts a script's own directory first on sys.path.
from test_tls import HandshakeInThread, alt_name, server_context, sign_server_certificate

parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("--tls", metavar="CA_DIR")
parser.add_argument("--name", action="append")
ARGS = parser.parse_args()
ROOT = os.path.abspath(ARGS.dir)


def log_request(line):
    with open(os.path.join(ROOT, "_requests"), "a") as log:
        log.write(line + "\n")


def redirect_for(path):
    try:
        with open(os.path.join(ROOT, "_redirects.json")) as f:
            return json.load(f).get(path)
    except FileNotFoundError:
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        log_request(path)
        try:
            with open(os.path.join(ROOT, "_delay")) as delay:
                time.sleep(float(delay.read().strip() or 0))
        except FileNotFoundError:
            pass
        location = redirect_for(path)
        if location is not None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        file = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
        # Any part starting with "_": the bookkeeping files, and the TLS key in _tls/.
        if not file.startswith(ROOT + os.sep) or \
                any(part.startswith("_") for part in os.path.relpath(file, ROOT).split(os.sep)) or \
                not os.path.isfile(file):
            self.send_error(404)
            return
        with open(file, "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        log_request(path)
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        if path != "/introspect":
            self.send_error(404)
            return
        try:
            with open(os.path.join(ROOT, "_client_auth")) as f:
                expected = f.read().strip()
        except FileNotFoundError:
            expected = None
        if expected is not None and self.headers.get("Authorization") != expected:
            self.send_error(401)
            return
        try:
            with open(os.path.join(ROOT, "_introspection.json")) as f:
                answers = json.load(f)
        except FileNotFoundError:
            answers = {}
        token = form.get("token", [""])[0]
        body = json.dumps(answers.get(token, {"active": False})).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(HandshakeInThread, http.server.ThreadingHTTPServer):
    pass


server = Server(("127.0.0.1", 0), Handler)
if ARGS.tls:
    tls_dir = os.path.join(ROOT, "_tls")
    os.makedirs(tls_dir, exist_ok=True)
    sign_server_certificate(tls_dir, [alt_name(host) for host in ARGS.name or ["127.0.0.1"]],
                            ARGS.tls)
    server.ssl_context = server_context(tls_dir)
scheme = "https" if ARGS.tls else "http"
print(f"test issuer listening on {scheme}://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
