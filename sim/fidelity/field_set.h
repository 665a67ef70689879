// @brief FieldRun: one published measurement (scenarios/field/<name>.yaml, docs/fidelity.md): where it was published,
// the deployment, overrides and fixed-length workload that express it, what was assumed, and its points (metric,
// mode, concurrency, context, the published figure or range, the tolerance band and the error last accepted). Read
// strictly: unknown keys, bad values and a point without its figure are errors naming file, key and line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/cost/step/kv_mode.h"

namespace hisparse::sim {

enum class FieldMetric { kTpotMs, kTokensPerS, kGain, kMaxConcurrency, kPoolTokens };
const char* to_string(FieldMetric metric);

/// A setup item the publication leaves out, as the set of values it may have had (`plausible:` of a file or a
/// point): a ScenarioOverrides key or `context`, each value as written.
struct PlausibleItem {
  std::string key;
  std::vector<std::string> values;
};

/// Why a recorded error was allowed to grow (`accepted_worse:` beside recorded_error_pct, written by
/// `--record --accept-worse "reason"`).
struct AcceptedWorse {
  std::string date, reason;
  double from = 0, to = 0;
};

struct FieldPoint {
  std::string id;                         // unique in its file
  FieldMetric metric = FieldMetric::kTpotMs;
  KvMode mode = KvMode::kHiSparse;        // gain: always HiSparse over full KV
  int32_t concurrency = 0;                // clients per decode instance; 0 for max_concurrency
  int64_t context = 0;                    // mean decode context (tokens); default input + output / 2
  bool context_given = false;
  std::optional<double> published;        // exactly one of published and published_range
  std::optional<std::pair<double, double>> published_range;
  double tolerance_pct = 0;
  std::optional<double> recorded_error_pct;
  int line = 0;                           // of the point's `id:` in the file (1-based)
  // `role: fitted`: the figure set a deployment field (an override read off it, a context chosen because it
  // matches), so the point is an input, never counted as held out; role_reason says which field and how.
  bool role_fitted = false;
  std::string role_reason;
  std::string expected_miss;              // why a held-out point is outside its band, as measured ("" = none)
  std::vector<PlausibleItem> plausible;   // this point's own setup ranges (over the run's, key by key)
  std::optional<AcceptedWorse> accepted_worse;  // the last --accept-worse of this point
  // `pending: "<reason>"`: the point is declared (read and checked like any other) but cannot be scored yet, because
  // the tool lacks what it needs (pipeline parallelism, say). It is kept out of FieldRun::points, never evaluated,
  // fitted or recorded, and every report lists it with its reason (FieldRun::pending).
  std::string pending;
};

struct FieldSource {
  std::string publication, url, date, quote;
};

struct FieldRun {
  std::string name, title;
  std::string file;                       // the YAML it was read from
  FieldSource source;
  std::string deployment;                 // a deployment name, or a path (resolved against the file's folder)
  /// The `overrides:` mapping as written (null when absent): its keys are checked here against
  /// field_override_keys(); its values are typed and range-checked where they become a ScenarioOverrides
  /// (sim/api/fidelity_request.cpp, which owns that type), with the same file/key/line errors.
  YAML::Node overrides;
  int32_t input_tokens = 0, output_tokens = 0;
  bool closed_loop = false;
  // Which simulated throughput a tokens/s or gain point is held against: "makespan" (finished tokens over the run,
  // refill gaps and prefill included) or "decode_steady" (the decode-side throughput of full steps, as a
  // "decode-side steady throughput" benchmark reports it; ServingSummary::decode_tokens_per_s p50).
  // "total_makespan": prompt and output tokens of the finished requests over the makespan, each prompt counted once
  // (vLLM's `bench serve` "Total token throughput"); recomputed prefills are work, not tokens served.
  std::string throughput = "makespan";
  // Which of the tool's figures a point is scored on: "plan" (the closed form; the serving run is printed beside it)
  // or "simulate" (the serving run: for a shape only the engine's dynamics make, as recompute preemption's decline).
  std::string scored_by = "plan";
  std::vector<std::string> assumed;
  std::vector<FieldPoint> points;         // the points scored (every one but the pending ones)
  std::vector<FieldPoint> pending;        // declared, not scored yet, each with its reason (FieldPoint::pending)
  // `derived_overrides:` an override whose value was read off some of this run's own published figures (a pool size
  // from a logged token usage, say) makes those points inputs, not predictions: they are reported as fitted, named
  // "override <key>", and counted apart from the held-out ones, as a fitted cost term's points are.
  std::vector<std::pair<std::string, std::string>> derived_overrides;  // (override key, point id)
  std::vector<PlausibleItem> plausible;   // setup ranges every point of the run is evaluated over
};

/// The band of a metric (docs/fidelity.md, scenarios/field/README.md gives each reason): tpot_ms 10, tokens_per_s
/// 10, gain 15, max_concurrency 5, pool_tokens 5 (%); every point's tolerance_pct must be its metric's.
double metric_band_pct(FieldMetric metric);
/// A capacity metric (max_concurrency, pool_tokens): the plan's figure at a context, no load (no concurrency).
inline bool is_capacity_metric(FieldMetric m) { return m == FieldMetric::kMaxConcurrency || m == FieldMetric::kPoolTokens; }
/// The band of a ratio scored on the overhead it implies (field_evaluation.h), in percentage points of overhead.
inline constexpr double kOverheadBandPp = 3.0;
/// The most combinations a point's setup ranges may expand to.
inline constexpr size_t kMaxPlausibleCombos = 32;
/// The keys `plausible:` may hold: field_override_keys() and `context`.
bool is_plausible_key(const std::string& key);

/// The keys `overrides:` may hold: the names of the settings table. Defined in sim/api/settings_table.cpp, beside the
/// table, which sim/fidelity cannot include (sim/api includes sim/fidelity; the folders keep no include cycle).
const std::vector<std::string>& field_override_keys();

/// The suite's fits (sim/fidelity/field_fits.h) live beside the field files under this name, which the folder
/// reader therefore skips.
inline constexpr const char* kFitsFileName = "fits.yaml";

/// Reads one field file (throws hisparse::Error naming file, key and line).
FieldRun load_field_run(const std::string& path);
/// Every run of `paths`: each a field file, or a folder whose *.yaml files are read in name order. Run names must be
/// unique across the set.
std::vector<FieldRun> load_field_set(const std::vector<std::string>& paths);

}  // namespace hisparse::sim
