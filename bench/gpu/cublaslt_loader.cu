// @brief Loads cuBLASLt on first use (see cublaslt_loader.h): by its soname through the dynamic loader's search
// (LD_LIBRARY_PATH, ld.so.cache), then from the CUDA toolkit the build used (HISPARSE_CUBLASLT_PATH, set by CMake).
#include <dlfcn.h>

#include <string>
#include <vector>

#include "bench/gpu/cublaslt_loader.h"
#include "core/error.h"

namespace hisparse::bench {
namespace {

template <typename Fn>
void resolve(void* lib, const std::string& path, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) throw_error("cuBLASLt at {} has no symbol {} (a cuBLASLt older than the headers this build used?)", path, name);
}

CublasLt load() {
  const std::vector<std::string> tries = {HISPARSE_CUBLASLT_SONAME, HISPARSE_CUBLASLT_PATH};
  std::string why;
  for (const std::string& path : tries) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = dlerror();
      why += "\n  " + path + ": " + (err ? err : "not loadable");
      continue;
    }
    CublasLt api;
    api.path = path;
    resolve(lib, path, "cublasLtCreate", api.Create);
    resolve(lib, path, "cublasLtDestroy", api.Destroy);
    resolve(lib, path, "cublasLtMatmul", api.Matmul);
    resolve(lib, path, "cublasLtMatmulAlgoGetHeuristic", api.MatmulAlgoGetHeuristic);
    resolve(lib, path, "cublasLtMatmulDescCreate", api.MatmulDescCreate);
    resolve(lib, path, "cublasLtMatmulDescDestroy", api.MatmulDescDestroy);
    resolve(lib, path, "cublasLtMatmulDescSetAttribute", api.MatmulDescSetAttribute);
    resolve(lib, path, "cublasLtMatmulPreferenceCreate", api.MatmulPreferenceCreate);
    resolve(lib, path, "cublasLtMatmulPreferenceDestroy", api.MatmulPreferenceDestroy);
    resolve(lib, path, "cublasLtMatmulPreferenceSetAttribute", api.MatmulPreferenceSetAttribute);
    resolve(lib, path, "cublasLtMatrixLayoutCreate", api.MatrixLayoutCreate);
    resolve(lib, path, "cublasLtMatrixLayoutDestroy", api.MatrixLayoutDestroy);
    resolve(lib, path, "cublasLtMatrixLayoutSetAttribute", api.MatrixLayoutSetAttribute);
    return api;  // the library stays loaded for the life of the process
  }
  throw_error("bench step needs cuBLASLt for its GEMMs and could not load it; tried:{}\n(install the CUDA toolkit's "
              "cuBLAS, or put the directory holding {} on LD_LIBRARY_PATH)", why, HISPARSE_CUBLASLT_SONAME);
}

}  // namespace

const CublasLt& cublaslt() {
  static const CublasLt api = load();  // a failed load throws and is tried again by the next call
  return api;
}

}  // namespace hisparse::bench
