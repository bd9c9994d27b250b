"""What the Python benches share: a gateway started and waited for, and just enough of a
2025-11-25 MCP client to call execute (bench/egress_bench.py, secrets_bench.py,
environment_bench.py). Imported from bench/: run the benches as `bench/<name>.py`."""
import http.client
import json
import subprocess
import time


def launch_gateway(argv, stderr=subprocess.DEVNULL, ready_within_s=60):
    """Starts `argv` (a sandgate, perhaps behind a wrapper that execs it) with a scrubbed
    environment; returns (process, port) once its /readyz answers 200."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr,
                               env={"PATH": "/usr/bin:/bin"})
    line = process.stdout.readline().decode()  # "sandgate listening on http://127.0.0.1:P/mcp"
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    for _ in range(int(ready_within_s * 10)):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return process, port
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the gateway did not become ready")


class Mcp:
    """One session of a 2025-11-25 client: tools/call execute, and DELETE at the end."""

    def __init__(self, port, token, client_name):
        self.port, self.token, self.client_name = port, token, client_name
        self.session, self.id = None, 0

    def post(self, message):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-11-25"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        connection.request("POST", "/mcp", json.dumps(message), headers)
        reply = connection.getresponse()
        body = reply.read().decode()
        self.session = reply.getheader("Mcp-Session-Id") or self.session
        data = [line[5:] for line in body.splitlines() if line.startswith("data:")]
        return json.loads(data[-1] if data else body) if body else None

    def start(self):
        self.id += 1
        self.post({"jsonrpc": "2.0", "id": self.id, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": self.client_name, "version": "1"}}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def run(self, code, language="python", timeout=300):
        """The call's structuredContent; raises unless the program exited 0."""
        self.id += 1
        reply = self.post({"jsonrpc": "2.0", "id": self.id, "method": "tools/call",
                           "params": {"name": "execute",
                                      "arguments": {"language": language, "code": code,
                                                    "timeout_seconds": timeout}}})
        result = reply.get("result", {}).get("structuredContent")
        if result is None:
            raise RuntimeError("execute failed: " + json.dumps(reply)[:2000])
        if result.get("exit_code") != 0:
            raise RuntimeError("sandbox call failed: " + json.dumps(result)[:2000])
        return result

    def bash(self, code, timeout=300):
        return self.run(code, "bash", timeout)["stdout"]

    def end(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("DELETE", "/mcp", headers={"Authorization": "Bearer " + self.token,
                                                      "Mcp-Session-Id": self.session})
        connection.getresponse().read()
