"""hisparse.replay: `hisparse replay` from Python, over a trace file or numpy arrays (docs/replay.md, docs/python.md).

The C++ replay engine and report run unchanged: `ReplayResult.json_text` / `csv_text` are what the CLI writes to
replay.json / replay.csv for the same trace and options (the recommendation says none was made: a buffer size needs a
deployment, see hisparse.advise), and `steps` holds the rows of `--per-step-csv` as columns.
"""

import json
import os
from dataclasses import dataclass

import numpy as np

from ._native import core
from .trace import Trace, _check_initial_state, _check_top_k, normalize_arrays

# The CLI's defaults (`hisparse replay --help`).
DEFAULT_BUFFER_SIZES = (2048, 3072, 4096, 6144, 8192)
DEFAULT_POLICIES = ("sglang-lru", "belady")
STEP_COLUMNS = ("policy", "buffer_size", "request", "layer", "step", "seq_len", "selected", "hits", "newest_hits",
                "misses", "h2d_bytes")


@dataclass
class ReplayResult:
    """What a replay gives (all figures measured by replaying the trace, except `seconds`: wall time of the call)."""

    json: dict        # replay.json, parsed
    json_text: str    # replay.json byte for byte
    csv_text: str     # replay.csv byte for byte
    steps: dict       # per-step rows as numpy columns (STEP_COLUMNS); empty arrays when per_step=False
    seconds: float    # the engine's wall time
    entries: int      # selected entries replayed, summed over configurations
    threads: int

    @property
    def totals(self):
        """{(policy, buffer_size): that configuration's counters as in replay.json's "results"}."""
        return {(r["policy"], r["buffer_size"]): r for r in self.json["results"]}

    @property
    def totals_df(self):
        """replay.csv's table as a pandas DataFrame."""
        import io
        return _pandas().read_csv(io.StringIO(self.csv_text))

    @property
    def steps_df(self):
        """The per-step rows (`hisparse replay --per-step-csv`'s columns and order) as a pandas DataFrame."""
        return _pandas().DataFrame({c: self.steps[c] for c in STEP_COLUMNS})


def _pandas():
    try:
        import pandas  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        raise ImportError("hisparse: DataFrames need pandas (pip install pandas); the same data is in "
                          "ReplayResult.steps (numpy) and ReplayResult.totals (dict)") from e
    return pandas


def _int_list(values, name, minimum):
    if isinstance(values, (int, np.integer)):
        values = [values]
    try:
        out = list(values)
    except TypeError:
        raise ValueError(f"{name}: {values!r}, expected a list of integers") from None
    if not out:
        raise ValueError(f"{name}: empty, expected at least one value")
    for v in out:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < minimum or v > 2**31 - 1:
            raise ValueError(f"{name}: {v!r} is not an integer in {minimum}..2^31-1")
    return [int(v) for v in out]


def _str_list(values, name):
    out = [values] if isinstance(values, str) else list(values)
    if not out or not all(isinstance(v, str) and v for v in out):
        raise ValueError(f"{name}: {values!r}, expected policy names (e.g. 'sglang-lru', 'belady')")
    # `--policy a,b` accepts a comma-separated string; so does this.
    return [p.strip() for v in out for p in v.split(",") if p.strip()]


def replay(trace, buffer_sizes=DEFAULT_BUFFER_SIZES, policies=DEFAULT_POLICIES, *, seq_lens=None, request_ids=None,
           threads=None, row_bytes=1152, top_k=None, initial_state=None, lookahead_mb=1024, per_step=True):
    """Replays a trace through every (policy, buffer size), as `hisparse replay` does.

    trace: a path (native file, `.npy` directory, JSON lines), a hisparse.Trace, or topk arrays with `seq_lens=`
    (one `[steps, layers, K]` array, or a list of them with a list of `[steps]` arrays).
    policies: names as `hisparse replay --policy` takes them (docs/swap_in.md, "Policies"): sglang-lru (the
    contract), belady, topk-only, fifo, lfu, clock; set-assoc (LRU shards, SGLang #31341; set-assoc:SxW) and
    hisparse-v2 (SGLang's HiSparse V2, PR #32314: its newest_hits count every resident-device-page entry;
    hisparse-v2:P for page P).
    threads: worker threads (default: the hardware threads, as the CLI); the output does not depend on it.
    """
    sizes = _int_list(buffer_sizes, "buffer_sizes", 1)
    pols = _str_list(policies, "policies")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1):
        raise ValueError(f"threads: {threads!r}, expected an integer >= 1 (or None: the hardware threads)")
    if isinstance(row_bytes, bool) or not isinstance(row_bytes, (int, np.integer)) or row_bytes < 1:
        raise ValueError(f"row_bytes: {row_bytes!r}, expected an integer >= 1")
    if isinstance(lookahead_mb, bool) or not isinstance(lookahead_mb, (int, np.integer)) or not 1 <= lookahead_mb <= 2**30:
        raise ValueError(f"lookahead_mb: {lookahead_mb!r}, expected an integer in 1..2^30")
    k = _check_top_k(top_k)
    common = (pols, sizes, int(row_bytes), int(threads or 0), int(lookahead_mb), bool(per_step))
    if isinstance(trace, (str, os.PathLike)):
        if seq_lens is not None or request_ids is not None:
            raise ValueError("seq_lens / request_ids: only with topk arrays, not with a trace path")
        d = core().replay_path(os.fspath(trace), k, _check_initial_state(initial_state, True), common)
    else:
        if isinstance(trace, Trace):
            if seq_lens is not None or request_ids is not None:
                raise ValueError("seq_lens / request_ids: a Trace carries its own")
            ids, tk, sl, state = trace.request_ids, trace.topk, trace.seq_lens, trace.initial_state
            width = tk[0].shape[2]
            k = k or (0 if trace.top_k == width else trace.top_k)
        else:
            if seq_lens is None:
                raise ValueError("seq_lens: required with topk arrays (the sequence length of every step)")
            ids, tk, sl, _, _ = normalize_arrays(trace, seq_lens, request_ids)
            state = "identity"
        if initial_state is not None:
            state = _check_initial_state(initial_state, False)
        d = core().replay_arrays(list(zip(ids, tk, sl)), k, state, common)
    names = np.array(d["config_policy"], dtype=object)
    cfg = d["steps"]["config"]
    steps = {"policy": names[cfg] if len(names) else np.array([], dtype=object),
             "buffer_size": np.asarray(d["config_buffer_size"], dtype=np.int32)[cfg]}
    for c in STEP_COLUMNS[2:]:
        steps[c] = d["steps"][c]
    return ReplayResult(json.loads(d["json"]), d["json"], d["csv"], steps, d["seconds"], d["entries"], d["threads"])
