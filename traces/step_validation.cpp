// @brief Validation of step records shared by all readers (docs/traces.md, hostile input).
#include "traces/step_validation.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {

std::string where(const std::string& source, int64_t request, int64_t step, int32_t layer) {
  if (layer < 0) return fmt::format("{}: request {}, step {}", source, request, step);
  return fmt::format("{}: request {}, step {}, layer {}", source, request, step, layer);
}

void validate_layer(const int32_t* list, int32_t width, int32_t top_k, int32_t seq_len, const std::string& source,
                    int64_t request, int64_t step, int32_t layer, std::vector<int32_t>& scratch) {
  if (width <= top_k && width > 0 && list[0] >= 0 && list[width - 1] < seq_len) {
    // Commonest of all: no padding, ascending. Strictly ascending from list[0] >= 0 to list[width-1] < seq_len puts
    // every entry in range; the pairwise test has no loop-carried dependency, so it vectorises.
    bool ascending = true;
    for (int32_t i = 1; i < width; ++i) ascending &= list[i] > list[i - 1];
    if (ascending) return;
  }
  {
    // One branch-free pass for the common case (valid entries ascending, in range, at most top_k): nothing to copy or
    // sort. Anything else (an error, or an unsorted list) takes the full check below, which names the entry.
    int32_t prev = -1, valid = 0;
    bool ok = true;
    for (int32_t i = 0; i < width; ++i) {
      const int32_t p = list[i];
      const bool pad = p == -1;
      ok &= pad | ((p > prev) & (p < seq_len));  // p > prev >= -1: also p >= 0
      prev = pad ? prev : p;
      valid += !pad;
    }
    if (ok && valid <= top_k) return;
  }
  scratch.clear();
  bool sorted = true;
  for (int32_t i = 0; i < width; ++i) {
    const int32_t p = list[i];
    if (p == -1) continue;
    if (p < 0) {
      throw_error("{}: position {} at index {} is negative (expected a token position or -1 padding)",
                  where(source, request, step, layer), p, i);
    }
    if (p >= seq_len) {
      throw_error("{}: position {} at index {} is >= seq_len {}", where(source, request, step, layer), p, i,
                  seq_len);
    }
    if (!scratch.empty() && p <= scratch.back()) sorted = false;
    scratch.push_back(p);
  }
  if (static_cast<int64_t>(scratch.size()) > top_k) {
    throw_error("{}: {} valid positions, more than top_k = {}", where(source, request, step, layer),
                scratch.size(), top_k);
  }
  // Recorded lists are often in score order. While the positions are few enough, a bitmap over [0, seq_len) (kept per
  // thread, cleared after use: at most 512 KiB) finds a duplicate in O(width) instead of sorting; only a list that
  // has one is sorted, so the message names the same (smallest) duplicated position as before.
  if (!sorted && seq_len <= (1 << 22)) {
    thread_local std::vector<uint64_t> bits;
    const size_t words = (static_cast<size_t>(seq_len) + 63) / 64;
    if (bits.size() < words) bits.assign(words, 0);
    bool dup_found = false;
    for (int32_t p : scratch) {
      uint64_t& w = bits[static_cast<size_t>(p) >> 6];
      const uint64_t m = uint64_t{1} << (p & 63);
      dup_found |= (w & m) != 0;
      w |= m;
    }
    for (int32_t p : scratch) bits[static_cast<size_t>(p) >> 6] = 0;
    if (!dup_found) return;
  }
  if (!sorted) std::sort(scratch.begin(), scratch.end());
  const auto dup = std::adjacent_find(scratch.begin(), scratch.end());
  if (dup != scratch.end()) {
    throw_error("{}: position {} appears more than once", where(source, request, step, layer), *dup);
  }
}

void validate_step(const TraceMeta& meta, const StepRecord& rec, std::vector<int32_t>& scratch) {
  if (rec.seq_len < 1 || rec.seq_len > kMaxSeqLen) {
    throw_error("{}: seq_len {} (expected 1..{}, above any real context length)",
                where(meta.source, rec.request_id, rec.step), rec.seq_len, kMaxSeqLen);
  }
  if (rec.positions.size() != static_cast<size_t>(meta.layers) * static_cast<size_t>(meta.top_k)) {
    throw_error("{}: {} positions, expected layers {} x top_k {}", where(meta.source, rec.request_id, rec.step),
                rec.positions.size(), meta.layers, meta.top_k);
  }
  for (int32_t l = 0; l < meta.layers; ++l) {
    validate_layer(rec.layer(l, meta.top_k), meta.top_k, meta.top_k, rec.seq_len, meta.source, rec.request_id,
                   rec.step, l, scratch);
  }
}

void refit_width(std::vector<int32_t>& positions, int32_t layers, int32_t from_width, int32_t to_width,
                 const std::string& source, int64_t request, int64_t step) {
  if (from_width == to_width) return;
  std::vector<int32_t> out(static_cast<size_t>(layers) * static_cast<size_t>(to_width), -1);
  for (int32_t l = 0; l < layers; ++l) {
    const int32_t* row = positions.data() + static_cast<size_t>(l) * from_width;
    int32_t* dst = out.data() + static_cast<size_t>(l) * to_width;
    if (to_width > from_width) {
      std::copy(row, row + from_width, dst);
      continue;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < from_width; ++i) {
      if (row[i] == -1) continue;
      if (n == to_width) {
        throw_error("{}: more than top_k = {} valid positions (the list is {} wide)",
                    where(source, request, step, l), to_width, from_width);
      }
      dst[n++] = row[i];
    }
  }
  positions.swap(out);
}

}  // namespace hisparse::traces
