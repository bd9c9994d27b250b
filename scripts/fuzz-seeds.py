#!/usr/bin/python3
"""Writes fuzz seeds too big to commit into DIR/<target>/: JSON-RPC bodies nested 200,000
levels deep (arrays; objects 60,000; unbalanced 400,000 brackets), bare and as whole HTTP requests. Such a body is
~400 KB, under the gateway's body limit; before the depth bound it crashed the gateway with a
stack overflow. scripts/fuzz.sh runs this before the fuzzers.

    scripts/fuzz-seeds.py DIR
"""
import os
import sys

LEVELS = 200_000
# Objects take 6 bytes a level: fewer levels keep the seed under fuzz.sh's -max_len (512 KiB).
OBJECT_LEVELS = 60_000


def deep(arrays: bool) -> str:
    opening, closing = ("[", "]") if arrays else ('{"a":', "}")
    levels = LEVELS if arrays else OBJECT_LEVELS
    return ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + opening * levels + "0" +
            closing * levels + "}}")


def http(body: str, token: bool = True) -> str:
    auth = "Authorization: Bearer fuzz-token\r\n" if token else ""
    return ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n" + auth +
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "Mcp-Session-Id: @SID@\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            f"Content-Length: {len(body.encode())}\r\n\r\n" + body)


def main() -> None:
    out = sys.argv[1]
    bodies = {"deep_arrays": deep(True), "deep_objects": deep(False),
              "deep_unbalanced": "[" * (2 * LEVELS)}
    os.makedirs(os.path.join(out, "jsonrpc"), exist_ok=True)
    os.makedirs(os.path.join(out, "http_request"), exist_ok=True)
    for name, body in bodies.items():
        with open(os.path.join(out, "jsonrpc", name), "w") as f:
            f.write(body)
        with open(os.path.join(out, "http_request", name), "w") as f:
            f.write(http(body))
    with open(os.path.join(out, "http_request", "deep_arrays_no_token"), "w") as f:
        f.write(http(bodies["deep_arrays"], token=False))


if __name__ == "__main__":
    main()
