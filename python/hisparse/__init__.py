"""HiSparse Lab from Python (docs/python.md): top-k traces as numpy arrays, replay through swap-in policies and device
buffer sizes, capacity plans and launch advice, serving simulations, and kernel validation, computed by the
project's C++ code.

The compiled part (hisparse._core) is loaded on first use, so `import hisparse` and `hisparse.capture` also work
where only the Python sources are installed (e.g. on a serving machine that records traces).
"""

try:
    from ._version import __version__  # written into the wheel by the build (pyproject.toml, from CMakeLists.txt)
except ImportError:  # the Python sources alone, not installed: the version pip recorded, if any
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("hisparse")
    except PackageNotFoundError:
        __version__ = "unknown (not installed)"

from .commands import AdviseResult, LayoutsResult, PlanResult, advise, cuda_status, plan, settings, validate
from .replay import ReplayResult, replay
from .simulate import SimulateResult, simulate
from .trace import Trace, open_trace, trace_meta, write_trace

read_trace = open_trace

__all__ = ["__version__", "AdviseResult", "LayoutsResult", "PlanResult", "Trace", "ReplayResult", "SimulateResult", "advise",
           "cuda_status", "open_trace", "plan", "read_trace", "replay", "settings", "simulate", "trace_meta", "validate",
           "write_trace"]
