// @brief The MoE phase of a decode step by term (DecodeCostModel::moe_terms, moe_phase; decode_cost_model.h): the
// dense part of every layer, the routed experts, DeepEP's dispatch/combine or the all-reduce, the LM head and the
// step's fixed terms, each with where its time comes from (an op table, a roofline, a cost term of the file).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/cost/step/decode_cost_model.h"

namespace hisparse::sim {

std::string DecodeCostModel::ops_source(std::initializer_list<const char*> ops, double batch) const {
  size_t measured = 0;
  std::string table;
  for (const char* op : ops)
    if (tables_.decode_op_ns(op, batch) >= 0) {
      ++measured;
      if (table.empty()) table = tables_.term_source(op, /*decode_op=*/true);
    }
  const std::string modelled = p_.step ? "modelled (per-op step calibration where it holds the op, else roofline)"
                                       : "modelled (roofline at the cost file's efficiencies)";
  if (measured == 0) return modelled;
  if (measured == ops.size()) return table + (ops.size() > 1 ? fmt::format(" and {} more ops", ops.size() - 1) : "");
  return fmt::format("{} of {} ops {}; the rest {}", measured, ops.size(), table, modelled);
}

std::string DecodeCostModel::cost_term_source(const std::string& term) const {
  for (const TermSource& t : p_.sources)
    if (t.term == term) return fmt::format("{} (cost term {})", t.kind, term);
  return fmt::format("assumed (cost term {}, built-in default)", term);
}

std::vector<MoeTerm> DecodeCostModel::moe_terms(double T, double max_gpu_tokens, bool with_sources) const {
  std::vector<MoeTerm> out;
  if (!(T > 0)) return out;
  if (pricing_ == LayerPricing::kGqaKv) {
    const MoeTime g = gqa_mlp_phase(T, max_gpu_tokens);
    out.push_back({"mlp", g.compute, false, "modelled (GQA MLP, LM head and fixed terms: roofline and cost terms)"});
    out.push_back({"mlp_all_reduce", g.all_to_all, true, "modelled (all-reduce over the TP group)"});
    return out;
  }
  const ModelSpec& m = sc_.model;
  const double ep = std::max(1, sc_.deployment.decode.ep);
  const double tp = std::max(1, sc_.deployment.decode.tp);
  // Routed experts at the model's own precision when it states one (NVFP4 0.5625), else the cost model's.
  const double bpp = m.expert_weight_bytes_per_param > 0 ? m.expert_weight_bytes_per_param : p_.weight_bytes_per_param;
  const auto& e = p_.efficiency;
  const int moe_layers = std::max(0, layers_ - m.dense_layers);
  // Per GPU at the busiest GPU's batch (data parallel, as SGLang's large-EP deployments run the dense FFNs too; DP
  // attention pads every rank's graph to the largest rank batch): the second norm, the router and the shared
  // expert of each MoE layer; the dense MLP of each dense layer.
  const std::vector<DecodeOpWork> work = deployed_ops(max_gpu_tokens, 1);
  MoeTerm dense{"dense", 0, false, ""};
  dense.ns = ops_ns({"rmsnorm_hidden", "router", "shared_gate_up", "silu_mul_shared", "shared_down"}, work) * moe_layers +
             ops_ns({"rmsnorm_hidden", "dense_gate_up", "dense_down"}, work) * m.dense_layers;
  if (with_sources)
    dense.source = ops_source({"rmsnorm_hidden", "router", "shared_gate_up", "silu_mul_shared", "shared_down"},
                            max_gpu_tokens);
  out.push_back(dense);
  if (m.is_compressed()) dsv4_moe_terms(max_gpu_tokens, with_sources, out);  // mHC mixing, hash routing
  if (moe_layers > 0 && m.routed_experts > 0) {
    // Routed experts: the expected distinct experts one GPU must read, each routed pick landing on a uniform expert.
    const double picks = T * m.experts_per_token;
    const double p_touched = 1.0 - std::pow(1.0 - 1.0 / m.routed_experts, picks);
    const double routed_here = m.routed_experts / ep * p_touched;
    const double routed_tokens = picks / ep;
    // DeepGEMM's grouped GEMMs in SGLang's DeepEP layout (masked in low-latency mode, contiguous in normal mode)
    // at the busiest GPU's decode tokens, with the activation over the rows it receives, where the op tables hold
    // both GEMMs; else the roofline of the expected experts read.
    MoeTerm routed{"routed_experts", 0, false, ""};
    const SimTime gate_up = deepep_ ? tables_.term_ns("experts_gate_up", max_gpu_tokens) : SimTime{-1};
    const SimTime down = deepep_ ? tables_.term_ns("experts_down", max_gpu_tokens) : SimTime{-1};
    if (gate_up >= 0 && down >= 0) {
      const SimTime act = tables_.term_ns("experts_silu", routed_tokens);
      routed.ns = (gate_up + down + std::max<SimTime>(0, act)) * moe_layers;
      if (with_sources)
        routed.source = tables_.term_source("experts_gate_up") + " and experts_down" +
                        (act >= 0 ? ", experts_silu" : "; the activation not timed");
    } else {
      routed.ns =
          kernel(2.0 * expert_params_ * routed_tokens, routed_here * expert_params_ * bpp, fp8_peak(), e.moe) * moe_layers;
      if (with_sources)
        routed.source = fmt::format("modelled (roofline of the expected experts read at {:g} B/param, efficiency.moe)", bpp);
    }
    out.push_back(routed);
    if (sc_.deployment.decode.ep > 1 && sc_.deployment.decode.dp_attention > 1) {
      // Attention data parallel with experts spread: each GPU dispatches its own tokens to the experts' GPUs and
      // combines their outputs (SGLang's --moe-a2a-backend deepep, low-latency mode in decode).
      MoeTerm a2a{"dispatch_combine", 0, true, ""};
      a2a.ns = expert_all_to_all_ns(max_gpu_tokens, with_sources ? &a2a.source : nullptr) * moe_layers;
      out.push_back(a2a);
    } else {
      // Attention TP: every GPU holds every token, computes its experts' share (TP- or EP-split) and the outputs
      // are summed by one all-reduce per MoE layer (SGLang's MoE without an all-to-all backend).
      MoeTerm ar{"moe_all_reduce", 0, true, ""};
      ar.ns = hidden_allreduce_ns(T, static_cast<int>(tp), with_sources ? &ar.source : nullptr) * moe_layers;
      out.push_back(ar);
    }
  }
  // The dense MLP of each dense layer ends in an all-reduce of the instance's tokens.
  if (m.dense_layers > 0) {
    MoeTerm ar{"dense_all_reduce", 0, true, ""};
    ar.ns = hidden_allreduce_ns(T, static_cast<int>(tp), with_sources ? &ar.source : nullptr) * m.dense_layers;
    out.push_back(ar);
  }
  // LM head (bf16 weights, vocabulary split over the TP group), one graph gap, then the step's fixed terms.
  MoeTerm lm{"lm_head", 0, false, ""};
  lm.ns = lm_head_ns(T, with_sources ? &lm.source : nullptr) + p_.graph_kernel_gap_ns;
  out.push_back(lm);
  const bool dp = sc_.deployment.decode.dp_attention > 1;
  out.push_back({"sampling", p_.sampling_ns, false, with_sources ? cost_term_source("sampling") : ""});
  out.push_back({"scheduler", p_.scheduler_exposed_ns, false, with_sources ? cost_term_source("scheduler_exposed") : ""});
  out.push_back({"graph_and_sync", p_.graph_launch_ns + p_.step_sync_ns + (dp ? p_.dp_batch_sync_ns : 0), false,
                 with_sources ? cost_term_source("graph_launch") + ", " + cost_term_source("step_sync") +
                                    (dp ? ", " + cost_term_source("dp_batch_sync") : "")
                              : ""});
  return out;
}

DecodeCostModel::MoeTime DecodeCostModel::moe_phase(double T, double max_gpu_tokens) const {
  MoeTime out;
  if (!(T > 0)) return out;
  if (pricing_ == LayerPricing::kGqaKv) return gqa_mlp_phase(T, max_gpu_tokens);
  for (const MoeTerm& t : moe_terms(T, max_gpu_tokens, /*with_sources=*/false)) (t.communication ? out.all_to_all : out.compute) += t.ns;
  return out;
}

}  // namespace hisparse::sim
