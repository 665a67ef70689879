"""Wrapping an engine's swap-in method so every call is recorded and then passed through unchanged.

The wrapper calls the original first and returns its result untouched; recording happens afterwards and never
raises into the engine: an error is logged once and the capture is stopped (its temporary files removed), so a
capture problem cannot take a server down. While a CUDA graph is being captured nothing is recorded (the
Python call is not repeated at graph replay, so a graph-captured decode cannot be recorded: run the server with CUDA
graphs off, e.g. SGLang's --disable-cuda-graph).
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.util
import inspect
import logging
import os
import sys
import threading
from typing import Callable, Optional

from .native_writer import zstd_compressor
from .recorder import TopkRecorder

logger = logging.getLogger("hisparse.capture")


def _graph_capturing() -> bool:
    torch = sys.modules.get("torch")  # only if the engine imported it; never import it ourselves
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:
        return False


def expand_path(path: str) -> str:
    """`{pid}` and `{rank}` (env RANK / LOCAL_RANK, else 0) in a capture path, so each process writes its own."""
    rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0"))
    return path.replace("{pid}", str(os.getpid())).replace("{rank}", rank)


class Capture:
    """One capture session: a recorder created lazily at the first swap-in (when layers and K are known)."""

    def __init__(self, path: str, initial_state: str = "identity", max_requests: int = 0,
                 chunk_bytes: int = 1 << 18, compress: bool = False, layers: Optional[int] = None):
        self.path = expand_path(path)
        if compress:
            zstd_compressor(3, self.path)  # refused at install(), not at the server's first swap-in
        self.initial_state = initial_state
        self.max_requests = max_requests
        self.chunk_bytes = chunk_bytes
        self.compress = compress
        self.layers = layers
        self.recorder: Optional[TopkRecorder] = None
        self.active = True
        self.lock = threading.Lock()
        self.direct_admissions = 0  # SGLang: requests admitted straight to host with n > H (empty initial state)
        self.skipped_graph_calls = 0
        atexit.register(self.stop)

    def ensure(self, layers: int, top_k: int) -> TopkRecorder:
        if self.recorder is None:
            self.recorder = TopkRecorder(self.path, self.layers or layers, top_k, self.initial_state,
                                         self.chunk_bytes, self.compress)
            logger.info("hisparse capture: recording %d layers x top_k %d to %s", self.recorder.layers, top_k,
                        self.path)
        return self.recorder

    def guarded(self, what: str, fn: Callable[[], None]) -> None:
        if not self.active:
            return
        with self.lock:
            if not self.active:
                return
            try:
                fn()
                if self.max_requests and self.recorder and self.recorder.finished_requests >= self.max_requests:
                    self.stop()
            except Exception as e:  # never into the engine
                logger.error("hisparse capture: %s failed, capture stopped and discarded: %s", what, e)
                self.active = False
                if self.recorder is not None:
                    self.recorder.abort()

    def stop(self) -> Optional[str]:
        """Finalises the trace (atomic rename); returns its path, or None when nothing was recorded."""
        if not self.active:
            return None
        self.active = False
        if self.recorder is None:
            return None
        rec = self.recorder
        path = rec.close()
        if self.direct_admissions and self.initial_state == "identity":
            logger.warning("hisparse capture: %d requests were admitted direct-to-host with n > H (their buffer "
                           "starts empty); replay with --initial-state empty", self.direct_admissions)
        for e in rec.errors:
            logger.warning("hisparse capture: %s", e)
        logger.info("hisparse capture: wrote %s (%d requests, %d cut, %d incomplete steps)", path,
                    rec.finished_requests, rec.dropped_requests, rec.incomplete_steps)
        return path


def wrap_method(cls, name: str, after: Callable, capture: Capture):
    """Replaces cls.<name> by a wrapper that calls the original, then `after(self, result, *args, **kwargs)`
    under the capture's guard. Returns the original (kept as cls._hisparse_orig_<name> for `unwrap_method`)."""
    orig = getattr(cls, name)
    if getattr(orig, "_hisparse_wrapped", False):
        orig = getattr(cls, f"_hisparse_orig_{name}")

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        if capture.active:
            capture.guarded(f"{cls.__name__}.{name}", lambda: after(self, result, *args, **kwargs))
        return result

    wrapper._hisparse_wrapped = True
    setattr(cls, f"_hisparse_orig_{name}", orig)
    setattr(cls, name, wrapper)
    return orig


def unwrap_method(cls, name: str) -> None:
    orig = getattr(cls, f"_hisparse_orig_{name}", None)
    if orig is not None:
        setattr(cls, name, orig)
        delattr(cls, f"_hisparse_orig_{name}")


def bind_args(names, args, kwargs, original: Optional[Callable] = None):
    """Positional + keyword arguments of a call as a dict by parameter name (the engine may use either). With the
    original method, by its own signature, defaults included: engine versions add parameters after `names`."""
    out = None
    if original is not None:
        try:
            bound = inspect.signature(original).bind(None, *args, **kwargs)  # None stands for self
            bound.apply_defaults()
            out = dict(bound.arguments)
        except (TypeError, ValueError):
            out = None
    if out is None:
        out = dict(zip(names, args))
        out.update(kwargs)
    missing = [n for n in names if n not in out]
    if missing:
        raise TypeError(f"swap-in call without {missing} (expected parameters {list(names)})")
    return out


def env_flag(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_int(name: str, default: int) -> int:
    v = env_flag(name)
    if not v:
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{name}={v!r}: expected an integer") from None


def settings_from_env() -> Optional[dict]:
    """install()'s keyword arguments from HISPARSE_CAPTURE* (docs/capture.md); None when HISPARSE_CAPTURE is unset."""
    path = env_flag("HISPARSE_CAPTURE")
    if not path:
        return None
    return dict(path=path, initial_state=env_flag("HISPARSE_CAPTURE_INITIAL_STATE", "identity"),
                max_requests=env_int("HISPARSE_CAPTURE_MAX_REQUESTS", 0),
                chunk_bytes=env_int("HISPARSE_CAPTURE_CHUNK_BYTES", 1 << 18),
                compress=env_flag("HISPARSE_CAPTURE_ZSTD") == "1",
                layers=env_int("HISPARSE_CAPTURE_LAYERS", 0) or None)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs `patch(cls)` right after the engine imports `module` (so enabling a capture imports nothing heavy)."""

    def __init__(self, module: str, cls_name: str, patch: Callable):
        self.module, self.cls_name, self.patch = module, cls_name, patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.module:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:
            spec = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            self.patch(getattr(module, self.cls_name))

        spec.loader.exec_module = exec_and_patch
        return spec


def patch_on_import(module: str, cls_name: str, patch: Callable) -> None:
    sys.meta_path.insert(0, _PatchOnImport(module, cls_name, patch))


def cancel_patch_on_import(module: str) -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not (isinstance(f, _PatchOnImport) and f.module == module)]



def start(running: Optional[Capture], path: str, initial_state: str, max_requests: int, chunk_bytes: int,
          compress: bool, layers: Optional[int]) -> Capture:
    """What every engine's install() does first: refuses a second running capture and opens the new one."""
    if running is not None and running.active:
        raise RuntimeError(f"a capture to {running.path} is running; call stop() first")
    return Capture(path, initial_state, max_requests, chunk_bytes, compress, layers)


def attach(module: str, cls_name: str, cls, patch: Callable) -> None:
    """Patches `cls`, or the engine's class now if its module is imported, else when the engine imports it (after
    start(): the patched methods record into the capture that start() returned)."""
    if cls is not None:
        patch(cls)
    elif module in sys.modules:
        patch(getattr(sys.modules[module], cls_name))
    else:
        patch_on_import(module, cls_name, patch)
