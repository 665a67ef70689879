// @brief Device discovery for the CUDA backend.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <fstream>
#include <string>

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

std::string driver_version() {
  if (!cuda_available()) return "";
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || cudaRuntimeGetVersion(&runtime) != cudaSuccess) return "";
  // The kernel module's version ("580.159.04"): the first dotted number after "Module" in the proc file.
  std::string module;
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string word;
  bool after_module = false;
  while (proc >> word) {
    if (word == "Module") after_module = true;
    const bool dotted = word.find('.') != std::string::npos &&
                        word.find_first_not_of("0123456789.") == std::string::npos;
    if (after_module && dotted) {
      module = word + ", ";
      break;
    }
  }
  return module + "driver CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", runtime " +
         std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
}

int sm_count() {
  if (!cuda_available()) return 0;
  int sms = 0;
  return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess ? sms : 0;
}

std::string driver_load_status() {
  // The name the static runtime itself opens; loaded and closed again, so nothing stays mapped.
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return std::string("the CUDA driver cannot be loaded here: ") + (err ? err : "libcuda.so.1 not found");
  }
  dlclose(lib);
  return "the CUDA driver (libcuda.so.1) loads";
}

}  // namespace hisparse::cuda
