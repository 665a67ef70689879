// @brief LayerFuture: the recorded future of one (request, layer), as next-use steps, for offline policies (belady).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace hisparse::cpu_ref {

/// For every step j and entry i of one layer's recorded selections: the next step > j at which the same position
/// is selected again *as a slot user*, i.e. on a slow-path step (n > H) and not as that step's newest token
/// (those are served by the reserved slot and need no buffer slot). kNever if it is not.
struct LayerFuture {
  static constexpr int32_t kNever = std::numeric_limits<int32_t>::max();

  int32_t H = 0;                      // buffer size the future was computed for (decides the fast path)
  std::vector<int64_t> step_begin;    // [steps + 1] offset of each step's entries in next_use
  std::vector<int32_t> next_use;      // [sum of counts] next use of entry i of step j, kNever if none
  // First slow-path slot use of each position, or kNever. Dense (first_use_keys empty): first_use[position], for
  // positions 0..max position. Sparse, when the positions span more than twice the entries recorded (a few steps at
  // a long context): first_use[k] belongs to position first_use_keys[k] (ascending, distinct). Either way its
  // memory is O(sum of counts), not O(sequence length).
  std::vector<int32_t> first_use;
  std::vector<int32_t> first_use_keys;

  int64_t steps() const { return static_cast<int64_t>(step_begin.size()) - 1; }
  /// First slot use of `token` (kNever for positions never used or beyond first_use).
  int32_t first_use_of(int32_t token) const {
    if (first_use_keys.empty())
      return token >= 0 && static_cast<size_t>(token) < first_use.size() ? first_use[token] : kNever;
    const auto it = std::lower_bound(first_use_keys.begin(), first_use_keys.end(), token);
    return it != first_use_keys.end() && *it == token ? first_use[static_cast<size_t>(it - first_use_keys.begin())]
                                                      : kNever;
  }
};

/// Builds the future from one layer's steps: selections[j] points to counts[j] positions (-1 = padding), ns[j]
/// is the sequence length. Positions are assumed valid (the step itself validates them when it runs).
LayerFuture build_layer_future(const std::vector<const int32_t*>& selections, const std::vector<int32_t>& counts,
                               const std::vector<int32_t>& ns, int32_t H);

}  // namespace hisparse::cpu_ref
