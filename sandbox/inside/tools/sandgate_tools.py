"""Call the MCP tools of this sandbox's upstream servers, through the gateway.

    import sandgate_tools
    sandgate_tools.list()                      # the servers and tools this sandbox may call
    print(sandgate_tools.reference())          # their signatures, to read
    sandgate_tools.call("tickets", "search", {"query": "refund"})
    sandgate_tools.tickets.search(query="refund")   # the same, by name
    sandgate_tools.tickets.get_ticket(id=7)         # "get-ticket": '_' for what is not a name
    await sandgate_tools.acall("tickets", "search", {"query": "refund"})   # from asyncio

A call returns the tool's structured content when it has one, else its text; an image or audio
as bytes; several items as a list. A tool's error raises ToolError with the upstream's message.
The gateway makes the call with its own credentials: none of them is in this sandbox.
"""
import asyncio as _asyncio
import base64 as _base64
import http.client as _http
import inspect as _inspect
import json as _json
import keyword as _keyword
import socket as _socket

__all__ = ["ToolError", "call", "acall", "list", "reference"]

_SOCKET = "/sandgate/tools.sock"


class ToolError(Exception):
    """The tool answered with an error, or the gateway refused or could not make the call."""

    def __init__(self, message, kind="tool_error"):
        super().__init__(message)
        self.kind = kind


class _Connection(_http.HTTPConnection):
    def __init__(self):
        super().__init__("sandgate")

    def connect(self):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(_SOCKET)
        except OSError as e:
            sock.close()
            raise ToolError("no upstream MCP server answers this sandbox: its tenant has none, or "
                            "the gateway is going away (" + str(e) + ")", "unavailable")
        self.sock = sock


def _request(method, path, body=None):
    # A connection per request: calls from several threads never share one.
    connection = _Connection()
    try:
        payload = None if body is None else _json.dumps(body).encode()
        connection.request(method, path, body=payload,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        kind = response.getheader("Content-Type", "")
    finally:
        connection.close()
    if kind.startswith("text/plain"):
        if response.status != 200:
            raise ToolError(data.decode("utf-8", "replace"), "refused")
        return data.decode("utf-8", "replace")
    answer = _json.loads(data)
    if "error" in answer:
        error = answer["error"]
        raise ToolError(error.get("message", "the call failed"), error.get("kind", "refused"))
    return answer


def _content_value(item):
    kind = item.get("type")
    if kind == "text":
        return item.get("text", "")
    if kind in ("image", "audio"):
        return _base64.b64decode(item.get("data", ""))
    if kind == "resource":
        resource = item.get("resource", {})
        if "text" in resource:
            return resource["text"]
        return _base64.b64decode(resource.get("blob", ""))
    return item


def _unpack(result):
    content = result.get("content") or []
    if result.get("isError"):
        texts = [c.get("text", "") for c in content if c.get("type") == "text"]
        raise ToolError("\n".join(texts) or "the tool reported an error", "tool_error")
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    values = [_content_value(c) for c in content]
    if len(values) == 1:
        return values[0]
    if values and all(isinstance(v, str) for v in values):
        return "\n".join(values)
    return values


def call(server, tool, arguments=None):
    """Calls `tool` of upstream `server` with `arguments` (a dict) and returns its result."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TypeError("arguments must be a dict")
    answer = _request("POST", "/call", {"server": server, "tool": tool, "arguments": arguments})
    return _unpack(answer["result"])


async def acall(server, tool, arguments=None):
    """call() for asyncio: runs in a thread, so that several calls overlap."""
    return await _asyncio.to_thread(call, server, tool, arguments)


_listing = None


def list():  # noqa: A001 - the name the model is told
    """The servers this sandbox may call, each with its description and tools (name,
    description, inputSchema)."""
    global _listing
    _listing = _request("GET", "/list")["servers"]
    return _listing


def reference(server=None):
    """The signatures of the tools of `server` (or of every server), as text to read."""
    return _request("GET", "/reference" + ("/" + server if server else ""))


def _parameters(schema):
    properties = (schema or {}).get("properties") or {}
    required = set((schema or {}).get("required") or [])
    names = [n for n in properties if n.isidentifier() and not _keyword.iskeyword(n)]
    names.sort(key=lambda n: n not in required)
    kind = _inspect.Parameter.KEYWORD_ONLY
    return [_inspect.Parameter(n, kind, default=_inspect.Parameter.empty if n in required else None)
            for n in names]


class _Tool:
    def __init__(self, server, info):
        self._server = server
        self.__name__ = info["name"]
        self.__doc__ = info.get("description") or ""
        try:
            self.__signature__ = _inspect.Signature(_parameters(info.get("inputSchema")))
        except (TypeError, ValueError):
            pass

    def __call__(self, arguments=None, /, **keywords):
        merged = dict(arguments or {})
        merged.update(keywords)
        return call(self._server, self.__name__, merged)

    async def call_async(self, arguments=None, /, **keywords):
        return await _asyncio.to_thread(self, arguments, **keywords)

    def __repr__(self):
        return "<tool %s.%s>" % (self._server, self.__name__)


def _identifier(name):
    """A tool's name as a Python name: '_' for each character that cannot be in one."""
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return "_" + text if not text or text[0].isdigit() or _keyword.iskeyword(text) else text


class _Server:
    def __init__(self, info):
        self._name = info["name"]
        self.__doc__ = info.get("description") or ""
        # Its tools could not be listed (the upstream is down, refused the gateway): a call by
        # name still goes through, and raises the reason.
        self._unlisted = "error" in info
        self._tools = {}
        for t in info.get("tools") or []:
            tool = _Tool(self._name, t)
            self._tools[t["name"]] = tool
            self._tools.setdefault(_identifier(t["name"]), tool)

    def __getattr__(self, name):
        if name in self._tools:
            return self._tools[name]
        if self._unlisted and not name.startswith("__"):
            return _Tool(self._name, {"name": name})
        raise AttributeError("upstream %r has no tool %r it may call" % (self._name, name))

    def __dir__(self):
        return sorted(self._tools)

    def __repr__(self):
        return "<upstream %s: %s>" % (self._name, ", ".join(sorted(self._tools)))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    for info in _listing if _listing is not None else list():
        if info["name"] == name:
            return _Server(info)
    raise AttributeError("this sandbox may call no upstream named %r" % name)


def __dir__():
    return sorted(__all__ + [s["name"] for s in (_listing if _listing is not None else list())])
