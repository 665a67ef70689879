// @brief MLA without a sparse indexer (DeepSeek-V3, Kimi K2): the latent row alone; every token is attended, so
// HiSparse does not apply and the budget holds only SGLang's token pool.
#include "core/family/family_bases.h"

namespace hisparse {
namespace {

class MlaFamily : public MlaPoolFamily {
 public:
  const char* name() const override { return "mla"; }
  bool claims(const Scenario& s) const override { return !s.model.is_gqa() && !s.model.is_compressed(); }
};

}  // namespace

std::unique_ptr<ModelFamily> make_mla_family() { return std::make_unique<MlaFamily>(); }

}  // namespace hisparse
