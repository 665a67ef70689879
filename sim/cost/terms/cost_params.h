// @brief CostParams: the cost model's own terms (roofline efficiencies, latencies, overheads, overlap), each read with
// its provenance from a cost-model YAML (scenarios/cost_model/*.yaml, named by the hardware file's `cost_model:`).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/engine/sim_time.h"
#include "sim/cost/terms/attention_table.h"
#include "sim/cost/terms/collective_cost.h"
#include "sim/cost/terms/op_table_pricing.h"
#include "sim/cost/terms/swap_in_cost.h"

namespace hisparse::sim {

struct StepCalibration;  // sim/cost/terms/op_time_model.h

/// Fractions of the device's peak FLOP/s and of its HBM bytes/s one kind of kernel reaches: the roofline time is
/// max(flops / (peak · compute), bytes / (hbm · memory)). Published kernels report the two separately (FlashMLA's
/// sparse decode reaches 41.5 % of bf16 peak when compute bound; its dense decode 90 % of HBM when memory bound).
struct RooflineEfficiency {
  double compute = 1;
  double memory = 1;
};

/// Where a term's value comes from, as reports print it.
struct TermSource {
  std::string term;    // "efficiency.attention", "step_overhead"
  std::string value;   // as written, e.g. "compute 0.415, memory 0.896"
  std::string kind;    // measured | calibrated | modelled | fitted | assumed
  std::string source;  // publication, measurement file, or the reasoning behind an assumption
};

/// A term of kind fitted and one field point ("run/point", scenarios/field/) its value was fitted to: `hisparse
/// fidelity` reports the error on such points apart from the points held out.
struct FittedPoint {
  std::string term;
  std::string point;
};

/// The values below are the unit tests' defaults only: every `plan`, `simulate` and `advise` run loads a cost-model
/// YAML (the hardware file's `cost_model:`, or `--cost-params FILE`) that sets every term with its source, and
/// prints which (tests/sim/cost/terms/test_cost_params.cpp checks the shipped files set every term).
struct Efficiency {
  RooflineEfficiency indexer{0.6, 0.6};
  RooflineEfficiency topk{0.4, 0.4};
  RooflineEfficiency swap_in{0.3, 0.3};    // small scattered reads of the LRU state
  RooflineEfficiency attention{0.6, 0.6};
  RooflineEfficiency moe{0.7, 0.7};        // grouped GEMM reading expert weights
  RooflineEfficiency dense{0.7, 0.7};      // dense projections (attention projections, dense MLP, LM head)
  RooflineEfficiency prefill{0.5, 0.7};    // prefill: compute = MFU, memory = weight re-reads per chunk
  double nvlink = 0.6;                     // all-to-all payload efficiency
};

enum class OverlapMode { kNone, kTwoBatch };

struct CostParams {
  Efficiency efficiency;
  // One factor the file's every efficiency (each op's compute and memory, and nvlink) was multiplied by at load
  // (optional term `efficiency_scale`; 1 when absent): a software stack whose level a field point pins but whose kernels
  // are not priced one by one (cost_model/vllm-rocm-gfx950.yaml). `efficiency` holds the scaled values.
  double efficiency_scale = 1.0;
  double weight_bytes_per_param = 1.0;   // FP8 weights (DeepSeek-V3.2 ships FP8 blocks)
  // Fixed latency of one collective, by where it runs (an instance spanning nodes pays internode): the TP all-reduce
  // (attention o_proj, MoE output, dense MLP) and one expert dispatch or combine (sim/cost/terms/collective_cost.h).
  SimTime all_reduce_latency_intranode_ns = 20000;
  SimTime all_reduce_latency_internode_ns = 40000;
  SimTime all_to_all_latency_intranode_ns = 20000;
  SimTime all_to_all_latency_internode_ns = 30000;
  DeepEpTable deepep;                    // published dispatch/combine times by EP size (empty: latency + payload over the link)
  // The fixed part of a step, outside the layers' kernels (docs/cost_model.md, "The fixed part of a step").
  SimTime graph_launch_ns = 30000;       // one CUDA-graph replay beyond its kernels: launch and tail
  SimTime step_sync_ns = 30000;          // end of step: D2H of the B next-token ids and the host's wait for them
  SimTime sampling_ns = 100000;          // logits processing and sampling kernels after the LM head
  SimTime dp_batch_sync_ns = 100000;     // DP attention: the ranks' batch-size exchange before each step
  SimTime scheduler_exposed_ns = 1840000;  // scheduler host work the overlap scheduler does not hide
  SimTime graph_kernel_gap_ns = 520;     // between two kernels of a CUDA graph (roofline terms pay it per kernel)
  OverlapMode overlap = OverlapMode::kNone;
  std::string link_model = "maxmin";     // "maxmin" | "constant" (sim/network/link_model.h)
  int prefill_chunk_tokens = 16384;      // prefill runs in chunks; each chunk re-reads the weights
  SwapInCopyCost swap_in_cost;           // measured swap-in plan + miss copy (set by apply_calibration, sim/calibration/calibration.h)
  std::string swap_in_copy_mode = "fused";  // the zero-copy kernel that moves the misses (fused: the CUDA default)
  std::string swap_in_kernel;            // whose kernel swap_in_cost was fitted to: sglang | project ("" = roofline)
  AttentionPricing attention;            // the measured FlashMLA table of the sparse attention (none: roofline)
  // Measured per-op models of the decode layer (sim/cost/terms/op_time_model.h); when set they replace the roofline of the
  // projection GEMMs (MLA and indexer projections, absorbed w_kv_b, router, shared expert, dense MLP) and of top-k
  // (DecodeCostModel says which terms stay roofline and why).
  std::shared_ptr<const StepCalibration> step;
  // The engine's own kernels timed on this GPU (sim/optables/, scenarios/measurements/engine_ops.yaml): where they
  // hold a term's op at the deployment's shape they price it ahead of the per-op calibration and the roofline
  // (DecodeCostModel); null: no table applies. Its `terms` say, per term, what they answered (for the reports).
  std::shared_ptr<const OpTableUse> op_tables;
  // Provenance: the file the terms came from ("" = these built-in test defaults) and each term's source.
  std::string terms_file;
  std::vector<TermSource> sources;
  std::vector<FittedPoint> fitted_points;  // each fitted term's `fitted_to` entries

  /// The step's fixed overhead: graph launch, end-of-step sync, sampling, the scheduler's exposed host work, and the
  /// batch-size sync when the instance runs attention data parallel.
  SimTime step_overhead_ns(bool dp_attention) const {
    return graph_launch_ns + step_sync_ns + sampling_ns + scheduler_exposed_ns + (dp_attention ? dp_batch_sync_ns : 0);
  }
  SimTime all_reduce_latency_ns(bool internode) const {
    return internode ? all_reduce_latency_internode_ns : all_reduce_latency_intranode_ns;
  }
  SimTime all_to_all_latency_ns(bool internode) const {
    return internode ? all_to_all_latency_internode_ns : all_to_all_latency_intranode_ns;
  }
};

/// The CostParams member a time-valued term sets (nullptr for other terms): what sensitivities scale.
SimTime CostParams::*cost_time_term(const std::string& term);

/// Replaces `p.efficiency_scale` by `scale` (> 0), rescaling every efficiency by scale / the old one: a fit's trial.
void set_efficiency_scale(CostParams& p, double scale);

/// Reads `path` over `base`. Every term is either a bare value or a mapping {value (or compute/memory for an
/// efficiency), kind, source}; unknown keys are errors. With `require_every_term`, a term left out or given without
/// kind and source is an error (what shipped cost-model files must satisfy).
CostParams load_cost_params(const std::string& path, CostParams base = {}, bool require_every_term = false);

/// The names of every term a cost-model file sets (efficiency.<op> for each efficiency). The optional
/// `efficiency_scale` (kEfficiencyScaleTerm) is not among them.
const std::vector<std::string>& cost_term_names();
inline constexpr const char* kEfficiencyScaleTerm = "efficiency_scale";

const char* to_string(OverlapMode mode);
OverlapMode parse_overlap_mode(const std::string& text, const std::string& where);

}  // namespace hisparse::sim
