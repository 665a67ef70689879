// @brief GQA / MHA (Llama, Qwen3): K and V of the KV heads one GPU holds, every layer full attention (SGLang's
// MHATokenToKVPool); no sparse indexer, so HiSparse does not apply.
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class GqaFamily : public GqaPoolFamily {
 public:
  const char* name() const override { return "gqa"; }
  bool claims(const Scenario& s) const override { return s.model.is_gqa(); }
};

}  // namespace

std::unique_ptr<ModelFamily> make_gqa_family() { return std::make_unique<GqaFamily>(); }

}  // namespace hisparse
