// @brief MLA + DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): one latent row and one indexer key per token per
// layer; the family HiSparse was written for (it offloads the latent rows the indexer selects).
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class MlaDsaFamily : public MlaPoolFamily {
 public:
  const char* name() const override { return "mla+dsa"; }
  bool claims(const Scenario& s) const override {
    return !s.model.is_gqa() && !s.model.is_compressed() && s.model.has_sparse_indexer();
  }
  OffloadShape offload(const ModelSpec& m) const override {
    OffloadShape o;
    o.applies = true;
    o.layers = m.layers;
    o.indexer_per_logical_token = true;
    return o;
  }
};

}  // namespace

std::unique_ptr<ModelFamily> make_mla_dsa_family() { return std::make_unique<MlaDsaFamily>(); }

}  // namespace hisparse
