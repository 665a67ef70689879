// @brief SGLang's Double Sparsity on a GQA / MHA model (deployment double_sparsity:): DoubleSparseTokenToKVPool, K
// and V as MHATokenToKVPool plus a label cache of heavy_channel_num channels per KV head; the K and V are GQA's, so
// it prints as "gqa".
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class DoubleSparseFamily : public GqaPoolFamily {
 public:
  const char* name() const override { return "gqa+double-sparsity"; }
  const char* attention_label() const override { return "gqa"; }
  bool claims(const Scenario& s) const override {
    return s.model.is_gqa() && s.deployment.double_sparsity.enabled;
  }
};

}  // namespace

std::unique_ptr<ModelFamily> make_double_sparse_family() { return std::make_unique<DoubleSparseFamily>(); }

}  // namespace hisparse
