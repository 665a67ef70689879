"""Top-k capture for vLLM's HiSparse port (sparse MLA hot-buffer decode).

Call site (vLLM, vllm/v1/attention/backends/mla/hisparse.py, class HiSparseCoordinator, one instance per layer
that runs its own indexer; layers sharing an indexer replay the leader's plan and do not call it):

    swap_in(self, *, kv_cache, req_id_per_token, block_table, topk_indices, block_size, slot_mapping,
            return_valid_counts=False, produce_plan=False)

topk_indices [tokens, K] are request-relative token positions (-1 padding), req_id_per_token [tokens] the batch
row of each token, block_table [rows, blocks] the rows' KV block ids, slot_mapping [tokens] the global KV slot of
each row's newest token (None for mixed prefill/decode batches). The call carries no sequence length, so n is
recovered from the newest token's slot: its block is found in the row's block table at column j and
n - 1 = j * block_size + slot % block_size. Calls with slot_mapping None are not recorded (not a pure decode step;
the request's next recorded step follows without a gap in the trace's numbering).

Layers: the trace's layer l is the l-th coordinator (in order of first call) that calls swap_in; their number is
vLLM's list of indexer-owning coordinators (module-level _COORDINATORS) or HISPARSE_CAPTURE_LAYERS.
Requests: vLLM condenses batch rows when requests finish, so a row is not a request identity. A request is keyed
by the first KV block of its row (stable while it runs); rows whose first block is shared (prefix caching) in the
same call are told apart by row. A key whose n does not continue (n not above the last recorded n) starts a new
trace request. This is a heuristic, documented as such in docs/capture.md.

Enable as for SGLang: `hisparse.capture.vllm.install(path)` / `stop()`, or HISPARSE_CAPTURE with the autoload
directory on PYTHONPATH (HISPARSE_CAPTURE_ENGINE=vllm). The vLLM source was read for the signature above; no vLLM
server was run: tests use a stand-in class with the same method and keyword arguments.
"""

from __future__ import annotations

import sys
from typing import Dict, Optional

import numpy as np

from . import hooks
from .recorder import to_numpy

MODULE = "vllm.v1.attention.backends.mla.hisparse"
CLASS = "HiSparseCoordinator"
SWAP_IN = "swap_in"

_capture: Optional[hooks.Capture] = None
_patched = []
_layer_of: Dict[int, int] = {}


def _layers_total(coord) -> int:
    if _capture.layers:
        return _capture.layers
    mod = sys.modules.get(type(coord).__module__)
    coords = getattr(mod, "_COORDINATORS", None)
    if not coords:
        raise AttributeError("cannot tell the number of swap-in layers (set HISPARSE_CAPTURE_LAYERS)")
    return len(coords)


def newest_positions(block_table: np.ndarray, rows: np.ndarray, slots: np.ndarray, block_size: int) -> np.ndarray:
    """n - 1 per token from its newest token's global slot; -1 where the block is not in the row's table."""
    blocks = slots // block_size
    match = block_table[rows] == blocks[:, None]
    found = match.any(axis=1)
    col = match.argmax(axis=1)
    return np.where(found, col * block_size + slots % block_size, -1)


def _after_swap_in(coord, _result, *args, **kwargs):
    if hooks._graph_capturing():
        _capture.skipped_graph_calls += 1
        return
    if args:
        raise TypeError("vLLM's swap_in takes keyword arguments only; got positional ones")
    slot_mapping = kwargs.get("slot_mapping")
    if slot_mapping is None:
        return
    topk = to_numpy(kwargs["topk_indices"])
    tokens = topk.shape[0]
    rows = to_numpy(kwargs["req_id_per_token"]).reshape(-1)[:tokens].astype(np.int64)
    table = to_numpy(kwargs["block_table"]).astype(np.int64)
    newest = to_numpy(slot_mapping).reshape(-1)[:tokens].astype(np.int64)
    keep = (rows >= 0) & (newest >= 0)  # CUDA-graph padding rows carry -1
    rows, newest, topk = rows[keep], newest[keep], topk[keep]
    if rows.size == 0:
        return
    pos = newest_positions(table, rows, newest, int(kwargs["block_size"]))
    ok = pos >= 0
    rows, topk, n = rows[ok], topk[ok], pos[ok] + 1
    first = table[rows, 0]
    keys = first.copy()
    uniq, counts = np.unique(first, return_counts=True)
    shared = np.isin(first, uniq[counts > 1])
    keys[shared] = -(first[shared] * (table.shape[0] + 1) + rows[shared] + 1)  # negative: never a block id
    layer = _layer_of.setdefault(id(coord), len(_layer_of))
    rec = _capture.ensure(_layers_total(coord), int(topk.shape[1]))
    if layer == 0:
        rec.end_absent(keys)  # no finish signal at this call site: a request gone from a forward has ended
    rec.record_layer(layer, keys, n, topk)


def patch_class(cls) -> None:
    hooks.wrap_method(cls, SWAP_IN, _after_swap_in, _capture)
    _patched.append(cls)


def install(path: str, cls=None, initial_state: str = "identity", max_requests: int = 0,
            chunk_bytes: int = 1 << 18, compress: bool = False, layers: Optional[int] = None) -> hooks.Capture:
    global _capture
    if _capture is None or not _capture.active:
        _layer_of.clear()
    _capture = hooks.start(_capture, path, initial_state, max_requests, chunk_bytes, compress, layers)
    hooks.attach(MODULE, CLASS, cls, patch_class)
    return _capture


def stop() -> Optional[str]:
    global _capture
    out = _capture.stop() if _capture is not None else None
    while _patched:
        hooks.unwrap_method(_patched.pop(), SWAP_IN)
    hooks.cancel_patch_on_import(MODULE)
    return out


def install_from_env(cls=None) -> Optional[hooks.Capture]:
    settings = hooks.settings_from_env()
    return install(cls=cls, **settings) if settings else None
