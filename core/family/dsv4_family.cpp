// @brief DeepSeek-V4 compressed attention: every layer keeps a sliding window; C4 layers a compressed entry per 4
// tokens (what the indexer selects and HiSparse offloads), C128 layers one per 128 (dense); SGLang's five DSV4 pools
// (core/dsv4_pool_budget.h).
#include "core/dsv4_pool_budget.h"
#include "core/family/model_family.h"

namespace hisparse {
namespace {

class Dsv4Family : public ModelFamily {
 public:
  const char* name() const override { return "dsv4"; }
  bool claims(const Scenario& s) const override { return s.model.is_compressed(); }
  MemoryBudget budget(const Scenario& s, const std::vector<int64_t>& seq_lens) const override {
    return dsv4_memory_budget(s, seq_lens);
  }
  std::vector<const Figure*> figures(const MemoryBudget& b) const override { return dsv4_budget_figures(b); }
  int64_t kv_row_bytes(const Scenario& s) const override {
    return latent_row_bytes(s.model, s.deployment.kv_dtype);
  }
  const char* kv_row_name() const override { return "latent_row_bytes"; }
  bool compressed_pools() const override { return true; }
  OffloadShape offload(const ModelSpec& m) const override {
    OffloadShape o;
    o.applies = true;
    o.layers = m.compressed_layer_count(4);
    o.tokens_per_row = 4;
    o.unit = "entries";
    o.device_pool = "C4 device";
    return o;
  }
  // Dynamic residency counts the C4 device pool in entries: a resident request keeps every C4 entry, a demoted one
  // the buffer of H + page / 4 entries (sim/cost/step/dynamic_residency.h).
  bool dynamic_residency() const override { return true; }
  LayerPricing layer_pricing() const override { return LayerPricing::kCompressed; }
  int attention_window(const ModelSpec& m) const override { return m.window_size; }
};

}  // namespace

std::unique_ptr<ModelFamily> make_dsv4_family() { return std::make_unique<Dsv4Family>(); }

}  // namespace hisparse
