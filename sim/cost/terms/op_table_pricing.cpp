// @brief The op and shape asked for each term of the decode step, and the lookups (see op_table_pricing.h).
#include "sim/cost/terms/op_table_pricing.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/optables/rank_extrapolation.h"

namespace hisparse::sim {
namespace {

std::string num(double v) { return fmt::format("{:g}", v); }

SimTime to_ns(double us) { return static_cast<SimTime>(std::ceil(us * 1e3)); }

}  // namespace

void OpTablePricing::add(const std::string& term, const std::string& field, const std::string& op, OpParams params,
                         OpParams prefer, const std::string& proxy_for) {
  Query q;
  q.field = field;
  q.op = op;
  q.params = std::move(params);
  q.prefer = std::move(prefer);
  q.series = tables_->find(q.op, q.params, q.prefer, &q.note);
  // A stand-in row (impl=torch-standin: torch's kernel where SGLang's own was not built) times another
  // implementation than the engine's, so it never supersedes a term's calibrated or modelled price.
  if (q.series) {
    const auto impl = q.series->params.find("impl");
    // A term may accept one named proxy: a row whose impl says it stands in for that kernel (`…-standin-for-fa3`),
    // a kernel of the same kind timed at the same rows and heads where the engine's own is not built here.
    const bool proxy = !proxy_for.empty() && impl != q.series->params.end() &&
                       impl->second.size() > proxy_for.size() &&
                       impl->second.compare(impl->second.size() - proxy_for.size(), proxy_for.size(), proxy_for) == 0;
    if (proxy) {
      q.note = fmt::format("{} rows are {}: a proxy for SGLang's {} kernel (same rows and heads)", q.op, impl->second,
                           proxy_for);
    } else if (impl != q.series->params.end() && impl->second.find("standin") != std::string::npos) {
      q.note = fmt::format("{} rows are {} (not SGLang's kernel): kept as priced before", q.op, impl->second);
      q.series = nullptr;
    }
  }
  queries_[term] = std::move(q);
  order_.push_back(term);
}

OpTablePricing::OpTablePricing(std::shared_ptr<const OpTableSet> tables, const Scenario& s, double nvlink_efficiency)
    : nvlink_efficiency_(nvlink_efficiency) {
  if (!tables || tables->empty()) return;
  tables_ = std::move(tables);
  const ModelSpec& m = s.model;  // attention heads are per GPU here (the rank scenario)
  const DeploymentSpec& d = s.deployment;
  hidden_ = m.hidden_size;
  topk_ = m.experts_per_token;
  experts_ = m.routed_experts;
  deepep_mode_ = d.decode_deepep_mode();  // auto: low_latency in decode (SGLang's rule)
  const int tp = std::max(1, d.decode.tp);
  const int atp = std::max(1, tp / std::max(1, d.decode.dp_attention));
  // A model with another's layer shapes (GLM-5.2: GLM-5's) reads the rows collected for that model.
  const std::string model = m.layer_shapes_of.empty() ? m.name : m.layer_shapes_of;
  // Projections as deployed: fp8, or bf16 where the checkpoint keeps them so (dense_weight_bytes_per_param >= 2).
  const std::string dtype = m.dense_weight_bytes_per_param >= 2 ? "bf16" : "fp8";
  // A dense GEMM is asked by its per-GPU shape (n outputs, k inputs); dtype and TP only tell apart rows of the same
  // shape, except where the shape is per head (the absorbed w_kv_b), whose heads per GPU only the TP gives.
  auto dense = [&](const std::string& term, const std::string& field, const std::string& name, double n, double k,
                   const std::string& dt, int shard_tp, bool tp_required = false) {
    OpParams params{{"model", model}, {"name", name}, {"n", num(n)}, {"k", num(k)}};
    OpParams prefer{{"dtype", dt}};
    (tp_required ? params : prefer)["tp"] = std::to_string(shard_tp);
    add(term, field, "dense_gemm", std::move(params), std::move(prefer));
  };
  const double h = m.hidden_size, heads = m.attention_heads, shared = std::max(1, m.shared_experts);
  // Indexer (selecting layers): its two table-measured projections, the fp8 MQA logits and the top-k.
  dense("indexer_q", "indexer", "wq_indexer", double(m.indexer_heads) * m.indexer_head_dim, m.q_lora_rank, dtype, atp);
  dense("indexer_k", "indexer", "wk_indexer", m.indexer_head_dim, h, dtype, atp);
  dense("indexer_w", "indexer", "weights_proj", m.indexer_heads, h, "bf16", atp);  // the per-head weights (bf16)
  add("indexer_logits", "indexer", "indexer_logits",
      {{"model", model}, {"heads", std::to_string(m.indexer_heads)}, {"head_dim", std::to_string(m.indexer_head_dim)}},
      {});
  add("indexer_topk", "topk", "indexer_topk", {{"topk", std::to_string(m.top_k)}}, {{"model", model}});
  // Attention side of every layer, at the heads one GPU computes.
  add("rmsnorm_hidden", "attention", "rmsnorm", {{"model", model}, {"hidden", num(h)}}, {});
  dense("q_a", "attention", "q_a", m.q_lora_rank, h, dtype, atp);
  add("rmsnorm_q", "attention", "rmsnorm", {{"model", model}, {"hidden", std::to_string(m.q_lora_rank)}}, {});
  dense("q_b", "attention", "q_b", heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.q_lora_rank, dtype, atp);
  add("rope_q", "attention", "rope",
      {{"model", model}, {"heads", num(heads)}, {"rope_dim", std::to_string(m.qk_rope_head_dim)}}, {});
  dense("kv_a", "attention", "kv_a", m.kv_lora_rank + m.qk_rope_head_dim, h, dtype, atp);
  // SGLang fuses q_a and kv_a into one GEMM (fused_qkv_a_proj_with_mqa): where the tables time it, it prices both
  // (q_a carries the call, kv_a none), ahead of separate q_a / kv_a rows.
  dense("fused_qkv_a", "attention", "fused_qkv_a", double(m.q_lora_rank) + m.kv_lora_rank + m.qk_rope_head_dim, h,
        dtype, atp);
  add("rmsnorm_kv", "attention", "rmsnorm", {{"model", model}, {"hidden", std::to_string(m.kv_lora_rank)}}, {});
  // The absorbed w_kv_b: two per-head batched GEMMs (q side nope -> latent, output side latent -> v); the heads per
  // GPU are told apart by the TP that splits them.
  // SGLang runs them as bf16 torch.bmm over the heads on the GPU (kv_b dequantized at load): the collector's
  // head_bmm rows (w_kc: nope -> kv_lora, w_vc: kv_lora -> v), keyed by heads per GPU.
  add("w_kv_b_q", "attention", "head_bmm",
      {{"model", model}, {"name", "w_kc"}, {"heads", num(heads)}, {"k", std::to_string(m.qk_nope_head_dim)},
       {"n", std::to_string(m.kv_lora_rank)}}, {});
  add("w_kv_b_o", "attention", "head_bmm",
      {{"model", model}, {"name", "w_vc"}, {"heads", num(heads)}, {"k", std::to_string(m.kv_lora_rank)},
       {"n", std::to_string(m.v_head_dim)}}, {});
  add("sparse_attention", "attention", "flashmla_sparse_decode",
      {{"kv", d.kv_dtype == KvDtype::kFp8 ? "fp8" : "bf16"}, {"heads", num(heads)}, {"topk", std::to_string(m.top_k)}},
      {{"model", model}, {"layout", "v32"}});
  // The OFF arm's fa3 (bf16 KV on Hopper): the collector's dense MLA decode over the K selected rows, real heads.
  add("dense_attention", "attention", "dense_decode_attention", {{"kv", "bf16"}, {"heads", num(heads)}},
      {{"model", model}}, "fa3");
  dense("o_proj", "attention", "o_proj", h, heads * m.v_head_dim, dtype, atp);
  // MoE side (per GPU at its tokens), dense-MLP layers, routed experts, LM head.
  dense("router", "moe", "router", m.routed_experts, h, dtype, atp);
  dense("shared_gate_up", "moe", "shared_gate_up", 2.0 * m.moe_intermediate_size * shared, h, dtype, atp);
  add("silu_mul_shared", "moe", "silu_mul", {{"model", model}, {"width", num(m.moe_intermediate_size * shared)}}, {});
  dense("shared_down", "moe", "shared_down", h, m.moe_intermediate_size * shared, dtype, atp);
  dense("dense_gate_up", "moe", "dense_gate_up", 2.0 * m.dense_intermediate_size, h, dtype, atp);
  dense("dense_down", "moe", "dense_down", h, m.dense_intermediate_size, dtype, atp);
  const std::string gemm = deepep_mode_ == "normal" ? "moe_gemm_contig" : "moe_gemm_masked";
  const std::string ep = std::to_string(std::max(1, d.decode.ep));
  for (const char* proj : {"gate_up", "down"})
    add(std::string("experts_") + proj, "moe", gemm, {{"model", model}, {"proj", proj}, {"ep", ep}},
        {{"dist", "uniform"}, {"topk", std::to_string(m.experts_per_token)}});
  add("experts_silu", "moe", "silu_mul", {{"model", model}, {"width", num(m.moe_intermediate_size)}}, {});
  dense("lm_head", "moe", "lm_head", std::ceil(double(m.vocab_size) / tp), h, "bf16", tp);
  decode_op_term_ = {{"q_a", "q_a"},           {"q_b", "q_b"},
                     {"kv_a", "kv_a"},         {"o_proj", "o_proj"},
                     {"w_kv_b_q", "w_kv_b_q"}, {"w_kv_b_o", "w_kv_b_o"},
                     {"indexer_q", "indexer_q"}, {"indexer_k", "indexer_k"}, {"indexer_w", "indexer_w"},
                     {"rmsnorm_hidden", "rmsnorm_hidden"}, {"rmsnorm_q", "rmsnorm_q"},
                     {"rmsnorm_kv", "rmsnorm_kv"}, {"rope_q", "rope_q"},
                     {"router", "router"},     {"shared_gate_up", "shared_gate_up"},
                     {"silu_mul_shared", "silu_mul_shared"}, {"shared_down", "shared_down"},
                     {"dense_gate_up", "dense_gate_up"}, {"dense_down", "dense_down"}};
}

SimTime OpTablePricing::at(const std::string& term, double batch, double context) const {
  const auto it = queries_.find(term);
  if (it == queries_.end() || !it->second.series) return -1;
  const OpLookup l = OpTableSet::at(*it->second.series, batch, context, 0);
  return l.label == OpLabel::kAbsent ? -1 : to_ns(l.us);
}

SimTime OpTablePricing::decode_op_ns(const std::string& op, double batch) const {
  if (!tables_) return -1;
  if ((op == "q_a" || op == "kv_a") && queries_.at("fused_qkv_a").series) {
    const SimTime fused = at("fused_qkv_a", batch, 0);
    if (fused >= 0) return op == "q_a" ? fused : 0;
  }
  const auto it = decode_op_term_.find(op);
  return it == decode_op_term_.end() ? -1 : at(it->second, batch, 0);
}

SimTime OpTablePricing::term_ns(const std::string& term, double batch, double context) const {
  return tables_ ? at(term, batch, context) : -1;
}

std::string op_lookup_source(const OpLookup& l, const std::string& op) {
  if (l.label == OpLabel::kAbsent || !l.series || !l.series->table) return "";
  const char* kind = l.label == OpLabel::kFromRanks ? "modelled from fewer-GPU measurements" : "measured";
  return fmt::format("{} ({} op {})", kind, l.series->table->file, op);
}

std::string OpTablePricing::term_source(const std::string& term, bool decode_op) const {
  if (!tables_) return "";
  std::string key = term;
  if (decode_op) {
    if ((term == "q_a" || term == "kv_a") && queries_.at("fused_qkv_a").series) key = "fused_qkv_a";
    else if (const auto it = decode_op_term_.find(term); it != decode_op_term_.end()) key = it->second;
    else return "";
  }
  const auto it = queries_.find(key);
  if (it == queries_.end() || !it->second.series || !it->second.series->table) return "";
  return fmt::format("measured ({} op {})", it->second.series->table->file, it->second.op);
}

SimTime OpTablePricing::expert_collective_ns(const std::string& term, int ranks, double tokens,
                                             double link_bytes_per_s, std::string* source) const {
  if (!tables_ || ranks <= 1) return -1;
  const bool dispatch = term == "ep_dispatch";
  const std::string op = std::string(dispatch ? "ep_dispatch_" : "ep_combine_") + (deepep_mode_ == "normal" ? "normal" : "ll");
  // The payload that leaves one GPU: each token's top-k copies, fp8 out (dispatch) and bf16 back (combine).
  const double bytes = tokens * topk_ * hidden_ * (dispatch ? 1.0 : 2.0) * (ranks - 1) / ranks;
  const double bound_us = link_bytes_per_s > 0 ? bytes / (link_bytes_per_s * nvlink_efficiency_) * 1e6 : 0;
  const OpLookup l = lookup_over_ranks(*tables_, op, {{"hidden", std::to_string(hidden_)}, {"topk", std::to_string(topk_)}},
                                       {{"experts", std::to_string(experts_)}, {"dtype", dispatch ? "fp8" : "bf16"}},
                                       ranks, tokens, 0, bound_us);
  if (source) *source = op_lookup_source(l, op);
  return l.label == OpLabel::kAbsent ? -1 : to_ns(l.us);
}

SimTime table_all_reduce_ns(const OpTableSet* tables, int ranks, double bytes, double link_bytes_per_s,
                            double nvlink_efficiency, std::string* source) {
  if (!tables || ranks <= 1 || !(bytes > 0)) return -1;
  const double moved = 2.0 * (ranks - 1) / ranks * bytes;  // a ring's bytes per GPU
  const double bound_us = link_bytes_per_s > 0 ? moved / (link_bytes_per_s * nvlink_efficiency) * 1e6 : 0;
  const OpLookup l = lookup_over_ranks(*tables, "all_reduce", {}, {{"dtype", "bf16"}}, ranks, 0, bytes, bound_us);
  if (source) *source = op_lookup_source(l, "all_reduce");
  return l.label == OpLabel::kAbsent ? -1 : to_ns(l.us);
}

SimTime OpTablePricing::all_reduce_ns(int ranks, double bytes, double link_bytes_per_s, std::string* source) const {
  return table_all_reduce_ns(tables_.get(), ranks, bytes, link_bytes_per_s, nvlink_efficiency_, source);
}

std::vector<OpTermStatus> OpTablePricing::status(int expert_ep, int ep_ranks, int allreduce_ranks,
                                                 int attention_tp) const {
  std::vector<OpTermStatus> out;
  if (!tables_) return out;
  for (const std::string& term : order_) {
    const Query& q = queries_.at(term);
    if (term.rfind("experts_", 0) == 0 && expert_ep <= 1) continue;  // routed experts from tables: DeepEP only
    if (term == "fused_qkv_a") continue;  // not a term of its own: it prices q_a and kv_a where timed
    const Query& fused = queries_.at("fused_qkv_a");
    const Query& asked = (term == "q_a" || term == "kv_a") && fused.series ? fused : q;
    OpTermStatus st;
    st.term = term, st.field = q.field, st.op = asked.op, st.params = asked.params;
    st.series = asked.series;
    st.label = asked.series ? OpLabel::kMeasured : OpLabel::kAbsent;
    st.note = &asked == &fused ? "one fused GEMM with kv_a, charged to q_a" : asked.note;
    out.push_back(std::move(st));
  }
  // Collectives at the deployment's rank counts: the table's own, or modelled from fewer GPUs.
  auto collective = [&](const std::string& term, const std::string& field, const std::string& op, OpParams params,
                        OpParams prefer, int ranks, double batch, double bytes) {
    if (ranks <= 1) return;
    OpTermStatus st;
    st.term = term, st.field = field, st.op = op, st.params = params;
    st.params["ranks"] = std::to_string(ranks);
    const OpLookup l = lookup_over_ranks(*tables_, op, params, prefer, ranks, batch, bytes, 0);
    st.label = l.label == OpLabel::kExtrapolated ? OpLabel::kMeasured : l.label;
    st.series = l.series;
    st.note = l.note;
    out.push_back(std::move(st));
  };
  const std::string mode = deepep_mode_ == "normal" ? "normal" : "ll";
  const OpParams ep_params{{"hidden", std::to_string(hidden_)}, {"topk", std::to_string(topk_)}};
  collective("ep_dispatch", "moe", "ep_dispatch_" + mode, ep_params, {{"dtype", "fp8"}}, ep_ranks, 1, 0);
  collective("ep_combine", "moe", "ep_combine_" + mode, ep_params, {{"dtype", "bf16"}}, ep_ranks, 1, 0);
  collective("all_reduce_attention", "attention", "all_reduce", {}, {{"dtype", "bf16"}}, attention_tp, 0, 1);
  collective("all_reduce_moe", "moe", "all_reduce", {}, {{"dtype", "bf16"}}, allreduce_ranks, 0, 1);
  return out;
}

}  // namespace hisparse::sim
