"""Top-k capture for SGLang's HiSparse decode path.

Call site (SGLang, python/sglang/srt/managers/hisparse_coordinator.py, class HiSparseCoordinator):

    swap_in_selected_pages(self, req_pool_indices, compressed_seq_lens, top_k_result, layer_id) -> Tensor

called by the DSA/NSA attention backend once per layer per decode forward with req_pool_indices [B] (request
slots), compressed_seq_lens [B] (n of the step; for DeepSeek-V4's compressed C4 layout the compressed length, and
then positions and layer ids are in that compressed space, which is what the swap-in sees), top_k_result [B, K]
(token positions, -1 padding) and the layer id. The coordinator's `num_real_reqs[0]` says how many rows are real
(the rest is CUDA-graph padding); its `top_k` is K and `mem_pool_device.layer_num` the number of layers.
Request lifetime comes from the same class: `alloc_device_buffer(req)` when a request is admitted (both the
staging and the direct-to-host path call it; `req.rid`, `req.req_pool_idx`) and `request_finished(req)`.

Enable:
  * in code: `hisparse.capture.sglang.install("/tmp/topk_{pid}.hstr")` before the server starts decoding;
    `hisparse.capture.sglang.stop()` finalises the file (also done at interpreter exit);
  * in a server you launch: put `python/hisparse/capture/autoload` on PYTHONPATH and set HISPARSE_CAPTURE (see
    docs/capture.md); the class is patched when SGLang imports it, in every scheduler process.
Environment: HISPARSE_CAPTURE (path; `{pid}`/`{rank}` expanded), HISPARSE_CAPTURE_INITIAL_STATE
(identity|empty), HISPARSE_CAPTURE_MAX_REQUESTS (finalise after that many finished requests; 0 = at exit),
HISPARSE_CAPTURE_CHUNK_BYTES, HISPARSE_CAPTURE_ZSTD=1 (zstd chunks; needs the zstandard module: without it the
capture refuses to start).

No SGLang server was run for this module: it is tested against a stand-in class with the same method names,
argument names and order (tests/python/test_capture_hooks.py).
"""

from __future__ import annotations

from typing import Optional

from . import hooks
from .recorder import to_numpy

MODULE = "sglang.srt.managers.hisparse_coordinator"
CLASS = "HiSparseCoordinator"
SWAP_IN = "swap_in_selected_pages"
SWAP_IN_ARGS = ("req_pool_indices", "compressed_seq_lens", "top_k_result", "layer_id")

_capture: Optional[hooks.Capture] = None
_patched = []


def _layers(coord) -> int:
    pool = getattr(coord, "mem_pool_device", None)
    n = getattr(pool, "layer_num", None)
    if n is None:
        raise AttributeError("coordinator has no mem_pool_device.layer_num (set HISPARSE_CAPTURE_LAYERS)")
    return int(n)


def _recorder(coord):
    return _capture.ensure(_layers(coord) if _capture.layers is None else _capture.layers, int(coord.top_k))


def _after_swap_in(coord, _result, *args, **kwargs):
    if hooks._graph_capturing():
        _capture.skipped_graph_calls += 1
        return
    a = hooks.bind_args(SWAP_IN_ARGS, args, kwargs, getattr(type(coord), f"_hisparse_orig_{SWAP_IN}", None))
    steps = a.get("num_steps", 1)  # later SGLang versions: speculative multi-step swap-in
    if steps is not None and int(steps) != 1:
        raise ValueError(f"a speculative multi-step swap-in (num_steps={int(steps)}) is not one decode step per "
                         "call, which the trace format records: capture with speculative decoding off")
    slots = to_numpy(a["req_pool_indices"]).reshape(-1)
    real = getattr(coord, "num_real_reqs", None)
    rows = slots.size
    if real is not None:
        rows = min(rows, int(to_numpy(real).reshape(-1)[0]) or rows)
    _recorder(coord).record_layer(int(a["layer_id"]), slots[:rows], to_numpy(a["compressed_seq_lens"])[:rows],
                                  to_numpy(a["top_k_result"])[:rows])


def _after_alloc(coord, _result, req, *args, **kwargs):
    _recorder(coord).begin_request(int(req.req_pool_idx), key=getattr(req, "rid", None))


def _after_finished(coord, _result, req, *args, **kwargs):
    _recorder(coord).end_request(int(req.req_pool_idx))


def _after_direct(coord, _result, req, *args, **kwargs):
    kv = getattr(req, "kv", None)
    n = getattr(kv, "kv_allocated_len", None)
    if n is not None and hasattr(coord, "host_token_len"):
        n = coord.host_token_len(n)
    if n is not None and n > int(getattr(coord, "device_buffer_size", n)):
        _capture.direct_admissions += 1


def patch_class(cls) -> None:
    """Wraps the coordinator class's swap-in and request-lifetime methods (the capture must be configured)."""
    hooks.wrap_method(cls, SWAP_IN, _after_swap_in, _capture)
    for name, fn in (("alloc_device_buffer", _after_alloc), ("request_finished", _after_finished),
                     ("admit_request_direct", _after_direct)):
        if hasattr(cls, name):
            hooks.wrap_method(cls, name, fn, _capture)
    _patched.append(cls)


def install(path: str, cls=None, initial_state: str = "identity", max_requests: int = 0,
            chunk_bytes: int = 1 << 18, compress: bool = False, layers: Optional[int] = None) -> hooks.Capture:
    """Starts a capture to `path`. `cls`: the coordinator class to patch; by default SGLang's, patched now if its
    module is imported already, else when SGLang imports it."""
    global _capture
    _capture = hooks.start(_capture, path, initial_state, max_requests, chunk_bytes, compress, layers)
    hooks.attach(MODULE, CLASS, cls, patch_class)
    return _capture


def stop() -> Optional[str]:
    """Finalises the running capture and restores the original methods; returns the trace path (None if empty)."""
    global _capture
    out = _capture.stop() if _capture is not None else None
    while _patched:
        cls = _patched.pop()
        for name in (SWAP_IN, "alloc_device_buffer", "request_finished", "admit_request_direct"):
            hooks.unwrap_method(cls, name)
    hooks.cancel_patch_on_import(MODULE)
    return out


def install_from_env(cls=None) -> Optional[hooks.Capture]:
    """install() configured by HISPARSE_CAPTURE*; does nothing when HISPARSE_CAPTURE is unset or empty."""
    settings = hooks.settings_from_env()
    return install(cls=cls, **settings) if settings else None
