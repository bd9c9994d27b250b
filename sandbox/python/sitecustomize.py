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
