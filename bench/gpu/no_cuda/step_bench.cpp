// @brief CPU-only build: `hisparse bench step` links and says the build has no CUDA.
#include "bench/gpu/step_bench.h"
#include "core/error.h"

namespace hisparse::bench {

std::vector<StepBenchRow> bench_step(const ModelSpec&, const StepBenchOptions&) {
  throw_error("hisparse bench step: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)");
}

}  // namespace hisparse::bench
