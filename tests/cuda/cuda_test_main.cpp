// @brief Entry point of test_cuda: without a usable CUDA device (CI, CPU-only builds) the whole binary reports
// itself SKIPPED to CTest (exit code 77, the test's SKIP_RETURN_CODE) instead of passing with nothing run;
// scripts/gpu_check.sh treats that exit code as a failure.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "cuda/runtime.h"

int main(int argc, char** argv) {
  std::string why;
  if (!hisparse::cuda::cuda_available(&why)) {
    std::printf("SKIPPED: no usable CUDA device (%s); the CUDA tests run on a GPU machine (scripts/gpu_check.sh)\n",
                why.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
