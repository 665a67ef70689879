// @brief GQA with sliding-window layers (gpt-oss, Gemma): SGLang's SWAKVPool, a full-attention pool and a sliding
// pool of swa_full_tokens_ratio × its size; a sliding layer keeps at most window + page tokens of a request.
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class GqaSwaFamily : public GqaPoolFamily {
 public:
  const char* name() const override { return "gqa+swa"; }
  bool claims(const Scenario& s) const override { return s.model.is_gqa() && s.model.sliding_layer_count() > 0; }
};

}  // namespace

std::unique_ptr<ModelFamily> make_gqa_swa_family() { return std::make_unique<GqaSwaFamily>(); }

}  // namespace hisparse
