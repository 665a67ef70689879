// @brief Turns every failed CUDA call into a hisparse::Error naming the call and where it was made.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

#define HS_CUDA_CHECK(call)                                                                           \
  do {                                                                                                \
    const cudaError_t hs_err_ = (call);                                                               \
    if (hs_err_ != cudaSuccess)                                                                       \
      ::hisparse::throw_error("CUDA call {} failed at {}:{}: {}", #call, __FILE__, __LINE__,          \
                              cudaGetErrorString(hs_err_));                                           \
  } while (0)

/// After a launch: a bad configuration shows up here, an error inside the kernel at the next synchronisation.
#define HS_CUDA_CHECK_LAUNCH() HS_CUDA_CHECK(cudaGetLastError())
