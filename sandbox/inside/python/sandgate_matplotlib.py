# sandgate's matplotlib backend (MPLBACKEND=module://sandgate_matplotlib): Agg, whose show()
# hands the figures to the gateway as PNGs and closes them; figures still open when a fresh
# process exits go the same way. Without a figure channel (a python3 that bash started) it
# behaves like Agg: show() only closes the figures.
import atexit

from matplotlib.backend_bases import FigureManagerBase as FigureManager  # noqa: F401
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas  # noqa: F401

import sandgate_figures

backend_version = "sandgate"


def show(*args, **kwargs):
    sandgate_figures.send_open_figures()


# Registered after pyplot's own exit handler (which destroys every figure), so it runs first.
atexit.register(sandgate_figures.send_open_figures)
