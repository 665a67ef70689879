// @brief StepBreakdown: the decode step of a published DP-attention run as the tool prices it, term by term (the
// busiest rank's attention, indexer, top-k, swap-in and copies; the dense part, routed experts, DeepEP dispatch /
// combine, LM head, sampling, scheduler and graph terms of the MoE phase), each labelled measured (the op table that
// timed it) or modelled / assumed (how), so `hisparse fidelity` shows where a DP run's error sits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/io/json_writer.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/kv_mode.h"
#include "sim/cost/step/step_time_model.h"

namespace hisparse::sim {

struct BreakdownTerm {
  std::string name;    // indexer | topk | swap_in | h2d | stall | attention | dense | routed_experts | …
  double ms = 0;       // of the step (all layers)
  std::string source;  // "measured (<table> op <op>)", "modelled (…)", "<kind> (cost term …)"
};

struct StepBreakdown {
  KvMode mode = KvMode::kFull;
  int32_t concurrency = 0;   // requests in the instance
  int64_t context = 0;
  int ranks = 0;             // DP-attention ranks of the instance
  int64_t busiest = 0;       // requests on the busiest rank: every rank's graph is padded to it, so it sets the step
  double step_ms = 0, tpot_ms = 0;
  std::string deepep;        // the DeepEP mode of the decode step and SGLang's rule, "" without DeepEP
  std::string tables;        // which op tables the run reads ("none for <hardware>: every term modelled")
  std::vector<BreakdownTerm> terms;  // in step order; in overlap none they sum to step_ms
  std::string note;          // two-batch overlap: the MoE phase as the step charges it
};

/// The step of `concurrency` requests of `context` tokens in `model`'s instance (the busiest rank ⌈c / ranks⌉, as
/// fidelity's tpot_ms prices it), by term, with `cost`'s op-table use and term labels for the sources.
StepBreakdown step_breakdown(const StepTimeModel& model, const CostParams& cost, KvMode mode, int32_t concurrency,
                             int64_t context);

/// Which op tables a run's step reads: "no op table read for <hardware>: every term modelled", or "N terms from
/// <table>; M terms modelled" (CostParams::op_tables).
std::string op_tables_summary(const CostParams& cost, const std::string& hardware);

/// "hisparse c8 n8704" — the point's where, as the fidelity table prints it.
std::string breakdown_where(const StepBreakdown& b);
/// The breakdown as indented lines (one per term, "ms  source"), for the console and fidelity.md.
std::vector<std::string> breakdown_lines(const StepBreakdown& b);
/// The breakdown as a JSON object.
void breakdown_json(JsonWriter& j, const StepBreakdown& b);

}  // namespace hisparse::sim
