# sandgate: hands matplotlib figures to the gateway as PNG frames — on the persistent
# interpreter's reply channel (the driver attaches it) or on a fresh process's figure channel
# (sitecustomize found it). Imported only once a figure is shown, or by the interpreter's driver;
# it imports matplotlib itself only when pyplot is already loaded.
#
# Frame: "<IIII" magic "SGIM", the call's sequence number, PNG length, 0; then the PNG. A
# zero-length frame stands for a figure that is not sent: its last field says why (OVER_COUNT,
# OVER_BYTES). The gateway trusts none of it: it checks every frame and enforces its own limits
# (a frame longer than MAX_BYTES breaks the channel).
import os
import struct
import sys
import threading

MAX_FIGURES = 8  # rendered per call; the rest are only counted
MAX_SIDE = 2000  # pixels; a larger figure is rendered at a lower dpi
MAX_BYTES = 4 << 20  # PNG bytes per call, all figures together
OVER_COUNT, OVER_BYTES = 0, 1

_HEADER = struct.Struct("<IIII")
_MAGIC = 0x4D494753  # "SGIM"
_lock = threading.Lock()
_channel = getattr(sys.modules.get("sitecustomize"), "figures_fd", None)
_seq = 0
_count = 0
_bytes = 0


def attach(fd):
    global _channel
    _channel = fd


def begin(seq):
    """A new call: its frames carry `seq` and the count starts again."""
    global _seq, _count, _bytes
    _seq, _count, _bytes = seq, 0, 0


def write_whole(data, fd=None):
    """Writes all of `data` to the channel (or `fd`: the driver's reply channel, whatever a cell
    did to this module), under the lock, so frames never interleave. An interrupt in the middle
    is deferred until the write is whole: half a frame breaks the channel."""
    interrupted = False
    fd = _channel if fd is None else fd
    with _lock:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view):]
            except KeyboardInterrupt:
                interrupted = True
    if interrupted:
        raise KeyboardInterrupt


def _render(figure):
    import io

    width, height = figure.get_size_inches()
    dpi = figure.dpi
    longest = max(width, height) * dpi
    if longest > MAX_SIDE:
        dpi = dpi * MAX_SIDE / longest
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def send(figure):
    global _count, _bytes
    if _channel is None:
        return
    _count += 1
    data, why = b"", OVER_COUNT
    if _count <= MAX_FIGURES:
        try:
            data = _render(figure)
        except Exception as error:
            print("sandgate: a figure could not be rendered: %s: %s"
                  % (type(error).__name__, error), file=sys.stderr)
            return
        if _bytes + len(data) > MAX_BYTES:
            data, why = b"", OVER_BYTES
        _bytes += len(data)
    try:
        write_whole(_HEADER.pack(_MAGIC, _seq, len(data), why) + data)
    except OSError:
        pass  # the gateway has gone: the sandbox is ending


def send_open_figures():
    """Sends every open figure, then closes them (a notebook's inline display)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    if _channel is not None:
        from matplotlib._pylab_helpers import Gcf

        for manager in Gcf.get_all_fig_managers():
            send(manager.canvas.figure)
    pyplot.close("all")


def close_open_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
