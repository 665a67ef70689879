// @brief MissFitter: the one binning of replayed swap-in counters into miss fractions (sim/miss/miss_surface.h). Every fit
// in the project goes through it: `hisparse fit-miss-model` (the shipped surfaces), the serving simulator's
// fit_statistical_miss_model and the planner's MissCurves::from_trace, so they agree on any trace.
//
// Each step-layer of a replayed request with n > H and usable = selected − newest_hits > 0 is classified by its step
// index s relative to the request's first step: s = 0 first step, 1 <= s <= ceil(H/K) warm-up, later steady state
// (the rule of sim/miss/miss_surface.h). Steady samples are binned by n/H (fixed edges, bin_edges()); a bin's point is
// (mean n/H of its samples, Σ misses / Σ usable). Columns are identified by (policy, H/K), so several traces — with
// different K too — pool into one column at equal H/K.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/miss/miss_surface.h"
#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

/// One replay configuration and the column it feeds.
struct MissFitConfig {
  std::string policy;
  int32_t H = 0;
  double h_over_k = 0;  // column key; the nominal ratio (H itself was rounded to an integer)
};

class MissFitter {
 public:
  /// n/H bin edges of the steady curve, ascending; the last bin is open ([64, ∞)).
  static const std::vector<double>& bin_edges();

  /// Declares the next trace: `configs` in ReplayResult::configs order (policy-major, buffer sizes as given),
  /// `top_k` the trace's K (for the warm-up length ceil(H/K)).
  void begin_trace(int32_t top_k, const std::vector<MissFitConfig>& configs);
  /// run_replay's row sink (ReplayOptions::keep_step_rows) for the trace declared last.
  void add(const ReplayRequestRows& rows);

  /// Every column fed so far, policy → columns ascending in H/K. A part without samples reads 0 with 0 samples;
  /// a column without steady samples has an empty curve.
  std::map<std::string, std::vector<MissColumn>> columns() const;
  /// The column of (policy, h_over_k); throws naming both when nothing fed it.
  MissColumn column(const std::string& policy, double h_over_k) const;
  /// The columns whose first step, warm-up and steady curve all have samples (what a MissSurface must hold);
  /// `skipped`, when given, receives one line per column left out saying why.
  MissSurface surface(const std::string& name, std::vector<std::string>* skipped = nullptr) const;

 private:
  struct Bin {
    int64_t misses = 0, usable = 0, count = 0;
    double ratio_sum = 0;
  };
  struct Part {
    int64_t misses = 0, usable = 0, count = 0;
  };
  struct Acc {
    Part first, warmup;
    std::vector<Bin> bins;
    double ratio_min = 0, ratio_max = 0;
    int64_t steady_count = 0;
  };
  struct Current {
    Acc* acc = nullptr;
    int32_t H = 0;
    int32_t warmup_steps = 0;
  };
  static MissColumn to_column(double h_over_k, const Acc& a);

  std::map<std::pair<std::string, double>, Acc> acc_;
  std::vector<Current> current_;  // [config of the trace declared last]
};

/// Where a replay's requests go when some are held out (sim/miss/miss_holdout.h): requests for which `held`
/// returns true feed `held_out`, the others the fitter given to replay_into_fitter.
struct FitSplit {
  MissFitter* held_out = nullptr;
  std::function<bool(const ReplayRequestRows&)> held;
};

/// Replays `trace_path` once with every policy at every H of `buffer_sizes` and feeds `fitter`; `h_over_k[i]` is the
/// column of buffer_sizes[i]. Returns the trace's description for a provenance; `result`, when given, receives the
/// replay's counters (hit rates); `split`, when given, routes the held-out requests to its own fitter.
MissTraceInfo replay_into_fitter(MissFitter& fitter, const std::string& trace_path,
                                 const std::vector<std::string>& policies, const std::vector<int32_t>& buffer_sizes,
                                 const std::vector<double>& h_over_k, int64_t row_bytes, int threads,
                                 ReplayResult* result = nullptr, const FitSplit* split = nullptr);

}  // namespace hisparse::sim
