// @brief Which op-table row prices which term of the decode step: the op and shape the step model asks the tables
// (sim/optables/) for each term, at the deployment's per-GPU shapes, and what they answered (for the reports).
// A term the tables do not hold keeps its modelled price (per-op calibration or roofline), labelled so.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/engine/sim_time.h"
#include "sim/optables/op_table.h"

namespace hisparse::sim {

/// One NCCL all-reduce (bf16) of `bytes` per rank over `ranks` GPUs of one node from `tables`, intranode, with the
/// rank rule of sim/optables/rank_extrapolation.h bounded by the ring's bytes over `link_bytes_per_s` ×
/// `nvlink_efficiency`; -1 when the tables do not hold it (or `tables` is null).
SimTime table_all_reduce_ns(const OpTableSet* tables, int ranks, double bytes, double link_bytes_per_s,
                            double nvlink_efficiency, std::string* source = nullptr);

/// How a lookup is labelled in a step breakdown: "measured (<table file> op <op>)", or "modelled from fewer-GPU
/// measurements (<table file> op <op>)" (sim/optables/op_table.h OpLabel).
std::string op_lookup_source(const OpLookup& lookup, const std::string& op);

/// What the tables answer for one term of a deployment's step (at its shapes; the grid point is the step's own).
struct OpTermStatus {
  std::string term;     // q_a, indexer_logits, experts_gate_up, ep_dispatch, all_reduce_moe, ...
  std::string field;    // the StepCost field it is part of: indexer | topk | attention | moe
  std::string op;       // the table op asked for
  OpParams params;      // the shape asked for (required keys)
  OpLabel label = OpLabel::kAbsent;  // measured (a series over a grid), modelled from fewer GPUs, or absent
  const OpSeries* series = nullptr;  // the series that prices it (null when absent)
  std::string note;     // why absent, or the rank rule applied
};

/// The op tables a run reads (CostParams::op_tables): the tables of its hardware and, per term of its deployment's
/// step, what they answered.
struct OpTableUse {
  std::shared_ptr<const OpTableSet> set;
  std::vector<OpTermStatus> terms;
};

/// The step model's view of the op tables for one deployment. Built by DecodeCostModel from the rank scenario (heads
/// per GPU): every lookup of a term is the shape fixed here at a grid point of the step.
class OpTablePricing {
 public:
  OpTablePricing() = default;  // prices nothing
  /// `tables`: the tables of the scenario's hardware (null or empty: prices nothing). `rank_scenario`: the scenario
  /// one GPU of a rank computes (sim/cost/layout/rank_layout.h); `nvlink_efficiency` the cost file's efficiency.nvlink
  /// (DeepEP's published intranode rate), which bounds collectives modelled from fewer GPUs.
  OpTablePricing(std::shared_ptr<const OpTableSet> tables, const Scenario& rank_scenario, double nvlink_efficiency);

  bool active() const { return tables_ != nullptr; }
  /// Whether the tables hold a series for `term` (one that prices: stand-ins are dropped unless accepted as proxies).
  bool has_term(const std::string& term) const {
    const auto it = queries_.find(term);
    return it != queries_.end() && it->second.series != nullptr;
  }
  /// Time (ns) of one call of the decode-layer op `op` (core/decode_layer_ops.h names: q_a, rmsnorm_q, router, …)
  /// at `batch` tokens per GPU; -1 when the tables do not hold it.
  SimTime decode_op_ns(const std::string& op, double batch) const;
  /// Time (ns) of one call of a term priced apart: indexer_logits and indexer_topk (batch, mean context),
  /// sparse_attention (batch), experts_gate_up / experts_silu / experts_down (routed rows: batch = decode tokens per
  /// rank), lm_head (batch = instance tokens); -1 when absent.
  SimTime term_ns(const std::string& term, double batch, double context = 0) const;
  /// "measured (<table file> op <op>)" of the series that prices `term` (a term of term_ns, or a decode-layer op of
  /// decode_op_ns when `decode_op`), "" when the tables do not hold it.
  std::string term_source(const std::string& term, bool decode_op = false) const;
  /// One DeepEP dispatch or combine (`term` ep_dispatch | ep_combine, mode by the deployment's deepep_mode) of
  /// `tokens` per rank over `ranks` GPUs on a link of `link_bytes_per_s` per direction; -1 when absent.
  SimTime expert_collective_ns(const std::string& term, int ranks, double tokens, double link_bytes_per_s,
                               std::string* source = nullptr) const;
  /// One NCCL all-reduce of `bytes` per rank over `ranks` GPUs (intranode), -1 when absent.
  SimTime all_reduce_ns(int ranks, double bytes, double link_bytes_per_s, std::string* source = nullptr) const;

  /// Every term the step model asks the tables for at this deployment, in step order, with the answer at the
  /// deployment's own rank counts: `expert_ep` the EP size where the step runs DeepEP's grouped GEMMs (attention
  /// DP, ep > 1, on any number of nodes), else 0 (routed experts are then not table terms); `ep_ranks` the same
  /// where dispatch/combine stay inside one node (the tables hold intranode runs only), else 0; `allreduce_ranks`
  /// the GPUs of the MoE / dense-MLP all-reduce (0: none); `attention_tp` those of the attention all-reduce (<= 1:
  /// none).
  std::vector<OpTermStatus> status(int expert_ep, int ep_ranks, int allreduce_ranks, int attention_tp) const;
  /// low_latency | normal: the DeepEP mode SGLang runs in decode (deployment deepep_mode; auto = low_latency).
  const std::string& deepep_mode() const { return deepep_mode_; }

 private:
  struct Query {
    std::string field, op;
    OpParams params, prefer;
    const OpSeries* series = nullptr;  // resolved once
    std::string note;
  };
  void add(const std::string& term, const std::string& field, const std::string& op, OpParams params, OpParams prefer,
           const std::string& proxy_for = "");
  SimTime at(const std::string& term, double batch, double context) const;
  std::shared_ptr<const OpTableSet> tables_;
  std::map<std::string, Query> queries_;   // by term
  std::vector<std::string> order_;         // terms in step order
  std::map<std::string, std::string> decode_op_term_;  // core/decode_layer_ops.h op -> term
  std::string deepep_mode_ = "low_latency";
  double nvlink_efficiency_ = 1;
  int hidden_ = 0, topk_ = 0, experts_ = 0;
};

}  // namespace hisparse::sim
