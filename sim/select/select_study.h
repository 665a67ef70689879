// @brief The selection study behind `hisparse select` (docs/selection.md): from recorded keys and decode queries, the
// top-k lists of every selector, their recall of the oracle's attention mass, their adjacent-step overlap, and the
// swap-in misses / PCIe bytes of those lists replayed through sglang-lru (sim/replay/replay_engine.h) at H = m·K; at
// token and at page granularity (pages of P tokens, replayed as page traces, traces/page_trace_source.h), with one
// list per layer (shared by the KV heads) and, with per_kv_head, one per (layer, KV head).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
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
  int32_t page_size = 16;               // Quest's page at token granularity (Quest, Tang et al. 2024: 16-token pages)
  bool token_granularity = true;        // the token-level rows
  std::vector<int32_t> page_sizes;      // page granularity: every selector picks K/P pages of P tokens, for each P
  bool per_kv_head = false;             // also one selection and one buffer per (layer, KV head)
  int32_t sinks = 4;                    // StreamingLLM keeps 4 initial tokens (Xiao et al. 2023)
  int32_t clusters = 256;               // ClusterKV centroids per KV head (see docs/selection.md for the choice)
  int32_t kmeans_iters = 20;            // Lloyd iterations at most (stops earlier when no assignment changes)
  uint64_t seed = 1;
  int32_t indexer_dims = 16;            // stand-in indexer: key dims kept per KV head (a quarter of head_dim 64)
  int32_t indexer_heads_per_group = 1;  // stand-in indexer: query heads per GQA group
  int32_t ds_channels = 16;             // double-sparse: heavy channels per KV head (SGLang's default 32 of head_dim
                                        // 128 is a quarter; the same quarter of head_dim 64)
  int64_t row_bytes = 0;                // bytes per KV row per layer; 0: K and V in fp16 = 2 * kv_heads * head_dim * 2
  int32_t max_steps = 0;                // 0: every step
  int threads = 1;
  InitialState initial_state = InitialState::kIdentity;  // as the recorded SmolLM2 traces declare
};

/// The selectors `hisparse select` knows, in report order.
const std::vector<std::string>& selector_names();

struct BufferStats {
  int32_t buffer_size = 0;  // H in the replayed unit: tokens, or pages for a page row
  int32_t buffer_tokens = 0;  // H in tokens
  int64_t selected = 0, misses = 0, h2d_bytes = 0;
  int64_t step_layers = 0;  // steps x layers (a per-KV-head row sums its heads' misses into each step-layer)
  double hit_rate() const { return selected ? 1.0 - static_cast<double>(misses) / static_cast<double>(selected) : 0.0; }
  double misses_per_step_layer() const { return step_layers ? static_cast<double>(misses) / static_cast<double>(step_layers) : 0.0; }
};

struct StudyRow {
  std::string selector;
  int32_t top_k = 0;
  int32_t layer = -1;  // model layer id; -1 = every recorded layer together
  int32_t page_size = 0;     // 0: token granularity; P: K/P pages of P tokens, replayed in pages
  bool per_kv_head = false;  // one list and one buffer per (layer, KV head)
  int64_t unit_bytes = 0;    // bytes one miss moves: a token's or a page's K and V (of one KV head when per_kv_head)
  int64_t step_layers = 0;
  // Shared: mass(S) / mass(token oracle top-K). Per KV head: mean over heads g of mass_g(S_g) / mass_g(oracle_g top-K),
  // mass_g the attention of g's query heads. Mean over step-layers.
  double recall = 0;
  double mass_share = 0;  // mean over step-layers of (attention mass kept, summed over heads) / q_heads
  double overlap = 0;     // mean over steps >= 1 of |S_t ∩ S_t-1| / |S_t| in tokens covered (per KV head: mean of heads)
  double tokens = 0;      // mean tokens a list covers (<= K; a page list's partial newest page covers fewer)
  // Modelled bytes read per step-layer (all KV heads): what the selector reads to score (selector_score_bytes, at the
  // mean over steps), and that plus the selected tokens' K and V (tokens × row_bytes).
  double score_bytes = 0;
  double read_bytes = 0;
  double page_recall = -1;  // page rows: as recall, against the page oracle (the K/P pages of most mass); -1: token row
  std::vector<double> group_recall;  // with per_kv_head: per KV head g, mean of mass_g(list of g) / mass_g(oracle_g)
  std::vector<BufferStats> buffers;  // one per H
};

struct StudyResult {
  std::string source;
  std::vector<int32_t> layer_ids;
  int32_t steps = 0, prefill = 0, n_first = 0, n_last = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t row_bytes = 0;
  StudyOptions options;
  /// Granularity-major (token, then each page size), shared before per-KV-head, then selector, K, "all" first and
  /// each layer: the first row of a (selector, K, "all") is the token-level shared one (what plan --recall-from reads).
  std::vector<StudyRow> rows;
  /// The lists of every (selector, K, page size, per KV head) as token trace records (one request, id 0; per KV head:
  /// layers x kv_heads lists, layer-major), for writing native traces. A page row's lists hold the pages' positions.
  struct TraceKey {
    std::string selector;
    int32_t top_k = 0, page_size = 0;
    bool per_kv_head = false;
    bool operator<(const TraceKey& o) const {
      return std::tie(selector, top_k, page_size, per_kv_head) < std::tie(o.selector, o.top_k, o.page_size, o.per_kv_head);
    }
    std::string file_name() const;  // <selector>_k<K>[_p<P>][_kvh].hstr
  };
  std::map<TraceKey, std::vector<traces::StepRecord>> traces;
  traces::TraceMeta trace_meta(int32_t top_k, bool per_kv_head = false) const;
  double seconds = 0;
};

/// `layers_done` (may be empty) hears how many layers are finished, after each, one call at a time.
StudyResult run_study(const KqData& data, const StudyOptions& options,
                      const std::function<void(int64_t)>& layers_done = {});

std::string study_json(const StudyResult& r);
std::string study_csv(const StudyResult& r);
/// The stdout table: per K, every row over all layers, then per layer (and, with per_kv_head, each group's recall).
std::string study_table(const StudyResult& r);
/// select.md: the all-layer rows per K as Markdown tables.
std::string study_markdown(const StudyResult& r);

}  // namespace hisparse::sim::select
