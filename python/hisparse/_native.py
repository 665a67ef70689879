"""Lazy access to the compiled module hisparse._core.

`import hisparse` must work where only the Python sources exist (a serving machine that runs hisparse.capture), so
nothing imports _core at import time: each compiled function asks for it when called.
"""

import contextlib
import importlib.resources
import os
import sys

_core = None
# Keeps the package data's file-system path valid while the process runs (a real directory for an installed wheel).
_data_files = contextlib.ExitStack()


def data_dir():
    """The package data (scenarios/, scripts/) as a path, or None where only the Python sources exist."""
    data = importlib.resources.files(__package__) / "data"
    if not data.is_dir():
        return None
    return _data_files.enter_context(importlib.resources.as_file(data))


def core():
    """The compiled module; ImportError saying how to build it when it is not there."""
    global _core
    if _core is None:
        try:
            from . import _core as module  # noqa: PLC0415 (deliberately lazy)
        except ImportError as e:
            raise ImportError(
                "hisparse: the compiled module hisparse._core is not available "
                f"({e}); traces, replay, plan, advise and validate need it. Build and install the package from the "
                "source tree with `pip install .` (docs/python.md); hisparse.capture works without it") from e
        # Scenario names resolve to the package's own copy after $HISPARSE_SCENARIO_DIR and ./scenarios, not to
        # the clone the module was built from (which may have moved); the plot scripts sit beside it.
        data = data_dir()
        if data is not None:
            module.set_bundled_scenario_dir(os.fspath(data / "scenarios"))
        _core = module
    return _core


@contextlib.contextmanager
def stdout_silenced(silence):
    """Sends what the C++ commands print to C's stdout (file descriptor 1) to /dev/null while the block runs."""
    if not silence:
        yield
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable descriptor 1 (embedded interpreters): print as is
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        core().flush_stdout()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
