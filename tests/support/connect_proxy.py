#!/usr/bin/python3
"""A minimal HTTP forward proxy standing in for an operator's corporate proxy, for the test of
`--egress-upstream-proxy`: it answers CONNECT host:port with a tunnel and passes absolute-form
plain requests on unchanged, and appends each request line to LOG, so that a test can see what
the gateway asked of it (and what it did not).

Usage: /usr/bin/python3 tests/support/connect_proxy.py LOG
Prints "connect proxy listening on http://127.0.0.1:PORT" once it listens; serves until killed."""
import socket
import socketserver
import sys
import threading
import urllib.parse

LOG = sys.argv[1]
log_lock = threading.Lock()


def relay(a, b):
    """Copies a to b until a ends, then ends b's sending."""
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        client = self.request
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        line, _, _ = head.partition(b"\r\n")
        with log_lock, open(LOG, "a") as f:
            f.write(line.decode(errors="replace") + "\n")
        method, target = line.split(b" ")[:2]
        if method == b"CONNECT":
            host, _, port = target.decode().rpartition(":")
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.partition(b"\r\n\r\n")[2]
        else:
            url = urllib.parse.urlsplit(target.decode())
            upstream = socket.create_connection((url.hostname, url.port or 80), timeout=30)
            rest = head
        if rest:
            upstream.sendall(rest)
        other = threading.Thread(target=relay, args=(upstream, client), daemon=True)
        other.start()
        relay(client, upstream)
        other.join()
        upstream.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
print(f"connect proxy listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
