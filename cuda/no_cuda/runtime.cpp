// @brief CPU-only build: the CUDA backend was not compiled, and says so.
#include "cuda/runtime.h"

namespace hisparse::cuda {

bool cuda_available(std::string* why) {
  if (why) *why = "this build has no CUDA backend (configured without nvcc or with -DHISPARSE_CUDA=OFF)";
  return false;
}

std::string device_name() { return ""; }
std::string driver_version() { return ""; }
int sm_count() { return 0; }
std::string driver_load_status() { return ""; }

}  // namespace hisparse::cuda
