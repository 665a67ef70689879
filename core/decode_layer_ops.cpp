// @brief FLOPs and bytes of each decode-layer op (see decode_layer_ops.h); the formulas `bench step` reports.
#include "core/decode_layer_ops.h"

#include <algorithm>
#include <cmath>

#include "core/numerics/sparse_attention_args.h"

namespace hisparse {
namespace {

struct Proj {
  const char* name;
  double out, in;
  bool moe_layer;
};

std::vector<Proj> projections(const ModelSpec& m) {
  const double h = m.hidden_size, shared = std::max(1, m.shared_experts);
  return {{"q_a", double(m.q_lora_rank), h, true},
          {"q_b", double(m.attention_heads) * (m.qk_nope_head_dim + m.qk_rope_head_dim), double(m.q_lora_rank), true},
          {"kv_a", double(m.kv_lora_rank + m.qk_rope_head_dim), h, true},
          {"o_proj", h, double(m.attention_heads) * m.v_head_dim, true},
          {"indexer_q", double(m.indexer_heads) * m.indexer_head_dim, double(m.q_lora_rank), true},
          {"indexer_k", double(m.indexer_head_dim), h, true},
          {"indexer_w", double(m.indexer_heads), h, true},
          {"router", double(m.routed_experts), h, true},
          {"shared_gate_up", 2.0 * m.moe_intermediate_size * shared, h, true},
          {"shared_down", h, m.moe_intermediate_size * shared, true},
          {"dense_gate_up", 2.0 * m.dense_intermediate_size, h, false},
          {"dense_down", h, double(m.dense_intermediate_size), false}};
}

}  // namespace

ExpertLoad expert_load(const ModelSpec& m, int batch, int ep) {
  ExpertLoad l;
  const int local = m.routed_experts / std::max(1, ep);
  const double picks = double(batch) * ep * m.experts_per_token;
  const double touched = local * (1.0 - std::pow(1.0 - 1.0 / m.routed_experts, picks));
  l.active = std::max(1, int(std::lround(touched)));
  l.tokens_per_expert = std::max(1, int(std::ceil(picks / ep / l.active)));
  return l;
}

std::vector<DecodeOpWork> decode_layer_ops(const ModelSpec& m, int batch, int64_t context, int ep, bool both_dtypes) {
  const double B = batch, n = double(context), h = m.hidden_size, heads = m.attention_heads;
  std::vector<DecodeOpWork> ops;
  for (const Proj& p : projections(m))
    for (int es : both_dtypes ? std::vector<int>{1, 2} : std::vector<int>{1}) {
      DecodeOpWork w{p.name, "gemm", es == 1 ? "fp8" : "bf16", 2.0 * p.out * p.in * B,
                     p.out * p.in * es + B * p.in * es + B * p.out * 2};
      w.in_moe_layer = p.moe_layer;
      ops.push_back(w);
    }
  const double nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim, lat = m.kv_lora_rank, v = m.v_head_dim;
  // The absorbed w_kv_b products are per-head batched GEMMs; they count with the MLA projections (family gemm).
  ops.push_back({"w_kv_b_q", "gemm", "bf16", 2.0 * heads * lat * nope * B,
                 heads * lat * nope * 2 + B * heads * (nope + lat) * 2});
  ops.push_back({"w_kv_b_o", "gemm", "bf16", 2.0 * heads * v * lat * B,
                 heads * v * lat * 2 + B * heads * (lat + v) * 2});
  const ExpertLoad e = expert_load(m, batch, ep);
  const double inter = m.moe_intermediate_size, pairs = double(e.active) * e.tokens_per_expert;
  ops.push_back({"moe_experts", "grouped_gemm", "fp8", 2.0 * 3 * inter * h * pairs,
                 double(e.active) * 3 * inter * h + pairs * (h * 3.0 + inter * 5.0)});
  DecodeOpWork norm{"rmsnorm_hidden", "elementwise", "bf16", 0, 4.0 * B * h};
  norm.per_layer = 2;
  ops.push_back(norm);
  ops.push_back({"rmsnorm_q", "elementwise", "bf16", 0, 4.0 * B * m.q_lora_rank});
  ops.push_back({"rmsnorm_kv", "elementwise", "bf16", 0, 4.0 * B * lat});
  ops.push_back({"rope_q", "elementwise", "bf16", 0, 4.0 * B * heads * rope});
  ops.push_back({"silu_mul_shared", "elementwise", "bf16", 0, 6.0 * B * inter});
  const double K = m.top_k, row = lat + rope;  // cached row width (576)
  const double att_bytes = B * K * row * 2 + B * heads * (row + lat) * 2;
  // Both attention kernels launch one block per (token, 64 heads) (cuda/sparse_attention_*.cu).
  const double att_blocks = B * std::ceil(heads / 64);
  for (const char* name : {"attention_fast", "attention_exact"}) {
    DecodeOpWork w{name, "attention", "bf16", sparse_attention_flops(batch, m.attention_heads, m.top_k), att_bytes};
    w.blocks = att_blocks;
    ops.push_back(w);
  }
  // Indexer scoring reads every key (bf16: 2 bytes a dimension; fp8 as deployed: 1 byte and a 4-byte row scale)
  // and writes an fp32 score per key.
  const double idx_flops = 2.0 * B * n * m.indexer_heads * m.indexer_head_dim;
  // The project's indexer kernel launches a block per (token, 128 keys) (cuda/indexer.cu).
  DecodeOpWork idx{"indexer", "indexer", "fp8", idx_flops, B * n * (m.indexer_head_dim + 4.0 + 4)};
  idx.blocks = B * std::ceil(n / 128);
  idx.by_work = true;
  ops.push_back(idx);
  if (both_dtypes) {
    idx.dtype = "bf16";
    idx.bytes = B * n * (m.indexer_head_dim * 2.0 + 4);
    ops.push_back(idx);
  }
  // Top-k (cuda/topk.cu): the histogram and compaction kernels split each row over G blocks of `chunk` positions,
  // then the select kernel runs one block per row. The split is make_plan's at the default KernelConfig
  // (topk.blocks_per_sm 0: the occupancy calculator's 4 resident blocks of 512 threads per SM, __launch_bounds__
  // (512, 4); topk.min_chunk 2048; at most 1024 / 16 = 64 blocks per row) on a GPU of 132 SMs (the H100 and H200
  // SXM the calibrations were measured on), for rows of stride n as `bench step` launches them. Rows of at most
  // K positions (topk_all) launch the same grid, but those blocks return at once: only the select pass works.
  DecodeOpWork topk{n > K ? "topk" : "topk_all", "topk", "fp32", 0, B * n * 4 + B * std::min<double>(K, n) * 4};
  {
    constexpr int64_t kSms = 132, kResident = 4, kMinChunk = 2048, kMaxBlocksPerRow = 64, kWarps = 16;
    const int64_t rows = std::max<int64_t>(1, batch), stride = std::max<int64_t>(1, context);
    int64_t g = std::max<int64_t>(1, kResident * kSms / rows);  // floor: one block more per row than fits is a wave more
    g = std::min({g, kMaxBlocksPerRow, std::max<int64_t>(1, (stride + kMinChunk - 1) / kMinChunk)});
    const int64_t per_block = (stride + g - 1) / g;
    const int64_t seg = ((per_block + kWarps - 1) / kWarps + 31) / 32 * 32;  // whole 32-wide rounds per warp
    const int64_t chunk = seg * kWarps, per_row = (stride + chunk - 1) / chunk;
    topk.blocks = B * double(per_row);
    topk.block_bytes = n > K ? double(chunk) * 4 : 0;
    topk.pass_blocks = B;
  }
  ops.push_back(topk);
  for (DecodeOpWork& w : ops) w.tokens = B;
  return ops;
}

std::vector<DecodeOpWork> moe_layer_ops(const ModelSpec& m, int batch, int64_t context, int ep, bool exact_attention) {
  std::vector<DecodeOpWork> out;
  for (DecodeOpWork& w : decode_layer_ops(m, batch, context, ep)) {
    if (!w.in_moe_layer) continue;
    if (w.op == (exact_attention ? "attention_fast" : "attention_exact")) continue;
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace hisparse
