"""Routed experts as SGLang runs them in decode: DeepGEMM's fp8 grouped GEMMs.

With DeepEP low-latency (SGLang's decode choice under `--deepep-mode auto`) the dispatched tokens arrive in a masked
layout, [experts on this GPU, max tokens, hidden], with `masked_m` rows valid per expert, and the experts run as
`m_grouped_fp8_gemm_nt_masked`; with DeepEP normal mode they arrive packed and run as
`m_grouped_fp8_gemm_nt_contiguous`. Each is timed for gate_up ([2·inter, hidden]) and down ([hidden, inter]) per GPU.

Routing: every one of the `ep` ranks holds `batch` decode tokens; each token picks `topk` distinct experts.
`uniform` draws them uniformly; `skewed` draws them with Zipf(0.8) popularity over a seeded permutation of the experts
and times the busiest rank's experts, since the slowest GPU sets the step. The row's `batch` is tokens per rank.
"""

import math

import torch

from timing import time_op

ZIPF_S = 0.8
LL_MAX_TOKENS_PER_RANK = 128  # SGLang's default num_max_dispatch_tokens_per_rank for DeepEP low-latency


def route_counts(batch, ep, experts, topk, dist, gen):
    """Tokens per expert on the GPU that does the most work, as a CPU int tensor of length experts/ep."""
    tokens = batch * ep
    if dist == "uniform":
        weights = torch.ones(experts)
    else:
        perm = torch.randperm(experts, generator=gen)
        weights = torch.empty(experts)
        weights[perm] = 1.0 / torch.arange(1, experts + 1, dtype=torch.float64).pow(ZIPF_S).float()
    picks = torch.multinomial(weights.expand(tokens, experts), topk, replacement=False, generator=gen)
    counts = torch.bincount(picks.flatten(), minlength=experts).view(ep, experts // ep)
    busiest = int(counts.sum(dim=1).argmax())
    return counts[busiest].clone()


def _fp8_weights(groups, n, k):
    """Random fp8 expert weights with per-128×128-block fp32 scales (DeepGEMM's 1D2D recipe on Hopper)."""
    w = (torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16) * 0.5).to(torch.float8_e4m3fn)
    sf = torch.rand(groups, math.ceil(n / 128), math.ceil(k / 128), device="cuda") * 0.01 + 0.001
    return w, sf


def _fp8_tokens(shape, k):
    x = (torch.randn(*shape, k, device="cuda", dtype=torch.bfloat16)).to(torch.float8_e4m3fn)
    sf = torch.rand(*shape, math.ceil(k / 128), device="cuda") * 0.01 + 0.001
    return x, sf


def collect(dg, models, batches, eps, log, budget):
    """Yields (op, params, batch, timing) rows."""
    gen = torch.Generator().manual_seed(20261128)
    for s in models:
        for ep in eps:
            groups = s.experts // ep
            for proj, n, k in (("gate_up", 2 * s.moe_inter, s.hidden), ("down", s.hidden, s.moe_inter)):
                w = _fp8_weights(groups, n, k)
                for layout in ("masked", "contig"):
                    for dist in (("uniform", "skewed") if ep == 8 else ("uniform",)):
                        for batch in batches:
                            if budget.expired():
                                log("moe: time budget spent, stopping")
                                return
                            counts = route_counts(batch, ep, s.experts, s.topk_experts, dist, gen)
                            params = dict(model=s.name, proj=proj, n=n, k=k, experts=s.experts,
                                          experts_per_gpu=groups, ep=ep, topk=s.topk_experts, dist=dist,
                                          dtype="fp8")
                            try:
                                t = _time_one(dg, layout, w, counts, n, k, batch, ep)
                            except Exception as e:  # noqa: BLE001 - logged, the grid goes on
                                log(f"moe {layout} {s.name} {proj} ep{ep} {dist} b{batch}: FAILED {e!r}"[:400])
                                continue
                            yield f"moe_gemm_{layout}", params, batch, t
                del w
                torch.cuda.empty_cache()


def _time_one(dg, layout, w, counts, n, k, batch, ep):
    groups = counts.numel()
    if layout == "masked":
        # SGLang sizes the low-latency receive buffer for the most tokens any rank may send.
        max_m = max(LL_MAX_TOKENS_PER_RANK, batch) * ep
        x = _fp8_tokens((groups, max_m), k)
        d = torch.empty(groups, max_m, n, device="cuda", dtype=torch.bfloat16)
        masked_m = counts.to(torch.int32).cuda()
        expected_m = max(1, math.ceil(float(counts.float().mean())))
        fn = lambda: dg.m_grouped_fp8_gemm_nt_masked(x, w, d, masked_m, expected_m, disable_ue8m0_cast=True)  # noqa: E731
    else:
        align = dg.get_mk_alignment_for_contiguous_layout()
        sizes = [int(c) for c in counts]
        aligned = [((c + align - 1) // align) * align for c in sizes]
        m = max(sum(aligned), align)
        layout_t = torch.full((m,), -1, dtype=torch.int32)
        start = 0
        for g, (c, a) in enumerate(zip(sizes, aligned)):
            layout_t[start:start + c] = g
            start += a
        layout_t = layout_t.cuda()
        x = _fp8_tokens((m,), k)
        d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        fn = lambda: dg.m_grouped_fp8_gemm_nt_contiguous(x, w, d, layout_t, disable_ue8m0_cast=True)  # noqa: E731
    t, why = time_op(fn)
    if why:
        t["note"] = why
    return t
