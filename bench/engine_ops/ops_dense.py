"""Dense projections, the absorbed MLA matmuls, norms, RoPE and SiLU of one decode layer, per GPU.

fp8 projections run DeepGEMM's block-scaled `fp8_gemm_nt` (per-token activation scales, per-128×128 weight scales),
as SGLang's DeepSeek path does on Hopper; bf16 ones (router, indexer weights, LM head) and the per-head absorbed
matmuls run cuBLAS through torch, as SGLang calls them. Norms, RoPE and SiLU are torch stand-ins (library `torch`):
SGLang's fused JIT kernels are not built here, so these rows are an upper bound on the engine's elementwise work.
"""

import math

import torch

from shapes import dense_gemms, head_bmms
from timing import time_op


def _fp8(shape, k, block_rows):
    x = torch.randn(*shape, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    rows = shape[-1]
    sf_rows = math.ceil(rows / 128) if block_rows else rows
    sf = torch.rand(sf_rows, math.ceil(k / 128), device="cuda") * 0.01 + 0.001
    return x, sf


def collect(dg, models, batches, tps, log, budget):
    for s in models:
        for tp in tps:
            if s.heads % tp:
                continue
            for name, n, k, dtype in dense_gemms(s, tp):
                if dtype == "fp8":
                    w = _fp8((n,), k, block_rows=True)
                else:
                    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
                for batch in batches:
                    if budget.expired():
                        log("dense: time budget spent, stopping")
                        return
                    params = dict(model=s.name, name=name, n=n, k=k, dtype=dtype, tp=tp)
                    try:
                        if dtype == "fp8":
                            a = _fp8((batch,), k, block_rows=False)
                            d = torch.empty(batch, n, device="cuda", dtype=torch.bfloat16)
                            fn = lambda a=a, d=d, w=w: dg.fp8_gemm_nt(a, w, d, disable_ue8m0_cast=True)  # noqa: E731
                            lib = "deep_gemm"
                        else:
                            a = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
                            fn = lambda a=a, w=w: torch.matmul(a, w.t())  # noqa: E731
                            lib = "torch"
                        t, why = time_op(fn)
                    except Exception as e:  # noqa: BLE001
                        log(f"dense {s.name} {name} tp{tp} b{batch}: FAILED {e!r}"[:400])
                        continue
                    if why:
                        t["note"] = why
                    yield "dense_gemm", params, batch, t, lib
                del w
            for name, h, k, n in head_bmms(s, tp):
                w = torch.randn(h, k, n, device="cuda", dtype=torch.bfloat16) * 0.02
                for batch in batches:
                    x = torch.randn(h, batch, k, device="cuda", dtype=torch.bfloat16)
                    t, why = time_op(lambda x=x, w=w: torch.bmm(x, w))
                    yield "head_bmm", dict(model=s.name, name=name, heads=h, k=k, n=n, dtype="bf16", tp=tp), \
                        batch, t, "torch"
        yield from _elementwise(s, batches)


def _elementwise(s, batches):
    eps = 1e-6
    for batch in batches:
        x = torch.randn(batch, s.hidden, device="cuda", dtype=torch.bfloat16)
        r = torch.randn_like(x)
        g = torch.ones(s.hidden, device="cuda", dtype=torch.bfloat16)

        def fused_add_rmsnorm(x=x, r=r, g=g):
            y = (x + r).float()
            return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16) * g
        t, _ = time_op(fused_add_rmsnorm)
        yield "rmsnorm", dict(model=s.name, hidden=s.hidden, impl="torch-standin"), batch, t, "torch"

        q = torch.randn(batch, s.heads, s.rope, device="cuda", dtype=torch.bfloat16)
        cos = torch.randn(batch, 1, s.rope // 2, device="cuda", dtype=torch.float32)
        sin = torch.randn_like(cos)

        def rope(q=q, cos=cos, sin=sin):
            a, b = q.float().unflatten(-1, (-1, 2)).unbind(-1)
            return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2).to(torch.bfloat16)
        t, _ = time_op(rope)
        yield "rope", dict(model=s.name, heads=s.heads, rope_dim=s.rope, impl="torch-standin"), batch, t, "torch"

        gu = torch.randn(batch, 2 * s.moe_inter, device="cuda", dtype=torch.bfloat16)

        def silu_mul(gu=gu):
            a, b = gu.chunk(2, -1)
            return torch.nn.functional.silu(a) * b
        t, _ = time_op(silu_mul)
        yield "silu_mul", dict(model=s.name, width=s.moe_inter, impl="torch-standin"), batch, t, "torch"
