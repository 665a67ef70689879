// @brief Per-layer delta coding: removed ranks and added positions as gaps, then order and padding if unusual.
#include "traces/native_codec.h"

#include <algorithm>

#include "core/error.h"
#include "traces/native_format.h"

namespace hisparse::traces {

void encode_layer(const int32_t* row, int32_t width, LayerCoder& coder, std::vector<uint8_t>& out) {
  std::vector<int32_t>& cur = coder.sorted;
  cur.clear();
  bool permuted = false, mixed = false, seen_pad = false;
  for (int32_t i = 0; i < width; ++i) {
    if (row[i] < 0) {
      seen_pad = true;
      continue;
    }
    if (seen_pad) mixed = true;
    if (!cur.empty() && row[i] < cur.back()) permuted = true;
    cur.push_back(row[i]);
  }
  if (permuted) std::sort(cur.begin(), cur.end());

  coder.removed.clear();
  coder.added.clear();
  const std::vector<int32_t>& prev = coder.prev;
  size_t i = 0, j = 0;
  while (i < prev.size() || j < cur.size()) {
    if (j == cur.size() || (i < prev.size() && prev[i] < cur[j])) {
      coder.removed.push_back(static_cast<int32_t>(i++));
    } else if (i == prev.size() || prev[i] > cur[j]) {
      coder.added.push_back(cur[j++]);
    } else {
      ++i;
      ++j;
    }
  }
  put_varint(out, (permuted ? kTagPermuted : 0) | (mixed ? kTagPaddingMixed : 0));
  // Gaps minus one: consecutive ranks/positions cost a zero byte, which zstd then squeezes.
  put_varint(out, coder.removed.size());
  int64_t last = -1;
  for (int32_t r : coder.removed) {
    put_varint(out, static_cast<uint64_t>(r - last - 1));
    last = r;
  }
  put_varint(out, coder.added.size());
  last = -1;
  for (int32_t p : coder.added) {
    put_varint(out, static_cast<uint64_t>(p - last - 1));
    last = p;
  }
  if (mixed) {
    last = -1;
    for (int32_t k = 0; k < width; ++k) {
      if (row[k] >= 0) continue;
      put_varint(out, static_cast<uint64_t>(k - last - 1));
      last = k;
    }
  }
  if (permuted) {
    for (int32_t k = 0; k < width; ++k) {
      if (row[k] < 0) continue;
      put_varint(out, static_cast<uint64_t>(std::lower_bound(cur.begin(), cur.end(), row[k]) - cur.begin()));
    }
  }
  coder.prev.swap(coder.sorted);
}

void decode_layer(ByteReader& in, int32_t width, int32_t top_k, int32_t seq_len, LayerCoder& coder, int32_t* row,
                  const std::string& where) {
  const uint64_t tag = in.varint();
  if (tag & ~(kTagPermuted | kTagPaddingMixed)) throw_error("{}: unknown record tag {}", where, tag);
  const std::vector<int32_t>& prev = coder.prev;

  // Kept = prev minus the removed ranks (strictly increasing by construction of the gaps).
  std::vector<int32_t>& kept = coder.removed;
  kept.clear();
  const uint64_t n_removed = in.varint_max(prev.size(), "removed count");
  uint64_t next_rank = 0;
  for (uint64_t k = 0; k < n_removed; ++k) {
    const uint64_t gap = in.varint_max(prev.size(), "removed rank gap");
    const uint64_t rank = next_rank + gap;
    if (rank >= prev.size()) {
      throw_error("{}: removed rank {} but the previous step selected {} positions", where, rank, prev.size());
    }
    kept.insert(kept.end(), prev.begin() + static_cast<std::ptrdiff_t>(next_rank),
                prev.begin() + static_cast<std::ptrdiff_t>(rank));
    next_rank = rank + 1;
  }
  kept.insert(kept.end(), prev.begin() + static_cast<std::ptrdiff_t>(next_rank), prev.end());

  const uint64_t n_added = in.varint_max(static_cast<uint64_t>(top_k), "added count");
  if (kept.size() + n_added > static_cast<uint64_t>(top_k) || kept.size() + n_added > static_cast<uint64_t>(width)) {
    throw_error("{}: {} valid positions, more than top_k = {}", where, kept.size() + n_added, top_k);
  }
  std::vector<int32_t>& added = coder.added;
  added.clear();
  uint64_t next_pos = 0;
  for (uint64_t k = 0; k < n_added; ++k) {
    const uint64_t gap = in.varint();
    if (gap >= static_cast<uint64_t>(seq_len) - std::min<uint64_t>(next_pos, static_cast<uint64_t>(seq_len))) {
      throw_error("{}: position {} is >= seq_len {}", where, next_pos + std::min<uint64_t>(gap, uint64_t{1} << 40),
                  seq_len);
    }
    const uint64_t pos = next_pos + gap;
    added.push_back(static_cast<int32_t>(pos));
    next_pos = pos + 1;
  }
  // Kept entries came from an earlier, larger seq_len only if the trace shrank; check them too.
  if (!kept.empty() && kept.back() >= seq_len) {
    throw_error("{}: position {} is >= seq_len {}", where, kept.back(), seq_len);
  }

  std::vector<int32_t>& cur = coder.sorted;
  cur.resize(kept.size() + added.size());
  size_t a = 0, b = 0, o = 0;
  while (a < kept.size() || b < added.size()) {
    if (b == added.size() || (a < kept.size() && kept[a] < added[b])) {
      cur[o++] = kept[a++];
    } else if (a == kept.size() || kept[a] > added[b]) {
      cur[o++] = added[b++];
    } else {
      throw_error("{}: position {} appears more than once", where, added[b]);
    }
  }
  const auto count = static_cast<int32_t>(cur.size());

  // Where the valid entries go: all first (usual), or around recorded -1 indices.
  std::fill(row, row + width, 0);
  if (tag & kTagPaddingMixed) {
    int64_t next_idx = 0;
    for (int32_t k = 0; k < width - count; ++k) {
      const uint64_t idx = static_cast<uint64_t>(next_idx) + in.varint_max(static_cast<uint64_t>(width), "padding gap");
      if (idx >= static_cast<uint64_t>(width)) throw_error("{}: padding index {} >= width {}", where, idx, width);
      row[idx] = -1;
      next_idx = static_cast<int64_t>(idx) + 1;
    }
  } else {
    std::fill(row + count, row + width, -1);
  }
  if (tag & kTagPermuted) {
    // Ranks must form a permutation of 0..count-1; `added` is free now and serves as the seen-marks.
    added.assign(cur.size(), 0);
    for (int32_t slot = 0; slot < width; ++slot) {
      if (row[slot] == -1) continue;
      const uint64_t rank = in.varint_max(static_cast<uint64_t>(count) - (count > 0 ? 1 : 0), "order rank");
      if (count == 0 || added[rank]) throw_error("{}: order rank {} repeated or out of range", where, rank);
      added[rank] = 1;
      row[slot] = cur[rank];
    }
  } else {
    int32_t k = 0;
    for (int32_t slot = 0; slot < width; ++slot) {
      if (row[slot] != -1) row[slot] = cur[static_cast<size_t>(k++)];
    }
  }
  coder.prev.swap(coder.sorted);
}

}  // namespace hisparse::traces
