// @brief Validation of step records shared by all readers (docs/traces.md, hostile input).
#include "traces/step_validation.h"

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "core/error.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {

std::string where(const std::string& source, int64_t request, int64_t step, int32_t layer) {
  if (layer < 0) return fmt::format("{}: request {}, step {}", source, request, step);
  return fmt::format("{}: request {}, step {}, layer {}", source, request, step, layer);
}

namespace {

bool strictly_ascending_scalar(const int32_t* list, int32_t from, int32_t count) {
  // No loop-carried dependency: the compiler vectorises it (SSE2).
  bool ok = true;
  for (int32_t i = std::max(from, 1); i < count; ++i) ok &= list[i] > list[i - 1];
  return ok;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HISPARSE_ASCENDING_AVX2 1
__attribute__((target("avx2"))) bool strictly_ascending_avx2(const int32_t* list, int32_t count) {
  // 8 pairs (list[i + 1] > list[i]) per compare; the failures are OR-ed and tested once per 64 entries.
  int32_t i = 0;
  while (i + 65 <= count) {
    __m256i bad = _mm256_setzero_si256();
    for (int32_t k = 0; k < 64; k += 8) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(list + i + k));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(list + i + k + 1));
      bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(a, b));
      bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(a, b));
    }
    if (!_mm256_testz_si256(bad, bad)) return false;
    i += 64;
  }
  return strictly_ascending_scalar(list, i, count);
}
const bool kAscendingAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

bool strictly_ascending(const int32_t* list, int32_t count) {
#ifdef HISPARSE_ASCENDING_AVX2
  if (kAscendingAvx2) return strictly_ascending_avx2(list, count);
#endif
  return strictly_ascending_scalar(list, 0, count);
}

void validate_layer(const int32_t* list, int32_t width, int32_t top_k, int32_t seq_len, const std::string& source,
                    int64_t request, int64_t step, int32_t layer, std::vector<int32_t>& scratch) {
  if (width <= top_k && width > 0 && list[0] >= 0 && list[width - 1] < seq_len) {
    // Commonest of all: no padding, ascending. Strictly ascending from list[0] >= 0 to list[width-1] < seq_len puts
    // every entry in range.
    if (strictly_ascending(list, width)) return;
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
