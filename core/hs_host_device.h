// @brief HS_HOST_DEVICE marks code both backends run: __host__ __device__ under nvcc, plain inline under g++.
#pragma once

#if defined(__CUDACC__)
#define HS_HOST_DEVICE __host__ __device__ __forceinline__
#define HS_DEVICE_COMPILE 1
#else
#define HS_HOST_DEVICE inline
#define HS_DEVICE_COMPILE 0
#endif
