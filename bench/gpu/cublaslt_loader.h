// @brief cuBLASLt, loaded on first use: only `bench step` (and `bench --calibrate`, which runs it) calls cuBLASLt, and
// linking it made every command pay for it (issue 40: `hisparse --version` took 0.10-0.14 s and 217 MB of resident
// memory, most of it libcublasLt's relocations and start-up). The library is dlopen'ed by the first call of cublaslt().
#pragma once

#include <cublasLt.h>

#include <string>

namespace hisparse::bench {

/// The cuBLASLt entry points the step benchmark calls, resolved from the loaded library (the types are cublasLt.h's).
struct CublasLt {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtDestroy) Destroy;
  decltype(&::cublasLtMatmul) Matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
  std::string path;  // the file it was loaded from
};

/// Loads cuBLASLt once (thread-safe) and returns its entry points; throws hisparse::Error naming every place tried
/// and the loader's reason when it cannot be loaded or lacks one of them.
const CublasLt& cublaslt();

}  // namespace hisparse::bench
