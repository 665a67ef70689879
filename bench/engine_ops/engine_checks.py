"""Records the engine's kernels on small fixed inputs, so the CPU reference can check them off the GPU.

Each case keeps its inputs and the kernel's outputs as raw arrays (bf16 and fp8 as their bit patterns) in one
`.npz`; `hisparse validate --engine-record FILE` recomputes every case with `cpu_ref` and reports the exact contracts
(V2 plan: slot for slot) and the tolerance contracts (FlashMLA, DeepGEMM: max abs/rel error and ULPs, bounds in
docs/numerics.md). The record is small enough to commit, so CI re-checks it on every run.
"""

import math

import numpy as np
import torch

import ops_attention
import ops_hisparse


def _bits(t):
    """A tensor's bytes as numpy: bf16 as uint16, fp8 as uint8, others as they are."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if t.dtype in (torch.float8_e4m3fn,):
        return t.view(torch.uint8).numpy()
    return t.numpy()


def flashmla_cases(flash_mla, flashmla_src, log):
    out = {}
    quant = ops_attention._quant_module(flashmla_src)
    torch.manual_seed(7)
    # bf16 KV: batch 2, 64 heads (FlashMLA's smallest head tile), K 128 over a 1,024-row pool
    b, h, k, rows, d = 2, 64, 128, 1024, 576
    q = torch.randn(b, h, d, device="cuda", dtype=torch.bfloat16).clamp_(-1, 1)
    kv = torch.randn(rows, 1, d, device="cuda", dtype=torch.bfloat16).clamp_(-1, 1)
    idx = torch.stack([torch.randperm(rows, device="cuda")[:k] for _ in range(b)]).int().view(b, 1, k)
    scale = d ** -0.5
    o, _max_logits, lse = flash_mla.flash_mla_sparse_fwd(q, kv, idx, scale, 512)
    out.update({"mla_bf16_q": _bits(q), "mla_bf16_kv": _bits(kv.view(rows, d)), "mla_bf16_idx": _bits(idx.view(b, k)),
                "mla_bf16_out": _bits(o), "mla_bf16_lse": _bits(lse.float()),
                "mla_bf16_scale": np.array([scale], dtype=np.float32)})
    # fp8 KV (v32 layout): the same shape through the decode kernel, the cache as FlashMLA's quantizer writes it
    blocks = rows // 64
    cache = quant.quantize_k_cache(kv.view(blocks, 64, 1, d), quant.FP8KVCacheLayout.V32_FP8Sparse)
    meta, _ = flash_mla.get_mla_metadata()
    o8, lse8 = flash_mla.flash_mla_with_kvcache(q.unsqueeze(1), cache, None, None, 512, meta, None, scale, False,
                                                 True, idx)
    out.update({"mla_fp8_cache": cache.contiguous().view(torch.uint8).view(rows, -1).cpu().numpy(),
                "mla_fp8_out": _bits(o8.view(b, h, 512)), "mla_fp8_lse": _bits(lse8.float())})
    log(f"engine check: flashmla bf16 out {tuple(o.shape)}, fp8 out {tuple(o8.shape)}")
    return out


def deepgemm_cases(dg, log):
    """A masked grouped fp8 GEMM (2 experts) and a dense fp8 GEMM, with their block scales."""
    torch.manual_seed(11)
    out = {}
    g, max_m, n, k = 2, 64, 256, 512
    a = torch.randn(g, max_m, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    sfa = torch.rand(g, max_m, k // 128, device="cuda") * 0.02 + 0.005
    b = torch.randn(g, n, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    sfb = torch.rand(g, n // 128, k // 128, device="cuda") * 0.02 + 0.005
    d = torch.zeros(g, max_m, n, device="cuda", dtype=torch.bfloat16)
    masked = torch.tensor([37, 64], device="cuda", dtype=torch.int32)
    dg.m_grouped_fp8_gemm_nt_masked((a, sfa), (b, sfb), d, masked, 48, disable_ue8m0_cast=True)
    out.update({"gemm_masked_a": _bits(a), "gemm_masked_sfa": _bits(sfa), "gemm_masked_b": _bits(b),
                "gemm_masked_sfb": _bits(sfb), "gemm_masked_m": _bits(masked), "gemm_masked_d": _bits(d)})
    m = 40
    a2 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    sfa2 = torch.rand(m, k // 128, device="cuda") * 0.02 + 0.005
    b2 = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    sfb2 = torch.rand(math.ceil(n / 128), k // 128, device="cuda") * 0.02 + 0.005
    d2 = torch.zeros(m, n, device="cuda", dtype=torch.bfloat16)
    dg.fp8_gemm_nt((a2, sfa2), (b2, sfb2), d2, disable_ue8m0_cast=True)
    out.update({"gemm_dense_a": _bits(a2), "gemm_dense_sfa": _bits(sfa2), "gemm_dense_b": _bits(b2),
                "gemm_dense_sfb": _bits(sfb2), "gemm_dense_d": _bits(d2)})
    log("engine check: deep_gemm masked and dense recorded")
    return out


def v2_cases(sglang_src, log):
    # (batch, seq, nslot, topk, evicted_end, steps, seed): a small case and one at production K and H
    cases = [(2, 1024, 64, 32, 896, 6, 1), (3, 16384, 4096, 2048, 15360, 4, 2)]
    out = ops_hisparse.record_plan_steps(sglang_src, cases)
    log(f"engine check: V2 plan recorded for {len(cases)} cases")
    return out
