// @brief The selection study behind `hisparse select` (docs/selection.md): from recorded keys and decode queries, the
// top-k lists of every selector, their recall of the oracle's attention mass, their adjacent-step overlap, and the
// swap-in misses / PCIe bytes of those lists replayed through sglang-lru (sim/replay/replay_engine.h) at H = m·K.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/swap_in_types.h"
#include "traces/trace_source.h"

namespace hisparse::sim::select {

/// Keys and queries of one request (traces/real/README.md, "Keys and queries").
struct KqData {
  std::string source;
  int32_t layers = 0, n_keys = 0, kv_heads = 0, head_dim = 0, steps = 0, q_heads = 0;
  float scaling = 0;
  std::vector<int32_t> layer_ids;  // model layer of each recorded layer (0..layers-1 when the file has no `layers`)
  std::vector<float> keys;         // [layers][n_keys][kv_heads][head_dim]
  std::vector<float> queries;      // [steps][layers][q_heads][head_dim]
  std::vector<int32_t> seq_lens;   // [steps]: n at each step; the query is position n-1
  /// Positions before the first decoded token: the prompt (k-means and the indexer's dims are built from them).
  int32_t prefill() const { return seq_lens.empty() ? 0 : seq_lens[0] - 1; }
};

/// Reads `keys`, `queries`, `seq_lens`, `scaling` (and optional `layers`) from an `.npz` or a directory of `.npy`
/// files, and checks every shape against the others; errors name the file, the array and its shape.
KqData load_kq(const std::string& path);

struct StudyOptions {
  std::vector<std::string> selectors;   // of selector_names()
  std::vector<int32_t> top_ks;          // K values
  std::vector<int32_t> buffer_multiples;  // H = m * K for each m
  int32_t page_size = 16;               // Quest's page (Quest, Tang et al. 2024, evaluates 16-token pages)
  int32_t sinks = 4;                    // StreamingLLM keeps 4 initial tokens (Xiao et al. 2023)
  int32_t clusters = 256;               // ClusterKV centroids per KV head (see docs/selection.md for the choice)
  int32_t kmeans_iters = 20;            // Lloyd iterations at most (stops earlier when no assignment changes)
  uint64_t seed = 1;
  int32_t indexer_dims = 16;            // stand-in indexer: key dims kept per KV head (a quarter of head_dim 64)
  int32_t indexer_heads_per_group = 1;  // stand-in indexer: query heads per GQA group
  int64_t row_bytes = 0;                // bytes per KV row per layer; 0: K and V in fp16 = 2 * kv_heads * head_dim * 2
  int32_t max_steps = 0;                // 0: every step
  int threads = 1;
  InitialState initial_state = InitialState::kIdentity;  // as the recorded SmolLM2 traces declare
};

/// The selectors `hisparse select` knows, in report order.
const std::vector<std::string>& selector_names();

struct BufferStats {
  int32_t buffer_size = 0;
  int64_t selected = 0, misses = 0, h2d_bytes = 0, step_layers = 0;
  double hit_rate() const { return selected ? 1.0 - static_cast<double>(misses) / static_cast<double>(selected) : 0.0; }
  double misses_per_step_layer() const { return step_layers ? static_cast<double>(misses) / static_cast<double>(step_layers) : 0.0; }
};

struct StudyRow {
  std::string selector;
  int32_t top_k = 0;
  int32_t layer = -1;  // model layer id; -1 = every recorded layer together
  int64_t step_layers = 0;
  double recall = 0;      // mean over step-layers of mass(selected) / mass(oracle top-K)
  double mass_share = 0;  // mean over step-layers of mass(selected) / q_heads (the share of all attention)
  double overlap = 0;     // mean over steps >= 1 of |S_t ∩ S_t-1| / |S_t|
  std::vector<BufferStats> buffers;  // one per H
};

struct StudyResult {
  std::string source;
  std::vector<int32_t> layer_ids;
  int32_t steps = 0, prefill = 0, n_first = 0, n_last = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t row_bytes = 0;
  StudyOptions options;
  std::vector<StudyRow> rows;  // selector-major, then K, then "all" first and each layer
  /// The lists of every (selector, K) as trace records (one request, id 0), for writing native traces.
  std::map<std::pair<std::string, int32_t>, std::vector<traces::StepRecord>> traces;
  traces::TraceMeta trace_meta(int32_t top_k) const;
  double seconds = 0;
};

StudyResult run_study(const KqData& data, const StudyOptions& options);

std::string study_json(const StudyResult& r);
std::string study_csv(const StudyResult& r);
/// The stdout table: per K, every selector over all layers, then per layer.
std::string study_table(const StudyResult& r);

}  // namespace hisparse::sim::select
