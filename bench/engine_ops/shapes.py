"""Per-GPU shapes of the kernels SGLang runs in one decode layer, from the project's model files.

The collector times each op at the shapes a deployment gives a GPU: projections split by attention TP (or whole
under DP attention, `tp=1`), routed experts split by EP, and q padded to 64 heads for FlashMLA on Hopper when fewer
heads sit on a GPU (SGLang's `flashmla_sparse` backend pads; the 2026-11-25 tables measured the padding). The
model files name their own sources; this module only reads them.
"""

import dataclasses
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class ModelShapes:
    name: str
    hidden: int
    q_lora: int
    kv_lora: int
    rope: int
    nope: int
    v_head: int
    heads: int
    idx_heads: int
    idx_dim: int
    experts: int
    topk_experts: int
    moe_inter: int
    vocab: int
    top_k: int
    layout: str  # FlashMLA's fp8 KV layout: v32 (576-wide latent) or model1 (DeepSeek-V4's 512-wide entry)

    @property
    def d_qk(self):
        return 576 if self.layout == "v32" else 512


def load_model(name):
    path = os.path.join(REPO, "scenarios", "models", f"{name}.yaml")
    with open(path) as f:
        m = yaml.safe_load(f)
    need = ["hidden_size", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
            "attention_heads", "indexer_heads", "indexer_head_dim", "routed_experts", "experts_per_token",
            "moe_intermediate_size", "vocab_size", "top_k"]
    missing = [k for k in need if k not in m]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)} (the collector needs every shape field)")
    layout = "model1" if m["kv_lora_rank"] + m["qk_rope_head_dim"] == 512 else "v32"
    return ModelShapes(name=name, hidden=m["hidden_size"], q_lora=m["q_lora_rank"], kv_lora=m["kv_lora_rank"],
                       rope=m["qk_rope_head_dim"], nope=m["qk_nope_head_dim"], v_head=m["v_head_dim"],
                       heads=m["attention_heads"], idx_heads=m["indexer_heads"], idx_dim=m["indexer_head_dim"],
                       experts=m["routed_experts"], topk_experts=m["experts_per_token"],
                       moe_inter=m["moe_intermediate_size"], vocab=m["vocab_size"], top_k=m["top_k"], layout=layout)


def dense_gemms(s, tp):
    """(name, n, k, dtype) of each projection on one GPU at attention TP `tp` (1 = DP attention: whole heads).

    fp8 ones run DeepGEMM's block-scaled `fp8_gemm_nt` in SGLang's DeepSeek path; the router and LM head are bf16
    (cuBLAS through torch). The absorbed kv_b (w_kc, w_vc) are per-head bf16 batched matmuls.
    """
    h = s.heads // tp
    rows = [
        ("fused_qkv_a", s.q_lora + s.kv_lora + s.rope, s.hidden, "fp8"),  # q_a and kv_a_with_mqa fused
        ("q_b", h * (s.nope + s.rope), s.q_lora, "fp8"),
        ("o_proj", s.hidden, h * s.v_head, "fp8"),
        ("wq_indexer", s.idx_heads * s.idx_dim, s.q_lora, "fp8"),
        ("wk_indexer", s.idx_dim, s.hidden, "fp8"),
        ("weights_proj", s.idx_heads, s.hidden, "bf16"),
        ("router", s.experts, s.hidden, "bf16"),
        ("shared_gate_up", 2 * s.moe_inter // tp, s.hidden, "fp8"),
        ("shared_down", s.hidden, s.moe_inter // tp, "fp8"),
        ("lm_head", (s.vocab + tp - 1) // tp, s.hidden, "bf16"),
    ]
    return rows


def head_bmms(s, tp):
    """The absorbed MLA up-projections: per head, q_nope·W_kc ([nope]→[kv_lora]) and o·W_vc ([kv_lora]→[v_head])."""
    h = s.heads // tp
    if s.layout == "model1":
        return []  # DeepSeek-V4 caches one 512-wide entry and has no latent up-projection
    return [("w_kc", h, s.nope, s.kv_lora), ("w_vc", h, s.kv_lora, s.v_head)]
