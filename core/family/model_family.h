// @brief ModelFamily: what one attention family (MLA + DSA, GQA + sliding window, DeepSeek-V4, ...) means to the
// budget, the pool checks and the step model, as one policy type (after CUTLASS's policies: the algorithm is written
// once, the family supplies its shapes). Each family is one file in core/family/; core/family/family_registry.cpp is
// the only place a family is named by string. docs/families.md shows how to add one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory_budget.h"

namespace hisparse {

/// Which per-layer terms the step model prices (sim/cost/step/decode_cost_model*.cpp).
enum class LayerPricing {
  kMlaLatent,   // MLA: q/kv projections, indexer scoring + top-k where the model has DSA, attention over latent rows
  kGqaKv,       // GQA / MHA: QKV and O projections, attention over K + V rows (window-capped on sliding layers)
  kCompressed,  // DeepSeek-V4: window attention, C4 indexer + top-k + sparse attention, C128 dense attention
};

/// What HiSparse moves between host and device for one model (nothing where `applies` is false).
struct OffloadShape {
  bool applies = false;              // HiSparse's device / logical / host pools exist (a sparse indexer selects)
  int layers = 0;                    // layers whose rows move (DeepSeek-V4: its C4 layers)
  int tokens_per_row = 1;            // tokens one moved row covers (DeepSeek-V4's C4 entry: 4)
  const char* unit = "tokens";       // what the device pool counts: "tokens" or "entries"
  const char* device_pool = "device";  // the device pool's name in messages
  // The indexer keys of every logical token stay on the GPU (MLA + DSA: SGLang's HiSparse cell multiplies the
  // indexer term by host_to_device_ratio, PR #28752), so an engine without that rule can over-size the pool.
  bool indexer_per_logical_token = false;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  // ---- identity
  /// The registry's key (family_registry.cpp; a model YAML's `family:` names it).
  virtual const char* name() const = 0;
  /// The attention the pools hold, as info / plan print it ("gqa" for Double Sparsity: its K and V are GQA's).
  virtual const char* attention_label() const { return name(); }
  /// Whether this family describes the scenario's model; the registry asks the families in its order.
  virtual bool claims(const Scenario& s) const = 0;

  // ---- per-token and per-request footprint, pool layout
  /// The pools SGLang allocates for this family and the requests of each length they hold (core/memory_budget.h).
  virtual MemoryBudget budget(const Scenario& s, const std::vector<int64_t>& seq_lens) const = 0;
  /// The budget's scalar figures in print order.
  virtual std::vector<const Figure*> figures(const MemoryBudget& b) const = 0;
  /// Bytes per token per layer of the cache the attention reads (MLA latent row, GQA K + V row of one GPU).
  virtual int64_t kv_row_bytes(const Scenario& s) const = 0;
  /// The row's name inside formulas ("latent_row_bytes", "kv_row").
  virtual const char* kv_row_name() const = 0;
  /// Whether the budget holds DeepSeek-V4's compressed pools (C4 entries, C128 states, a window pool every layer)
  /// rather than pools of whole tokens.
  virtual bool compressed_pools() const { return false; }
  /// Whether plan lists every pool figure of the budget (true) or the HiSparse pool table (false, token-pool MLA).
  virtual bool lists_every_pool_figure() const { return true; }

  // ---- offload shape
  virtual OffloadShape offload(const ModelSpec&) const { return {}; }
  /// Whether the planner evaluates dynamic residency (a pool of whole tokens the step model can split).
  virtual bool dynamic_residency() const { return true; }

  // ---- what the step model prices per layer
  virtual LayerPricing layer_pricing() const = 0;
  /// Tokens a windowed layer attends (0 = no windowed layers).
  virtual int attention_window(const ModelSpec&) const { return 0; }
  /// Whether SGLang's per-op tables (timed on its MLA kernels) price this family's layer.
  virtual bool op_tables_apply() const { return false; }
};

}  // namespace hisparse
