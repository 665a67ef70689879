# @brief Atomic PNG output shared by the plot scripts: a figure is written to "<name>.tmp.png" and renamed, and the
# temporary file is removed when the script fails or is interrupted (SIGINT, SIGTERM, SIGHUP) while writing it.
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
    except BaseException:  # KeyboardInterrupt and SystemExit included
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
