# sandgate's persistent Python interpreter: runs each call's code ("cell") in one namespace that
# lives as long as the sandbox's interpreter. Protocol: docs/architecture.md, "Persistent
# interpreters". Passed as `python3 -c <this source>`, inside the sandbox, as its unprivileged
# uid: the gateway trusts nothing this process writes.
import ast
import builtins
import fcntl
import io
import linecache
import os
import signal
import struct
import sys
import traceback
import types

import sandgate_figures  # /sandgate/python, on PYTHONPATH

import site as _site  # imported already by the interpreter's start

_USER_SITE = _site.getusersitepackages() if _site.ENABLE_USER_SITE else None

REQUEST = struct.Struct("<IIII")
REPLY = struct.Struct("<IIIi")
REQUEST_MAGIC = 0x51524753
REPLY_MAGIC = 0x50524753
FINISHED, INTERRUPTED = 0, 1

# The channel moves out of the way of the program's own descriptors, close-on-exec, so a
# subprocess the cell starts does not inherit it.
_requests = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 1000)
_replies = fcntl.fcntl(4, fcntl.F_DUPFD_CLOEXEC, 1000)
os.close(3)
os.close(4)
# Figures a cell shows (or leaves open) go to the gateway as frames before the cell's reply.
sandgate_figures.attach(_replies)

_running = False


def _on_sigint(signum, frame):
    # Only a running cell is interrupted; a late SIGINT (the cell finished as the timeout fired)
    # must not hit the driver between cells.
    if _running:
        raise KeyboardInterrupt


def _read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(_requests, min(n, 1 << 20))
        if not chunk:
            sandgate_figures.attach(None)
            sys.exit(0)  # the gateway closed the channel: the sandbox is ending
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _show(value):
    # What the interactive interpreter prints for an expression statement.
    if value is not None:
        builtins._ = value
        print(repr(value))


def _run_cell(source, filename, namespace):
    """Returns 0, or 1 after printing a traceback. KeyboardInterrupt and SystemExit propagate."""
    global _running
    try:
        tree = ast.parse(source, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec")
        tail = compile(last, filename, "eval") if last is not None else None
    except SyntaxError:
        traceback.print_exception(*sys.exc_info(), limit=0)
        return 1
    try:
        _running = True
        exec(body, namespace)
        if tail is not None:
            _show(eval(tail, namespace))
        return 0
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        # Leave out the driver's own frame, as a script's traceback would.
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        return 1
    finally:
        _running = False


def _line_buffered():
    # Block-buffered, a cell's prints would reach the gateway (and a client following the call
    # live) only at its end; unbuffered, print() makes two writes a line. Line buffering: one
    # write per line, as it is printed (sitecustomize.py does the same for fresh processes).
    # Checked before each cell, since a cell may reconfigure the streams.
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream.write_through or not stream.line_buffering:
                stream.reconfigure(line_buffering=True, write_through=False)
        except Exception:
            pass
def _user_site_on_path():
    """Packages a cell installs (pip's user site, /work/.local: PYTHONUSERBASE) are importable in
    the next cell: at the interpreter's start that directory may not have existed, and then site
    left it off sys.path. One stat per cell; nothing when it is there already."""
    site_dir = _USER_SITE
    if site_dir and site_dir not in sys.path and os.path.isdir(site_dir):
        _site.addsitedir(site_dir)


def _send_figures():
    """Figures the cell left open are shown, as in a notebook. Rendering can take a while: an
    interrupt (the call's timeout) stops it."""
    global _running
    try:
        _running = True
        sandgate_figures.send_open_figures()
    finally:
        _running = False


def main():
    signal.signal(signal.SIGINT, _on_sigint)
    # The cells' namespace is a module of its own, installed as __main__, so that what pickle
    # (multiprocessing) and inspect look up there is found.
    main_module = types.ModuleType("__main__")
    main_module.__builtins__ = builtins
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__
    sys.argv = [""]
    while True:
        magic, seq, code_len, stdin_len = REQUEST.unpack(_read_exact(REQUEST.size))
        if magic != REQUEST_MAGIC:
            sys.exit(2)
        source = _read_exact(code_len).decode("utf-8", "replace")
        stdin = _read_exact(stdin_len)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="replace")
        filename = "<cell %d>" % seq
        # Tracebacks show the cell's lines, as they do for a script.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        linecache.cache.pop("<cell %d>" % (seq - 256), None)  # bounded: the latest cells
        kind, value = FINISHED, 0
        _line_buffered()
        _user_site_on_path()
        sandgate_figures.begin(seq)
        try:
            value = _run_cell(source, filename, namespace)
            _send_figures()
        except KeyboardInterrupt:
            kind, value = INTERRUPTED, 0
            sandgate_figures.close_open_figures()  # an interrupted cell's figures are dropped
        except SystemExit:
            _flush()
            raise
        _flush()
        try:
            sandgate_figures.write_whole(REPLY.pack(REPLY_MAGIC, seq, kind, value), _replies)
        except KeyboardInterrupt:
            pass  # a late interrupt: the reply is whole, the call is over


main()
