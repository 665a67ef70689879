// @brief DeltaKvArgs: reconstruction of DeltaKV-compressed KV rows, and its arithmetic, shared by cpu_ref/ and
// cuda/ (HS_HOST_DEVICE) so both produce the same bits.
//
// A compressed row stores the indices of `refs` full-precision reference rows and a residual (fp8 E4M3 codes with
// one fp32 scale per row: this project's encoding, a 2× compression of a bf16 row before indices and scale).
// Reconstruction (the compression strategy of `plan --strategies`, docs/capacity.md): gather the reference rows,
// take their mean, add the residual. Per output element d, exactly:
//   sum  = 0; for j = 0 .. refs-1 in order: sum = sum + bf16_to_float(ref_pool[ref_index[j]][d])   (fp32 adds)
//   mean = sum / refs                                                              (IEEE division, round to nearest)
//   out  = float_to_bf16(hs_fma(fp8_e4m3_to_float(residual[d]), scale, mean))      (one fused multiply-add)
// NaN is canonicalised by float_to_bf16 (0x7FC0) on both sides.
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"
#include "core/numerics/fp8.h"
#include "core/numerics/scalar_ops.h"

namespace hisparse {

struct DeltaKvArgs {
  int64_t rows = 0;                      // R compressed rows to reconstruct
  int64_t dim = 0;                       // D elements per row (576 for a DeepSeek MLA latent row)
  int32_t refs = 0;                      // reference rows per compressed row (1 .. kDeltaKvMaxRefs)
  const uint16_t* ref_pool = nullptr;    // [pool_rows][D] bf16 bits
  int64_t pool_rows = 0;
  const int32_t* ref_index = nullptr;    // [R][refs] rows of ref_pool
  const uint8_t* residual = nullptr;     // [R][D] fp8 E4M3 codes
  const float* residual_scale = nullptr; // [R]
  uint16_t* out = nullptr;               // [R][D] bf16 bits
};

constexpr int32_t kDeltaKvMaxRefs = 64;

/// Shapes, non-null arrays, reference indices in range (reads ref_index: host pointers). Throws hisparse::Error.
void check_deltakv_args(const DeltaKvArgs& args);

namespace num {
/// Element d of compressed row r (the order above; `idx` = &ref_index[r * refs]).
HS_HOST_DEVICE uint16_t deltakv_element(const uint16_t* ref_pool, int64_t dim, const int32_t* idx, int32_t refs,
                                        uint8_t residual, float scale, int64_t d) {
  float sum = 0.0f;
  for (int32_t j = 0; j < refs; ++j) sum = sum + bf16_to_float(ref_pool[int64_t(idx[j]) * dim + d]);
  const float mean = sum / float(refs);
  return float_to_bf16(hs_fma(fp8_e4m3_to_float(residual), scale, mean));
}
}  // namespace num

}  // namespace hisparse
