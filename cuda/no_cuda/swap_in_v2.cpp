// @brief CPU-only build: the V2 swap-in launcher exists so callers link, and says the build has no CUDA.
#include "core/error.h"
#include "cuda/swap_in_v2.h"

namespace hisparse::cuda {

void swap_in_v2(const SwapInV2Batch&) {
  throw_error("cuda swap_in_v2: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)");
}

}  // namespace hisparse::cuda
