// @brief Cache strategies side by side on one deployment (issue 18, fourth part; docs/capacity.md, "Cache
// strategies"): full KV, HiSparse (host offload + LRU device buffer), physical eviction at a fixed budget
// (SnapKV / PyramidKV), logical masking (OmniKV) and hybrid compression (DeltaKV), each per request at context n —
// HBM, host memory, PCIe bytes per step, rows attended per step, reconstruction work — and the resulting
// concurrency per rank and decode tokens/s by the planner's own limits (HBM, max_running_requests, TPOT SLO through
// the StepTimeModel), next to the attention-mass recall each keeps as measured by `hisparse select`.
//
// Pure computation on a finished CapacityPlan: the full-KV and HiSparse rows are the plan's own rows, copied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse {
class JsonWriter;
}

namespace hisparse::sim {

struct CapacityPlan;

/// Inputs of the strategies that the plan does not have (apps/plan.cpp flags `--strategies`, `--eviction-budget`, …).
struct StrategyOptions {
  bool enabled = false;             // `--strategies`: add the section (off: every output is unchanged)
  int64_t eviction_budget = 0;      // E: tokens kept per request by physical eviction; 0 = the deployment's top_k
  int64_t compression_sinks = 4;    // S: full-precision initial tokens (StreamingLLM's 4 sinks)
  int64_t compression_recent = 256; // R: full-precision newest tokens
  double compression_ratio = 4;     // c: bytes of a full-precision row / bytes of its compressed form (>= 1)
  /// HBM bytes of reconstruction work per compressed row attended per layer; < 0 = the hardware's DeltaKV
  /// calibration (`deltakv_calibration:`, sim/calibration/deltakv_calibration.h) where it has one, else the
  /// assumed default row / c + row (read the compressed row, write the full-precision row attention then reads).
  double reconstruct_bytes = -1;
  std::string recall_file;          // `--recall-from`: select.json of `hisparse select`; "" = recall not measured
  std::string recall_json;          // its contents (apps/plan.cpp reads the file)
  int64_t recall_top_k = 0;         // K read from the file; 0 = each strategy's own (top_k, or E for eviction)
};

/// Recall of one strategy: what the select study measured for the selector that stands for it.
struct StrategyRecall {
  bool known = false;               // false: `text` says why there is no number
  double value = 0;
  std::string text;                 // "0.8721 (sink-recent, K=256, select.json)" | "1 (by definition)" | "not measured …"
};

struct StrategyRow {
  std::string key;                  // full | hisparse | eviction | masking | compression
  std::string name;                 // display name
  std::string definition;           // one line: what is kept where and what is attended
  int64_t seq_len = 0;
  double hbm_per_request = 0;       // bytes per GPU holding the request (latent + indexer keys)
  double host_per_request = 0;      // bytes of host DRAM per GPU holding the request
  double pcie_bytes_per_step = 0;   // per request per decode step, H2D misses + D2H backup, all layers
  double attended_rows = 0;         // rows attention reads per layer per step
  double indexed_rows = 0;          // keys the indexer scores per layer per step
  double reconstruct_bytes_per_step = 0;  // per request per step, all layers (compression only)
  int64_t hbm_limit_per_rank = -1;  // −1: not computed (the plan's rows have their full limit set)
  int64_t slo_limit_per_rank = -1;
  int64_t max_per_rank = 0;
  int64_t max_concurrency = 0;      // per instance
  std::string binding_limit;
  double tpot_ms = 0;               // at max_per_rank
  double decode_tokens_per_s = 0;   // per instance at max_per_rank
  std::string hbm_formula;
  StrategyRecall recall;
};

struct StrategyTable {
  StrategyOptions options;
  int64_t eviction_budget = 0;      // E as used
  double reconstruct_bytes = 0;     // per compressed row attended per layer, as used
  bool reconstruct_assumed = true;
  std::string reconstruct_label;    // "assumed: …" | "calibrated: <file> …" | "--reconstruct-bytes"
  std::string recall_source;        // the file, or "none"
  std::vector<StrategyRow> rows;    // per seq_len of the plan: full, hisparse, eviction, masking, compression
  std::vector<std::string> notes;
};

/// The five strategy keys in report order.
const std::vector<std::string>& strategy_keys();

/// Recall per strategy key from a select.json text (`source` names it in messages); `top_k` / `eviction_budget` pick the
/// rows (layer "all"). An empty `json` gives "not measured" for every strategy but full KV.
StrategyRecall strategy_recall(const std::string& key, const std::string& json, const std::string& source,
                               int64_t top_k, int64_t eviction_budget, int64_t recall_top_k);

/// The table for every sequence length of `plan` (which must have been computed with `options`'s cost terms).
StrategyTable compute_cache_strategies(const CapacityPlan& plan, const StrategyOptions& options);

/// The stdout section (`hisparse plan --strategies`).
std::string strategies_to_text(const StrategyTable& t);
/// plan.json member `strategies`: writes the object as the next value of `j`; plan.md/html: sim/plan/plan_document.cpp.
void strategies_to_json(JsonWriter& j, const StrategyTable& t);

}  // namespace hisparse::sim
