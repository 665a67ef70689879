// @brief Next-use computation for offline policies: one reverse scan over a layer's recorded steps.
#include "cpu_ref/policies/layer_future.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::cpu_ref {

LayerFuture build_layer_future(const std::vector<const int32_t*>& selections, const std::vector<int32_t>& counts,
                               const std::vector<int32_t>& ns, int32_t H) {
  if (selections.size() != counts.size() || counts.size() != ns.size()) {
    throw_error("build_layer_future: {} selections, {} counts and {} sequence lengths; expected equal sizes",
                selections.size(), counts.size(), ns.size());
  }
  LayerFuture f;
  f.H = H;
  const size_t steps = counts.size();
  f.step_begin.resize(steps + 1);
  f.step_begin[0] = 0;
  int32_t max_pos = -1;
  for (size_t j = 0; j < steps; ++j) {
    f.step_begin[j + 1] = f.step_begin[j] + counts[j];
    for (int32_t i = 0; i < counts[j]; ++i) max_pos = std::max(max_pos, selections[j][i]);
  }
  f.next_use.assign(static_cast<size_t>(f.step_begin[steps]), LayerFuture::kNever);
  // After the reverse scan, "the next use after step j" of every position is in `upcoming`: that is first_use.
  std::vector<int32_t>& upcoming = f.first_use;
  upcoming.assign(static_cast<size_t>(max_pos + 1), LayerFuture::kNever);
  for (size_t jj = steps; jj-- > 0;) {
    const int32_t* sel = selections[jj];
    const int32_t n = ns[jj];
    const bool uses_slots = n > H;
    int32_t* nu = f.next_use.data() + f.step_begin[jj];
    for (int32_t i = 0; i < counts[jj]; ++i) {
      const int32_t t = sel[i];
      if (t < 0 || t > max_pos) continue;
      nu[i] = upcoming[t];
    }
    if (!uses_slots) continue;
    for (int32_t i = 0; i < counts[jj]; ++i) {
      const int32_t t = sel[i];
      if (t < 0 || t > max_pos || t == n - 1) continue;
      upcoming[t] = static_cast<int32_t>(jj);
    }
  }
  return f;
}

}  // namespace hisparse::cpu_ref
