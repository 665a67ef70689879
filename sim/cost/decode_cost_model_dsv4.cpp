// @brief The decode step of DeepSeek-V4's compressed attention (ModelSpec::is_compressed), per layer type: every
// layer attends its sliding window; a C4 layer adds the lightning indexer over its n / 4 compressed entries, top-k and
// sparse attention over the top_k selected entries (the entries HiSparse swaps in); a C128 layer adds dense attention
// over its n / 128 entries; every compressed layer runs its compressor, which writes and reads the compress states.
// The MoE phase and the LM head are DeepSeek-V3.2's (decode_cost_model.cpp). Sources and assumptions:
// docs/cost_model.md "DeepSeek-V4".
#include <algorithm>
#include <cmath>

#include "core/dsv4_pool_budget.h"
#include "sim/cost/decode_cost_model.h"

namespace hisparse::sim {

GpuPhases DecodeCostModel::dsv4_phases(const GpuBatch& b) const {
  GpuPhases out;
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const auto& e = p_.efficiency;
  const double B = static_cast<double>(b.requests);
  const double entries = b.sum_n / 4.0;      // C4 entries the indexer scores (all of each request's)
  const double c128_rows = b.sum_n / 128.0;  // C128 entries a C128 layer attends, all of them
  const int swa_only = layers_ - c4_layers_ - c128_layers_;
  // The layer's ops at this batch, top-k's over the mean C4 entries per request (its work is linear in them).
  const std::vector<DecodeOpWork> work = deployed_ops(B, entries / B);

  // C4 layers: the indexer's projections and its scoring of every compressed key (fp8 key + scale read, fp32 score
  // written), then top-k over the scores.
  const double idx_flops = 2.0 * m.indexer_heads * m.indexer_head_dim * entries;
  const double idx_bytes = entries * (indexer_key_bytes_ + 4.0);
  out.indexer = (ops_ns({"indexer_q", "indexer_k", "indexer_w"}, work) +
                 kernel(idx_flops, idx_bytes, fp8_peak(), e.indexer)) *
                c4_layers_;
  out.topk = op_ns("topk", work) * c4_layers_;

  // Attention, one FlashMLA sparse-decode call per layer over the window rows plus the layer's compressed rows (its
  // top_k C4 entries or all its C128 entries): QK over the 512-wide entry and PV into a 512-wide output per head.
  // The measured table prices the fp8 and bf16 layouts; NVFP4 has no measured kernel and stays roofline.
  const double width = m.cache_row_width();
  const bool table = p_.attention.table && sc_.deployment.kv_dtype != KvDtype::kNvfp4;
  auto attention = [&](double rows) -> SimTime {
    const double flops = rows * m.attention_heads * width * 2.0 * 2.0;
    const double bytes = rows * kv_row_bytes_ + B * m.attention_heads * width * 2.0 * 2.0;
    if (!table) return kernel(flops, bytes, hw.bf16_flops, e.attention);
    return seconds_to_ns_ceil(
        p_.attention.layer_us(sc_.deployment.kv_dtype, B, m.attention_heads, rows / B, flops, bytes, hw).us * 1e-6);
  };
  const double win = b.sum_window_attended;
  const SimTime attend = attention(win) * swa_only + attention(win + b.sum_attended) * c4_layers_ +
                         attention(win + c128_rows) * c128_layers_;

  // Projections of every layer: q_a, q_b, kv_a at the model's shapes (V4 caches its 512-wide entry itself: no
  // absorbed w_kv_b), and the output projection: V4's grouped low-rank one (o_groups groups of heads, each to
  // o_lora_rank, as one GEMM of the groups' weights; then o_groups × o_lora_rank → hidden), else a dense o_proj.
  const double h = m.hidden_size, bpp = m.dense_weight_bytes_per_param >= 2 ? 2.0 : 1.0;
  const SimTime out_proj =
      m.o_groups > 0 ? gemm_ns(double(m.o_groups) * m.o_lora_rank, double(m.attention_heads) * m.v_head_dim / m.o_groups,
                               B, bpp) +
                           gemm_ns(h, double(m.o_groups) * m.o_lora_rank, B, bpp)
                     : op_ns("o_proj", work);
  const SimTime proj =
      (ops_ns({"rmsnorm_hidden", "q_a", "rmsnorm_q", "q_b", "rope_q", "kv_a", "rmsnorm_kv"}, work) + out_proj) * layers_;

  // Compressors (per compressed layer, every step): the fused kv + score projection of the new token, hidden →
  // 2 × coff × head_dim (coff 2: C4's overlapping windows; 1: C128), and on C4 layers the indexer's own, hidden →
  // 2 × 2 × index_head_dim; fp8 weights as the other projections (assumed). Their states: each token writes one row;
  // a C4 layer reads its ring of c4_ring rows every 4th token, a C128 layer its c128_ring rows every 128th (modelled:
  // SGLang's V4 compressor; rows from core/dsv4_pool_budget.h). One memory-bound kernel per compressed layer.
  const Dsv4StateRows st = dsv4_state_rows(m);
  const double c4_state = static_cast<double>(st.c4_state_bytes + st.c4_indexer_state_bytes);
  const double c4_state_step = c4_state * (1.0 + st.c4_ring / 4.0);
  const double c128_state_step = static_cast<double>(st.c128_state_bytes) * (1.0 + st.c128_ring / 128.0);
  const SimTime c4_compressor = gemm_ns(2.0 * 2 * width, h, B, bpp) + gemm_ns(2.0 * 2 * m.indexer_head_dim, h, B, bpp) +
                                kernel(0, B * c4_state_step, hw.bf16_flops, e.dense);
  const SimTime c128_compressor = gemm_ns(2.0 * width, h, B, bpp) + kernel(0, B * c128_state_step, hw.bf16_flops, e.dense);

  out.attention = proj + attend + c4_compressor * c4_layers_ + c128_compressor * c128_layers_;
  out.swap_in = swap_in_ns(b);
  return out;
}

double DecodeCostModel::dsv4_prefill_attention_flops(double n) const {
  const ModelSpec& m = sc_.model;
  const double W = m.window_size, K = m.top_k;
  // Σ over positions p < n of the rows each attends: min(p, W) in the window, min(p / 4, K) C4 entries, p / 128 C128
  // entries; the indexer scores p / 4 entries at every position of a C4 layer.
  const double window = n <= W ? n * (n + 1) / 2 : W * (W + 1) / 2 + (n - W) * W;
  const double c4_full = n / 4;  // positions past 4K select K of their entries
  const double c4 = c4_full <= K ? n * n / 8 : 4 * K * K / 2 + (n - 4 * K) * K;
  const double c128 = n * n / 256;
  const double per_row = 2.0 * m.attention_heads * m.cache_row_width() * 2.0;
  return per_row * (window * layers_ + c4 * c4_layers_ + c128 * c128_layers_) +
         2.0 * m.indexer_heads * m.indexer_head_dim * (n * n / 8) * c4_layers_;
}

}  // namespace hisparse::sim
