// @brief Device discovery for the CUDA backend.
#include <cuda_runtime.h>

#include "cuda/runtime.h"

namespace hisparse::cuda {

bool cuda_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why) *why = err != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(err) : "no CUDA device found";
    return false;
  }
  return true;
}

std::string device_name() {
  if (!cuda_available()) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  return prop.name;
}

}  // namespace hisparse::cuda
