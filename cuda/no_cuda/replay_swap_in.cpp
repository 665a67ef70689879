// @brief CPU-only build: `replay --backend cuda` says that no CUDA backend was built.
#include "core/error.h"
#include "cuda/replay_swap_in.h"
#include "cuda/runtime.h"

namespace hisparse::cuda {

struct ReplaySwapIn::Impl {};

ReplaySwapIn::ReplaySwapIn(int32_t, int32_t, int32_t) {
  std::string why;
  cuda_available(&why);
  throw_error("replay --backend cuda: no usable GPU: {}", why);
}
ReplaySwapIn::~ReplaySwapIn() = default;
void ReplaySwapIn::init_rows(int32_t, int32_t, InitialState) {}
void ReplaySwapIn::upload(const int32_t*, const int32_t*) {}
void ReplaySwapIn::share_input_of(const ReplaySwapIn&) {}
void ReplaySwapIn::step() {}
void ReplaySwapIn::collect(int64_t*, int32_t*) {}
double ReplaySwapIn::kernel_seconds() const { return 0; }

}  // namespace hisparse::cuda
