# @brief What the plot scripts share: atomic PNG output (a figure is written to "<name>.tmp.png" and renamed, the
# temporary file removed when the script fails or is interrupted: SIGINT, SIGTERM, SIGHUP), one-line errors for
# OSError (a full disk names the PNG, no traceback), legends outside the axes and plain labels on log axes.
import os
import signal
import sys


def _exit_on_signal(signum, _frame):
    sys.exit(128 + signum)  # SystemExit unwinds through save_png's cleanup; the default action would not


for _sig in (signal.SIGTERM, signal.SIGHUP):
    if signal.getsignal(_sig) == signal.SIG_DFL:
        signal.signal(_sig, _exit_on_signal)


def save_png(fig, path, **savefig_kwargs):
    tmp = path + ".tmp.png"
    try:
        fig.savefig(tmp, **savefig_kwargs)
        os.replace(tmp, path)
    except BaseException as e:  # KeyboardInterrupt and SystemExit included
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            # A write error deep in the PNG encoder names no file (ENOSPC from a write()): name the PNG.
            raise OSError(e.errno, f"cannot write it: {e.strerror or e}", path) from e
        raise


def plain_log_ticks(ax, axis="x"):
    """Label a log axis in plain numbers (8, 16, 32; 60, 100) where matplotlib would write 2^3 or 6x10^1: the ticks
    matplotlib chooses to label stay the same, only their text changes."""
    from matplotlib import ticker

    class _Plain(ticker.LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            if not super().__call__(x, pos):  # a tick matplotlib leaves unlabelled stays so
                return ""
            if x >= 1 and float(x).is_integer():
                return f"{int(x):,}"
            return f"{x:g}"

    target = ax.xaxis if axis == "x" else ax.yaxis
    base = target.get_transform().base if hasattr(target.get_transform(), "base") else 10
    target.set_major_formatter(_Plain(base=base))
    target.set_minor_formatter(_Plain(base=base, labelOnlyBase=False))


def legend_outside(ax, **kwargs):
    """The legend to the right of the axes, never over a curve (save with bbox_inches="tight" so it is kept); for a
    grid of panels, with tight_layout making room beside each."""
    kwargs.setdefault("fontsize", 8)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def legend_below(ax, drop=0.14, **kwargs):
    """The legend under the axes (below the x label; `drop` more when the tick labels are rotated), never over a curve
    nor over a panel beside it: for figures of panels side by side. Save with bbox_inches="tight" so it is kept."""
    kwargs.setdefault("fontsize", 8)
    kwargs.setdefault("ncol", 2)
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -drop), borderaxespad=0.0, **kwargs)


def run_main(main):
    """Runs a plot script's main(); an OSError (a full disk, an unwritable folder, a missing input) ends it with one
    line naming the file and exit status 1, instead of a long traceback."""
    try:
        main()
    except OSError as e:
        name = os.path.basename(sys.argv[0])
        what = e.strerror or str(e)
        where = e.filename if e.filename else "its output"
        sys.stderr.write(f"{name}: {where}: {what}\n")
        sys.exit(1)
