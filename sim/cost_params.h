// @brief CostParams: the cost model's own knobs (efficiencies, latencies, overlap), with documented defaults
// and an optional YAML override (a calibration file written by `hisparse bench`, or hand-made).
#pragma once

#include <memory>
#include <string>

#include "sim/sim_time.h"
#include "sim/swap_in_cost.h"

namespace hisparse::sim {

struct StepCalibration;  // sim/step_calibration.h

/// Fraction of the roofline (min of FLOP/s and HBM bytes/s) each kind of operation reaches. The defaults are
/// round figures, not measurements: decode kernels are memory-bound and typically reach 60–80 % of HBM
/// bandwidth; small scattered kernels much less. A calibration file from `hisparse bench` replaces them.
struct Efficiency {
  double indexer = 0.6;
  double topk = 0.4;
  double swap_in = 0.3;     // small scattered reads of the LRU state
  double attention = 0.6;
  double moe = 0.7;         // grouped GEMM reading expert weights
  double dense = 0.7;       // dense projections (attention projections, dense MLP, LM head)
  double prefill = 0.5;     // prefill, compute-bound (MFU)
  double nvlink = 0.6;      // all-to-all payload efficiency
};

enum class OverlapMode { kNone, kTwoBatch };

struct CostParams {
  Efficiency efficiency;
  double weight_bytes_per_param = 1.0;   // FP8 weights (DeepSeek-V3.2 ships FP8 blocks)
  SimTime all_to_all_latency_ns = 20000; // per dispatch or combine (DeepEP low-latency kernels: tens of µs at 8 GPUs)
  SimTime step_overhead_ns = 2000000;    // scheduler + sampling + CUDA-graph replay per step (SGLang: ~1–3 ms)
  int kernels_per_layer = 12;            // launches per layer under CUDA graphs (each adds kernel_launch_ns)
  OverlapMode overlap = OverlapMode::kNone;
  std::string link_model = "maxmin";     // "maxmin" | "constant" (sim/link_model.h)
  int prefill_chunk_tokens = 16384;      // prefill runs in chunks; each chunk re-reads the weights
  SwapInCopyCost swap_in_cost;           // measured swap-in plan + miss copy (set by apply_calibration, sim/calibration.h)
  // Measured per-op models of the decode layer (sim/step_calibration.h); when set they replace the roofline and the
  // per-kernel launch cost of the projection GEMMs (MLA and indexer projections, absorbed w_kv_b, router, shared
  // expert, dense MLP) and of top-k (DecodeCostModel says which terms stay roofline and why).
  std::shared_ptr<const StepCalibration> step;
};

/// Reads `path` (keys as in CostParams; unknown keys are errors) over the defaults.
CostParams load_cost_params(const std::string& path, CostParams base = {});

const char* to_string(OverlapMode mode);
OverlapMode parse_overlap_mode(const std::string& text, const std::string& where);

}  // namespace hisparse::sim
