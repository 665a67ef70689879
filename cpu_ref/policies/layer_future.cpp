// @brief Next-use computation for offline policies: one reverse scan over a layer's recorded steps.
#include "cpu_ref/policies/layer_future.h"

#include <algorithm>

#include "core/error.h"
#include "cpu_ref/swap_in.h"

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
  int64_t entries = 0;
  for (size_t j = 0; j < steps; ++j) {
    f.step_begin[j + 1] = f.step_begin[j] + counts[j];
    for (int32_t i = 0; i < counts[j]; ++i) max_pos = std::max(max_pos, selections[j][i]);
    entries += counts[j];
  }
  f.next_use.assign(static_cast<size_t>(f.step_begin[steps]), LayerFuture::kNever);
  // Each entry's position gets a dense index: the position itself when the positions are no sparser than the
  // entries (the usual case), else the order of its first appearance, through a hash table sized by the entries
  // (a few steps at a long context: O(entries) memory instead of O(largest position)).
  const bool dense = int64_t{max_pos} + 1 <= std::max<int64_t>(2 * entries, 4096);
  std::vector<int32_t> ids;       // sparse: [entries] dense index of each entry's position, -1 for padding
  std::vector<int32_t> id_key;    // sparse: [distinct positions] position of each dense index
  if (!dense) {
    const size_t n_entries = static_cast<size_t>(entries);
    size_t home = 16;
    uint32_t bits = 4;
    while (home < 4 * n_entries) {
      home *= 2;
      ++bits;
    }
    std::vector<uint64_t> cells(home + n_entries + 2, HashedPositionTable::kEmpty);
    std::vector<uint32_t> filled(n_entries);
    HashedPositionTable table{cells.data(), 32 - bits, filled.data(), 0};
    ids.resize(n_entries);
    size_t e = 0;
    for (size_t j = 0; j < steps; ++j) {
      for (int32_t i = 0; i < counts[j]; ++i, ++e) {
        const int32_t t = selections[j][i];
        if (t < 0) {
          ids[e] = -1;
          continue;
        }
        const int32_t id = static_cast<int32_t>(id_key.size());
        const int32_t known = table.mark(t, id);
        ids[e] = known >= 0 ? known : id;
        if (known < 0) id_key.push_back(t);
      }
    }
  }
  // After the reverse scan, "the next use after step j" of every position is in `upcoming`: that is first_use.
  std::vector<int32_t> upcoming(dense ? static_cast<size_t>(max_pos + 1) : id_key.size(), LayerFuture::kNever);
  for (size_t jj = steps; jj-- > 0;) {
    const int32_t* sel = selections[jj];
    const int32_t n = ns[jj];
    const bool uses_slots = n > H;
    int32_t* nu = f.next_use.data() + f.step_begin[jj];
    const int32_t* id = dense ? nullptr : ids.data() + f.step_begin[jj];
    for (int32_t i = 0; i < counts[jj]; ++i) {
      const int32_t t = sel[i];
      if (t < 0 || t > max_pos) continue;
      nu[i] = upcoming[dense ? static_cast<size_t>(t) : static_cast<size_t>(id[i])];
    }
    if (!uses_slots) continue;
    for (int32_t i = 0; i < counts[jj]; ++i) {
      const int32_t t = sel[i];
      if (t < 0 || t > max_pos || t == n - 1) continue;
      upcoming[dense ? static_cast<size_t>(t) : static_cast<size_t>(id[i])] = static_cast<int32_t>(jj);
    }
  }
  if (dense) {
    f.first_use = std::move(upcoming);
  } else {
    // Sparse: first uses sorted by position, for first_use_of's binary search.
    std::vector<int32_t> order(id_key.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
    std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return id_key[x] < id_key[y]; });
    f.first_use_keys.resize(order.size());
    f.first_use.resize(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      f.first_use_keys[k] = id_key[static_cast<size_t>(order[k])];
      f.first_use[k] = upcoming[static_cast<size_t>(order[k])];
    }
  }
  return f;
}

}  // namespace hisparse::cpu_ref
