# sandgate: imported by every python3 in the sandbox at start (PYTHONPATH=/sandgate/python).
# A `fresh: true` Python call gets a figure channel at fd 3 (SANDGATE_FIGURES_FD=3): move it out of
# the program's way, close-on-exec, so no subprocess inherits it, and hide the variable from
# subprocesses. Only os, which site has already imported: a program that plots nothing pays for
# no more than this file.
import os

figures_fd = None
if os.environ.pop("SANDGATE_FIGURES_FD", None) == "3":
    try:
        figures_fd = os.dup2(3, 1000, inheritable=False)
        os.close(3)
    except OSError:
        figures_fd = None

# Line-buffered stdout and stderr: block-buffered, a program's prints would reach the gateway (and
# a client following the call live) only by 8 KiB or at its end; unbuffered (PYTHONUNBUFFERED),
# print() makes two writes a line and an output-heavy program runs about 1.5 times slower than
# line-buffered. The persistent interpreter's driver does the same before each cell.
import sys

for _stream in (sys.stdout, sys.stderr):
    try:
        _stream.reconfigure(line_buffering=True)
    except (AttributeError, ValueError):
        pass
del _stream
