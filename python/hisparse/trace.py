"""Top-k traces as numpy arrays (docs/traces.md, docs/python.md).

A trace holds, per request, `topk[request]`: int32 `[steps, layers, K]` (token positions picked per decode step and
layer, -1 padding) and `seq_lens[request]`: `[steps]` (the sequence length n of each step). Writing and reading go
through the project's own writers and readers (native file, `.npy` directory; JSON lines read only), so every check
a trace file gets, arrays get too.
"""

import os
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from ._native import core

_INT32 = np.iinfo(np.int32)
FORMATS = ("native", "npy")


def _as_int32(value, name, ndim, shape_text):
    """`value` as a C-contiguous int32 array of `ndim` dimensions; ValueError naming `name` otherwise."""
    a = np.asarray(value)
    if a.dtype.kind not in "iu" or a.dtype == np.bool_:
        raise ValueError(f"{name}: dtype {a.dtype}, expected an integer dtype (int32 or int64) {shape_text}")
    if a.ndim != ndim:
        raise ValueError(f"{name}: {a.ndim}-D array of shape {list(a.shape)}, expected {shape_text}")
    if a.dtype != np.int32 and a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < _INT32.min or hi > _INT32.max:
            raise ValueError(f"{name}: values {lo}..{hi} do not fit int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _itemsize(arrays):
    """The `.npy` element size to write: 8 when every input came as a 64-bit array, else 4."""
    return 8 if arrays and all(np.asarray(a).dtype.itemsize == 8 for a in arrays) else 4


def normalize_arrays(topk, seq_lens, request_ids=None):
    """(request_ids, topk list, seq_lens list, topk itemsize, seq_lens itemsize), checked and as int32.

    `topk` is one `[steps, layers, K]` array (one request) or a sequence of them; `seq_lens` matches: one `[steps]`
    array or a sequence of them, in the same order.
    """
    if isinstance(topk, np.ndarray):
        if not isinstance(seq_lens, np.ndarray):
            raise ValueError("seq_lens: topk is one array (one request), so seq_lens must be one [steps] array too, "
                             f"got {type(seq_lens).__name__}")
        topk, seq_lens = [topk], [seq_lens]
    elif isinstance(topk, (list, tuple)):
        if isinstance(seq_lens, np.ndarray) or not isinstance(seq_lens, (list, tuple)):
            raise ValueError("seq_lens: topk is a list of per-request arrays, so seq_lens must be a list of [steps] "
                             f"arrays of the same length, got {type(seq_lens).__name__}")
    else:
        raise ValueError(f"topk: expected a [steps, layers, K] integer array or a list of them (one per request), "
                         f"got {type(topk).__name__}")
    if len(topk) == 0:
        raise ValueError("topk: no request (expected at least one [steps, layers, K] array)")
    if len(seq_lens) != len(topk):
        raise ValueError(f"seq_lens: {len(seq_lens)} arrays for {len(topk)} topk arrays (one per request)")
    if request_ids is None:
        ids = list(range(len(topk)))
    else:
        ids = list(request_ids)
        if len(ids) != len(topk):
            raise ValueError(f"request_ids: {len(ids)} ids for {len(topk)} requests")
        for i, r in enumerate(ids):
            if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
                raise ValueError(f"request_ids[{i}]: {r!r} is not an integer")
        ids = [int(r) for r in ids]
        if len(set(ids)) != len(ids):
            raise ValueError(f"request_ids: ids repeat ({ids})")
    tk, sl = [], []
    for i, (t, s) in enumerate(zip(topk, seq_lens)):
        t32 = _as_int32(t, f"topk[{i}]", 3, "[steps, layers, K]")
        s32 = _as_int32(s, f"seq_lens[{i}]", 1, "[steps]")
        if t32.shape[0] == 0:
            raise ValueError(f"topk[{i}]: no step (shape {list(t32.shape)}); a request needs at least one")
        if t32.shape[1] == 0 or t32.shape[2] == 0:
            raise ValueError(f"topk[{i}]: shape {list(t32.shape)} has no layer or an empty list width")
        if s32.shape[0] != t32.shape[0]:
            raise ValueError(f"seq_lens[{i}]: {s32.shape[0]} entries for the {t32.shape[0]} steps of topk[{i}]")
        if tk and t32.shape[1:] != tk[0].shape[1:]:
            raise ValueError(f"topk[{i}]: [layers, K] = {list(t32.shape[1:])} differs from topk[0]'s "
                             f"{list(tk[0].shape[1:])}")
        tk.append(t32)
        sl.append(s32)
    return ids, tk, sl, _itemsize(topk), _itemsize(seq_lens)


def _check_top_k(top_k):
    if top_k is None:
        return 0
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k: {top_k!r}, expected an integer >= 1 (or None: the trace's own)")
    return int(top_k)


def _check_initial_state(state, allow_none):
    if state is None and allow_none:
        return ""
    if state not in ("identity", "empty"):
        raise ValueError(f"initial_state: {state!r}, expected 'identity' or 'empty'"
                         + (" (or None: the trace's own)" if allow_none else ""))
    return state


@dataclass
class Trace:
    """A whole trace in memory: per request an int32 `[steps, layers, top_k]` array and its `[steps]` seq_lens."""

    request_ids: List[int]
    topk: List[np.ndarray]
    seq_lens: List[np.ndarray]
    top_k: int
    initial_state: str = "identity"
    source: Optional[str] = None   # the path it was read from (None: built from arrays)
    format: Optional[str] = None   # native | npy | jsonl when read from a file
    topk_dtype_bytes: int = 4      # element sizes an `.npy` copy is written with (8 keeps int64 files int64)
    seq_lens_dtype_bytes: int = 4

    @classmethod
    def from_arrays(cls, topk, seq_lens, request_ids=None, top_k=None, initial_state="identity"):
        """Checks the arrays as a trace reader checks a file (ValueError naming request, step and layer)."""
        ids, tk, sl, tb, sb = normalize_arrays(topk, seq_lens, request_ids)
        k = _check_top_k(top_k)
        state = _check_initial_state(initial_state, allow_none=False)
        core().check_trace(list(zip(ids, tk, sl)), k, state)
        return cls(ids, tk, sl, k or tk[0].shape[2], state, None, None, tb, sb)

    @property
    def layers(self):
        return int(self.topk[0].shape[1])

    @property
    def steps(self):
        """Decode steps of every request together."""
        return int(sum(len(s) for s in self.seq_lens))

    @property
    def meta(self):
        return {"layers": self.layers, "top_k": self.top_k, "initial_state": self.initial_state,
                "source": self.source, "format": self.format, "request_ids": list(self.request_ids)}

    def _requests(self):
        return list(zip(self.request_ids, self.topk, self.seq_lens))

    def write(self, path, format="native", zstd_level=3):
        """Writes a native file (`format="native"`) or an `.npy` directory (`"npy"`); appears only when complete."""
        if format not in FORMATS:
            raise ValueError(f"format: {format!r}, expected one of {', '.join(FORMATS)}")
        if isinstance(zstd_level, bool) or not isinstance(zstd_level, (int, np.integer)) or not 1 <= zstd_level <= 22:
            raise ValueError(f"zstd_level: {zstd_level!r}, expected an integer in 1..22")
        width = self.topk[0].shape[2]
        core().write_trace(os.fspath(path), format, self._requests(), 0 if self.top_k == width else self.top_k,
                           self.initial_state, self.topk_dtype_bytes, self.seq_lens_dtype_bytes, int(zstd_level))


def write_trace(path, topk, seq_lens, request_ids=None, format="native", top_k=None, initial_state="identity",
                zstd_level=3):
    """Writes arrays as a trace file (see Trace.write); returns the Trace written."""
    trace = Trace.from_arrays(topk, seq_lens, request_ids, top_k, initial_state)
    trace.write(path, format, zstd_level)
    return trace


def open_trace(path, top_k=None, initial_state=None):
    """Reads a whole trace (native, `.npy` directory or JSON lines; detected as the CLI does) into arrays.

    `top_k` / `initial_state` override what the trace declares, as `--top-k` / `--initial-state` do."""
    d = core().read_trace(os.fspath(path), _check_top_k(top_k), _check_initial_state(initial_state, True), False)
    ids = [r[0] for r in d["requests"]]
    return Trace(ids, [r[1] for r in d["requests"]], [r[2] for r in d["requests"]], d["top_k"], d["initial_state"],
                 d["source"], d["format"], d["topk_dtype_bytes"], d["seq_lens_dtype_bytes"])


def trace_meta(path, top_k=None, initial_state=None):
    """What a trace declares, without reading its steps: layers, top_k, initial_state, format, request ids."""
    d = core().read_trace(os.fspath(path), _check_top_k(top_k), _check_initial_state(initial_state, True), True)
    d.pop("requests")
    return d
