// @brief DeltaKV reconstruction on the CPU: the arithmetic of core/numerics/deltakv_args.h, row by row.
#include "cpu_ref/deltakv.h"

namespace hisparse::cpu_ref {

void deltakv_reconstruct(const DeltaKvArgs& a) {
  check_deltakv_args(a);
  for (int64_t r = 0; r < a.rows; ++r) {
    const int32_t* idx = a.ref_index + r * a.refs;
    const float scale = a.residual_scale[r];
    for (int64_t d = 0; d < a.dim; ++d)
      a.out[r * a.dim + d] = num::deltakv_element(a.ref_pool, a.dim, idx, a.refs, a.residual[r * a.dim + d], scale, d);
  }
}

}  // namespace hisparse::cpu_ref
