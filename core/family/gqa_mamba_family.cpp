// @brief Hybrid GQA + linear attention (Qwen3-Next's Gated DeltaNet): SGLang's HybridLinearKVPool holds K and V of
// the full-attention layers only, MambaPool one conv + SSM state per request slot for every linear layer (the slots
// cap the running requests at a third of them).
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class GqaMambaFamily : public GqaPoolFamily {
 public:
  const char* name() const override { return "gqa+mamba"; }
  bool claims(const Scenario& s) const override { return s.model.is_gqa() && s.model.has_linear_attention(); }
};

}  // namespace

std::unique_ptr<ModelFamily> make_gqa_mamba_family() { return std::make_unique<GqaMambaFamily>(); }

}  // namespace hisparse
