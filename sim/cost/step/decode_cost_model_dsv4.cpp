// @brief The decode step of DeepSeek-V4's compressed attention (ModelSpec::is_compressed), per layer type: every
// layer attends its sliding window; a C4 layer adds the lightning indexer over its n / 4 compressed entries, top-k and
// sparse attention over the top_k selected entries (the entries HiSparse swaps in); a C128 layer adds dense attention
// over its n / 128 entries; every compressed layer runs its compressor, which writes and reads the compress states.
// The MoE phase and the LM head are DeepSeek-V3.2's (decode_cost_model.cpp). Sources and assumptions:
// docs/cost_model.md "DeepSeek-V4".
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "sim/cost/step/decode_cost_model.h"

namespace hisparse::sim {

namespace {

// Manifold-constrained hyper-connections (mHC) and hash routing, from the published configs and SGLang's model:
//  - hc_mult 4 and num_hash_layers 3 in both DeepSeek-V4-Pro's and DeepSeek-V4-Flash's config.json (the Hugging Face
//    cards deepseek-ai/DeepSeek-V4-Pro config.json L206-L245, DeepSeek-V4-Flash config.json L203-L242, as a public
//    config comparison quotes them); read here until the model files carry them.
//  - sgl-project/sglang python/sglang/srt/models/deepseek_v4.py at 000328a8cd54dd3aac97cd9977c39b5408034b26:
//    DeepseekV4DecoderLayer.__init__ sizes hc_attn_fn / hc_ffn_fn as fp32 (mix_hc, hc_dim) with mix_hc = (2 + hc_mult)
//    × hc_mult and hc_dim = hc_mult × hidden_size; forward runs hc_pre → attention → hc_post → hc_pre → MoE → hc_post,
//    hc_pre one tf32 GEMM of the flattened bf16 residual (DeepGEMM tf32_hc_prenorm_gemm, or TileLang's fused mhc_pre
//    with its Sinkhorn) and hc_post the weighted sum of the new output and the hc_mult residual streams;
//    DeepseekV4Model.hc_head mixes the streams back once (hc_head_fn fp32 (hc_mult, hc_dim)); the first
//    num_hash_layers route by the token's tid2eid row (remap_weight_name_to_dpsk_hf_format moves gate.tid2eid to
//    topk.tid2eid: the gate's scores are still computed, the choice of experts is a table lookup).
constexpr int kDsv4HcMult = 4;
constexpr int kDsv4HashLayers = 3;

}  // namespace

std::string dsv4_modelled_terms_note(const Scenario& s) {
  if (!s.model.is_compressed()) return "";
  std::string o = fmt::format(
      "DeepSeek-V4 step: mHC mixing (hc_mult {}: hc_pre + hc_post around attention and MoE of every layer, hc_head once) "
      "and hash routing (the first {} layers' tid2eid lookup) are modelled (roofline; no op-table row times them; "
      "sources in sim/cost/step/decode_cost_model_dsv4.cpp)",
      kDsv4HcMult, kDsv4HashLayers);
  if (s.deployment.kv_dtype == KvDtype::kNvfp4)
    o += "; NVFP4 KV: attention modelled (roofline at efficiency.attention): no measured NVFP4 attention kernel "
         "(the FlashMLA table and the op tables hold fp8 and bf16 only)";
  return o;
}

void DecodeCostModel::dsv4_moe_terms(double t, bool with_sources, std::vector<MoeTerm>& out) const {
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const auto& e = p_.efficiency;
  const double h = m.hidden_size, hc = kDsv4HcMult, hc_dim = hc * h, mix = (2 + hc) * hc;
  // Assumed: the tf32 GEMM of hc_pre runs at half the bf16 dense peak (Hopper's tf32 : bf16 tensor-core ratio).
  const double tf32_peak = hw.bf16_flops / 2;
  // hc_pre: fp32 weights (mix × hc_dim) once per step; per token the bf16 residual streams read, the layer input
  // written, pre / post / comb (hc + hc + hc² fp32) written.
  const SimTime pre = kernel(2.0 * mix * hc_dim * t, mix * hc_dim * 4 + t * (hc_dim * 2 + h * 2 + (2 * hc + hc * hc) * 4),
                             tf32_peak, e.dense);
  // hc_post: per token the sublayer output and the residual streams read, the new streams written.
  const SimTime post = kernel(t * (2.0 * hc * h + 2.0 * hc * hc * h), t * (h * 2 + 2 * hc_dim * 2 + (hc + hc * hc) * 4),
                              hw.bf16_flops, e.dense);
  // hc_head: once per step, fp32 (hc × hc_dim) weights.
  const SimTime head = kernel(2.0 * hc * hc_dim * t, hc * hc_dim * 4 + t * (hc_dim * 2 + h * 2), tf32_peak, e.dense);
  MoeTerm mhc{"mhc_mixing", (pre + post) * 2 * m.layers + head, false, ""};
  if (with_sources)
    mhc.source = fmt::format(
        "modelled (roofline; no op-table row): per layer 2 × (hc_pre: 2 × {:g} × {:g} FLOPs per token at tf32 = bf16 "
        "peak / 2 (assumed) + hc_post), hc_head once; hc_mult {} from V4's config.json, shapes from SGLang deepseek_v4.py "
        "at 000328a8",
        mix, hc_dim, kDsv4HcMult);
  out.push_back(mhc);
  // Hash routing: the first layers gather each token's tid2eid row (experts_per_token int32 ids, the token id read)
  // instead of choosing experts by score; one memory-bound kernel per hash layer.
  const int hash_layers = std::min(kDsv4HashLayers, m.layers - m.dense_layers);
  if (hash_layers <= 0 || m.routed_experts <= 0) return;
  MoeTerm hash{"hash_routing", kernel(0, t * (8.0 + m.experts_per_token * 4.0), hw.bf16_flops, e.topk) * hash_layers,
               false, ""};
  if (with_sources)
    hash.source = fmt::format(
        "modelled (roofline; no op-table row): {} layers × one gather of experts_per_token {} int32 tid2eid ids per "
        "token at efficiency.topk; num_hash_layers {} from V4's config.json (the gate GEMM stays in `dense`, as SGLang "
        "keeps tid2eid in its TopK module, deepseek_v4.py at 000328a8)",
        hash_layers, m.experts_per_token, kDsv4HashLayers);
  out.push_back(hash);
}

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
