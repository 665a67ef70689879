// @brief KvMode: whether a decode step reads the full KV cache from HBM, runs HiSparse's device buffer over a host
// pool, or keeps each request's full KV on the GPU until the device pool runs short (dynamic residency, SGLang's
// hisparse_dynamic.py). The step estimate, the planner, the serving simulation and the advisor all take it, so it
// lives with the cost.
#pragma once

namespace hisparse::sim {

enum class KvMode { kFull, kHiSparse, kDynamic };
inline const char* to_string(KvMode mode) {
  return mode == KvMode::kFull ? "full" : mode == KvMode::kHiSparse ? "hisparse" : "dynamic";
}
/// HiSparse's machinery (host pool, per-step backup, device buffer, swap-in kernel): every mode but full KV.
inline bool uses_host_pool(KvMode mode) { return mode != KvMode::kFull; }

}  // namespace hisparse::sim
