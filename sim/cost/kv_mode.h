// @brief KvMode: whether a decode step reads the full KV cache from HBM or runs HiSparse's device buffer over a host
// pool. The step estimate, the planner, the serving simulation and the advisor all take it, so it lives with the cost.
#pragma once

namespace hisparse::sim {

enum class KvMode { kFull, kHiSparse };
inline const char* to_string(KvMode mode) { return mode == KvMode::kFull ? "full" : "hisparse"; }

}  // namespace hisparse::sim
