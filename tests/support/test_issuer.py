#!/usr/bin/python3
"""A stand-in authorization server for the OAuth tests of the real binary: it serves the files
of a directory the test writes (its metadata under /.well-known/..., its key set), so a test
can rotate keys, make the set huge, or stop the server, between requests.

Usage: test_issuer.py DIR. Prints "test issuer listening on http://127.0.0.1:PORT" once it
listens (an ephemeral port). Each GET appends its path to DIR/_requests (the test counts key-set
fetches); a file DIR/_delay holding seconds makes every answer wait that long first.

POST /introspect is RFC 7662 token introspection: the client must send the Authorization
header DIR/_client_auth holds (else 401), and the answer is DIR/_introspection.json's entry for
the token (a JSON object of token -> answer), or {"active": false}."""
import http.server
import json
import os
import sys
import time
import urllib.parse

ROOT = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        with open(os.path.join(ROOT, "_requests"), "a") as log:
            log.write(path + "\n")
        try:
            with open(os.path.join(ROOT, "_delay")) as delay:
                time.sleep(float(delay.read().strip() or 0))
        except FileNotFoundError:
            pass
        file = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
        if not file.startswith(ROOT) or os.path.basename(file).startswith("_") or \
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
        with open(os.path.join(ROOT, "_requests"), "a") as log:
            log.write(path + "\n")
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


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"test issuer listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
