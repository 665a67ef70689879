// @brief `hisparse advise --layouts`: which layout to run on the user's GPUs for a workload. TP or DP attention + EP
// (DeepEP), colocated or PD-disaggregated (half the GPUs prefilling, half decoding), each with HiSparse off and on;
// for each, the requests per second the layout sustains, the output tokens/s per GPU, and the term that binds
// (prefill, or decode and its binding capacity limit). Issue 43's "topology advice": SGLang #23896 found DP4 + DeepEP
// slower than plain TP4 on 4 × H20-3e; a DP-attention GLM-5.2 recipe regresses on short prompts against plain TP.
//
// The model (docs/advise.md "Layouts"): decode at the advisor's best batch for the workload's mean decode context
// (evaluate_candidate: the largest batch per rank within every limit, the TPOT SLO included) gives D output tokens/s
// per decode instance; one request's prefill of I tokens takes T_p on the prefill GPUs (DecodeCostModel::
// prefill_time over them). Colocated: prefill passes and decode share the instance, R = 1 / (T_p + O / D), the larger
// share binding; PD: R = min(1 / T_p, D / O), the smaller rate binding. Output tokens/s per GPU = R × O / G.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/advise/advisor.h"
#include "sim/miss/miss_curve.h"

namespace hisparse::sim {

struct LayoutWorkload {
  std::string label;
  int64_t input_tokens = 0, output_tokens = 0;
};
/// The two prompt shapes `--layouts` compares by default (assumed): short (1,024 in / 512 out, ShareGPT-like) and
/// long (65,536 in / 1,024 out, long-context).
std::vector<LayoutWorkload> default_layout_workloads();

struct LayoutRow {
  std::string layout;             // "TP8 colocated", "DP8 attention + EP8 (DeepEP), PD 4 + 4", ...
  bool hisparse = false;
  std::string not_applicable;     // "" when evaluated
  Scenario scenario;              // the layout's decode deployment
  int gpus = 0;                   // all GPUs the layout uses (decode + prefill)
  int prefill_gpus = 0;           // GPUs whose time prefill takes (colocated: the decode instance's)
  bool pd = false;
  Candidate decode;               // the decode instance at its best batch
  double prefill_s = 0;           // one request's prefill on prefill_gpus
  double decode_s = 0;            // O / D: one request's share of the decode instance's time
  double requests_per_s = 0;
  double tokens_per_s_per_gpu = 0;  // output tokens
  std::string binding;            // "prefill" or "decode (<limit>)"
};

struct LayoutComparison {
  LayoutWorkload workload;
  std::vector<LayoutRow> rows;
  int winner = -1, runner_up = -1;
  std::string why;                // the winner, its margin and the binding terms
};

/// The layouts of the deployment's GPUs (its decode instances', and its prefill instances' under PD), each with HiSparse off and on (on: the deployment's H
/// and ratio; not applicable without a sparse indexer).
std::vector<LayoutRow> layout_rows(const Scenario& s);
/// Evaluates every layout on `w` and picks the most output tokens/s per GPU (ties: the earlier row).
LayoutComparison compare_layouts(const Scenario& s, const LayoutWorkload& w, const MissCurves& misses,
                                 const AdviseOptions& options);
std::string layouts_to_text(const Scenario& s, const std::vector<LayoutComparison>& comparisons);

/// One printed row of the comparison in standard types (what Python's advise(layouts=True) returns; modelled).
struct LayoutTableRow {
  std::string workload;                 // the prompt shape's label
  int64_t input_tokens = 0, output_tokens = 0;
  std::string layout;
  bool hisparse = false;
  bool applicable = true;
  std::string not_applicable;           // why not, when not applicable
  int gpus = 0, prefill_gpus = 0;
  bool pd = false;
  int64_t batch_per_rank = 0;
  double tpot_ms = 0, prefill_s = 0, requests_per_s = 0, tokens_per_s_per_gpu = 0;
  std::string binding;
  bool winner = false;
};
/// The rows of every comparison, workload after workload, in the printed order.
std::vector<LayoutTableRow> layout_table(const std::vector<LayoutComparison>& comparisons);

}  // namespace hisparse::sim
