// @brief CPU-only build: `replay --backend cuda` says that no CUDA backend was built.
#include "core/error.h"
#include "cuda/replay_swap_in.h"
#include "cuda/runtime.h"

namespace hisparse::cuda {

struct ReplaySwapIn::Impl {};

ReplaySwapIn::ReplaySwapIn(int32_t, int32_t, const std::vector<int32_t>&, int32_t) {
  std::string why;
  cuda_available(&why);
  throw_error("replay --backend cuda: no usable GPU: {}", why);
}
ReplaySwapIn::~ReplaySwapIn() = default;
// Unreachable: the constructor always throws.
int32_t* ReplaySwapIn::selected(int32_t) { return nullptr; }
int32_t* ReplaySwapIn::seq_len(int32_t) { return nullptr; }
int8_t* ReplaySwapIn::init(int32_t) { return nullptr; }
void ReplaySwapIn::submit(int32_t, bool) {}
void ReplaySwapIn::wait(int32_t) {}
const int64_t* ReplaySwapIn::counters(int32_t, size_t) const { return nullptr; }
const int32_t* ReplaySwapIn::errors(int32_t, size_t) const { return nullptr; }
double ReplaySwapIn::kernel_seconds() const { return 0; }
size_t ReplaySwapIn::staging_bytes() const { return 0; }

}  // namespace hisparse::cuda
