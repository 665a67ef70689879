"""Sparse MLA decode attention as SGLang's `flashmla_sparse` backend runs it on Hopper: FlashMLA.

bf16 KV: `flash_mla_sparse_fwd` (q [B, h, d_qk], a pool of latent rows, indices [B, 1, K]); fp8 KV:
`flash_mla_with_kvcache` with `is_fp8_kvcache` on the FP8 layout of the model (v32: 656-byte rows of 512 fp8 + 4
fp32 scales + 64 bf16 RoPE; model1, DeepSeek-V4: 584-byte rows), in 64-token pages. With fewer than 64 heads on a
GPU SGLang pads q to 64 heads and slices the output back; those rows time the padding and slicing too.
Indices: K distinct rows per request in random order over a 65,536-row pool (more than L2 holds).
"""

import sys

import torch

from timing import time_op

POOL_ROWS = 65536
PAGE = 64


def _quant_module(flashmla_src):
    sys.path.insert(0, f"{flashmla_src}/tests")
    import quant  # FlashMLA's own fp8 cache quantizer (its tests), run from the pinned source, not committed
    return quant


def collect(flash_mla, flashmla_src, models, batches, log, budget):
    quant = _quant_module(flashmla_src)
    for s in models:
        heads_set = sorted({s.heads, s.heads // 8})
        kv_dtypes = ("fp8",) if s.layout == "model1" else ("bf16", "fp8")
        for kv in kv_dtypes:
            try:
                pool = _pool(quant, s, kv)
            except Exception as e:  # noqa: BLE001
                log(f"attention {s.name} {kv}: pool FAILED {e!r}"[:400])
                continue
            for h in heads_set:
                for batch in batches:
                    if budget.expired():
                        log("attention: time budget spent, stopping")
                        return
                    params = dict(model=s.name, kv=kv, heads=h, padded=max(h, 64), topk=s.top_k,
                                  layout=s.layout, d_qk=s.d_qk, d_v=512)
                    try:
                        t = _time_one(flash_mla, s, kv, pool, h, batch)
                    except Exception as e:  # noqa: BLE001
                        log(f"attention {s.name} {kv} h{h} b{batch}: FAILED {e!r}"[:400])
                        continue
                    yield "flashmla_sparse_decode", params, batch, t
            del pool
            torch.cuda.empty_cache()


def _pool(quant, s, kv):
    rows = torch.randn(POOL_ROWS // PAGE, PAGE, 1, s.d_qk, device="cuda", dtype=torch.bfloat16).clamp_(-1, 1)
    if kv == "bf16":
        return rows.view(POOL_ROWS, 1, s.d_qk)
    layout = quant.FP8KVCacheLayout.V32_FP8Sparse if s.layout == "v32" else quant.FP8KVCacheLayout.MODEL1_FP8Sparse
    return quant.quantize_k_cache(rows, layout)


def _indices(batch, k):
    return torch.stack([torch.randperm(POOL_ROWS, device="cuda")[:k] for _ in range(batch)]).int().view(batch, 1, k)


def _time_one(flash_mla, s, kv, pool, h, batch):
    k = s.top_k
    padded = max(h, 64)
    q = torch.randn(batch, h, s.d_qk, device="cuda", dtype=torch.bfloat16).clamp_(-1, 1)
    idx = _indices(batch, k)
    scale = s.d_qk ** -0.5
    if kv == "bf16":
        def core(qp):
            return flash_mla.flash_mla_sparse_fwd(qp, pool, idx, scale, 512)[0]
    else:
        meta, _ = flash_mla.get_mla_metadata()

        def core(qp):
            return flash_mla.flash_mla_with_kvcache(qp.unsqueeze(1), pool, None, None, 512, meta, None, scale,
                                                    False, True, idx)[0]
    if padded == h:
        fn = lambda: core(q)  # noqa: E731
    else:
        qpad = torch.zeros(batch, padded, s.d_qk, device="cuda", dtype=torch.bfloat16)

        def fn():
            qpad[:, :h].copy_(q)  # SGLang pads the real heads into a 64-head q and slices the output back
            return core(qpad)[..., :h, :].contiguous()
    t, why = time_op(fn)
    if why:
        t["note"] = why
    return t
