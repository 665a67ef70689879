"""The DSA indexer of one decode layer: DeepGEMM's fp8 paged MQA logits, then top-k over them.

SGLang's NSA backend scores every cached position with `fp8_paged_mqa_logits` (q fp8 [B, 1, heads, 128], the
indexer-key cache as 64-token pages of 128 fp8 + one fp32 scale per token, per-head weights), then keeps the top K.
The logits rows are `deep_gemm`; the top-k rows are `torch.topk` over the same logits, a stand-in for SGLang's own
top-k kernel (library `torch`, labelled so), which is not built here.
"""

import torch

from timing import time_op

BLOCK_KV = 64


def collect(dg, models, batches, contexts, log, budget):
    for s in models:
        for ctx in contexts:
            for batch in batches:
                if budget.expired():
                    log("indexer: time budget spent, stopping")
                    return
                try:
                    rows = list(_one(dg, s, batch, ctx))
                except Exception as e:  # noqa: BLE001
                    log(f"indexer {s.name} b{batch} ctx{ctx}: FAILED {e!r}"[:400])
                    torch.cuda.empty_cache()
                    continue
                yield from rows


def _one(dg, s, batch, ctx):
    blocks_per_req = (ctx + BLOCK_KV - 1) // BLOCK_KV
    num_blocks = batch * blocks_per_req
    q = torch.randn(batch, 1, s.idx_heads, s.idx_dim, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    kv = torch.empty(num_blocks, BLOCK_KV * (s.idx_dim + 4), device="cuda", dtype=torch.uint8)
    kv[:, :BLOCK_KV * s.idx_dim] = torch.randn(num_blocks, BLOCK_KV * s.idx_dim, device="cuda").to(
        torch.float8_e4m3fn).view(torch.uint8)
    kv[:, BLOCK_KV * s.idx_dim:] = (torch.rand(num_blocks, BLOCK_KV, device="cuda") * 0.01 + 1e-3).view(torch.uint8)
    kv = kv.view(num_blocks, BLOCK_KV, 1, s.idx_dim + 4)
    weights = torch.randn(batch, s.idx_heads, device="cuda", dtype=torch.float32)
    context_lens = torch.full((batch, 1), ctx, device="cuda", dtype=torch.int32)
    block_table = torch.randperm(num_blocks, device="cuda", dtype=torch.int32).view(batch, blocks_per_req)
    meta = dg.get_paged_mqa_logits_metadata(context_lens, BLOCK_KV, dg.get_num_sms())
    max_len = blocks_per_req * BLOCK_KV

    def logits():
        return dg.fp8_paged_mqa_logits(q, kv, weights, context_lens, block_table, meta, max_len, False)
    t, why = time_op(logits)
    if why:
        t["note"] = why
    params = dict(model=s.name, heads=s.idx_heads, head_dim=s.idx_dim, block_kv=BLOCK_KV)
    yield "indexer_logits", params, batch, ctx, t, "deep_gemm"

    scores = logits()
    k = min(s.top_k, ctx)
    t, _ = time_op(lambda: torch.topk(scores, k, dim=-1, sorted=False))
    yield "indexer_topk", dict(model=s.name, topk=s.top_k, impl="torch-standin"), batch, ctx, t, "torch"
