// @brief Counting form of the swap-in contract for the replay (see lru_counter.h).
#include "sim/replay/lru_counter.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "core/error.h"

namespace hisparse::sim::replay_detail {

bool StepMarks::mark(const int32_t* sel, int32_t count, int32_t n, int32_t K, int32_t H_max, int32_t configs) {
  if (n < 1 || count < 0 || count > K || configs > 250 || int64_t{n} > kByteTableSpan * (int64_t{K} + H_max))
    return false;
  // Table: tag[-1] (= table_[0]), n positions, 3 bytes that a 4-byte gather at tag + n - 1 reads.
  if (table_.size() < static_cast<size_t>(n) + 4) {
    // Geometric growth within the span: a request whose n rises by one per step re-allocates O(log n) times.
    const int64_t cap = std::min<int64_t>(std::max<int64_t>(n, static_cast<int64_t>(table_.size()) * 3 / 2),
                                          kByteTableSpan * (int64_t{K} + H_max));
    table_.assign(static_cast<size_t>(cap) + 4, 0);
    base = 0;
  }
  if (hits.size() < static_cast<size_t>(H_max) + 8) hits.resize(static_cast<size_t>(H_max) + 8);
  if (miss_tok.size() < static_cast<size_t>(K) + 8) miss_tok.resize(static_cast<size_t>(K) + 8);
  // Next base past every value the previous step used; zero the table when the byte would overflow.
  base = base == 0 ? 1 : base + 1 + static_cast<uint32_t>(prev_configs_);
  if (base + 1 + static_cast<uint32_t>(configs) > 255) {
    std::fill(table_.begin(), table_.end(), 0);
    base = 1;
  }
  prev_configs_ = configs;
  uint8_t* const tg = table_.data() + 1;  // a local: byte stores may alias the members
  tag = tg;
  const auto b = static_cast<uint8_t>(base);
  if (count > 0 && sel[0] >= 0 && sel[count - 1] < n) {
    // Commonest case: no padding, strictly ascending (as recorded traces and the generator write them): every entry is
    // in range and distinct, so marking is a plain scatter. The test has no loop-carried dependency (vectorises).
    bool ascending = true;
    for (int32_t i = 1; i < count; ++i) ascending &= sel[i] > sel[i - 1];
    if (ascending) {
      for (int32_t i = 0; i < count; ++i) tg[sel[i]] = b;
      selected = count;
      newest_hit = tg[n - 1] >= b;
      return true;
    }
  }
  int32_t valid = 0;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t t = sel[i];
    // One unsigned compare covers padding (-1) and out-of-range positions; both are rare.
    if (static_cast<uint32_t>(t) >= static_cast<uint32_t>(n) || tg[t] >= b) {
      if (t == -1) continue;
      for (int32_t k = 0; k < i; ++k)  // unmark: sel[k] is -1 or marked by this call
        if (sel[k] >= 0) tg[sel[k]] = 0;
      return false;
    }
    tg[t] = b;
    ++valid;
  }
  selected = valid;
  newest_hit = tg[n - 1] >= b;
  return true;
}

void LruTokens::reset(int32_t H, InitialState init) {
  tok.resize(static_cast<size_t>(H));
  for (int32_t i = 0; i < H; ++i) tok[static_cast<size_t>(i)] = init == InitialState::kIdentity ? i : -1;
  started = false;
  initial = init;
}

namespace {

/// Compaction of the lanes of an 8-bit mask to the front: idx[m] lists the set lanes of m, then zeros.
struct CompressLut {
  alignas(32) int32_t idx[256][8];
};
const CompressLut kLut = [] {
  CompressLut x{};
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int lane = 0; lane < 8; ++lane)
      if ((m >> lane) & 1) x.idx[m][k++] = lane;
    while (k < 8) x.idx[m][k++] = 0;
  }
  return x;
}();

/// Scalar walk: EVICTABLE and HITS, both in LRU order; returns EVICTABLE's length (hits: H - it).
int32_t walk_scalar(const int32_t* tok, int32_t from, int32_t H, const uint8_t* tag, uint32_t b, int32_t* ev,
                    int32_t* hits, int32_t ne, int32_t nh) {
  for (int32_t j = from; j < H; ++j) {
    const int32_t t = tok[j];
    const int32_t hit = tag[t] >= b;
    ev[ne] = t;  // both stores, one index advances: no data-dependent branch
    hits[nh] = t;
    ne += 1 - hit;
    nh += hit;
  }
  return ne;
}

int32_t misses_scalar(const int32_t* sel, int32_t from, int32_t count, const uint8_t* tag, uint32_t b, uint32_t code,
                      int32_t newest, int32_t* miss, int32_t nm) {
  for (int32_t i = from; i < count; ++i) {
    const int32_t t = sel[i];
    const uint32_t g = tag[t];
    miss[nm] = t;
    nm += static_cast<int32_t>((g >= b) & (g != code) & (t != newest));
  }
  return nm;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HISPARSE_REPLAY_AVX2 1
/// AVX2: 8 tokens at a time, their marks turned into an 8-bit mask, both sides compacted with a lane permutation (one
/// vector store each instead of 8 scalar pairs). The same result as the scalar walk.
__attribute__((target("avx2,popcnt"))) int32_t walk_avx2(const int32_t* tok, int32_t H, const uint8_t* tag,
                                                          uint32_t b, int32_t* ev, int32_t* hits) {
  int32_t ne = 0, nh = 0, j = 0;
  for (; j + 8 <= H; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tok + j));
    unsigned h = 0;  // (a vpgatherdd of the 8 marks is slower than 8 byte loads on Zen 1/2, no faster elsewhere)
    for (int lane = 0; lane < 8; ++lane) h |= static_cast<unsigned>(tag[tok[j + lane]] >= b) << lane;
    const unsigned e = ~h & 0xFFu;
    const __m256i ve = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[e])));
    const __m256i vh = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[h])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ev + ne), ve);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hits + nh), vh);
    ne += __builtin_popcount(e);
    nh += __builtin_popcount(h);
  }
  return walk_scalar(tok, j, H, tag, b, ev, hits, ne, nh);
}

__attribute__((target("avx2,popcnt"))) int32_t misses_avx2(const int32_t* sel, int32_t count, const uint8_t* tag,
                                                            uint32_t b, uint32_t code, int32_t newest, int32_t* miss) {
  const __m256i vnew = _mm256_set1_epi32(newest);
  int32_t nm = 0, i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sel + i));
    unsigned m = 0;
    for (int lane = 0; lane < 8; ++lane) {
      const uint32_t g = tag[sel[i + lane]];
      m |= static_cast<unsigned>((g >= b) & (g != code)) << lane;
    }
    // The newest entry (at most one) is never a miss.
    m &= ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, vnew))));
    const __m256i vm = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[m])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(miss + nm), vm);
    nm += __builtin_popcount(m);
  }
  return misses_scalar(sel, i, count, tag, b, code, newest, miss, nm);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
#endif

}  // namespace

bool lru_simd_available() {
#ifdef HISPARSE_REPLAY_AVX2
  return kHaveAvx2;
#else
  return false;
#endif
}

LruCounts lru_slow_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, StepMarks& marks,
                        int32_t code_index, const cpu_ref::StepContext& where, bool simd) {
  const int32_t H = static_cast<int32_t>(state.tok.size());
  const int32_t newest = n - 1;
  uint8_t* tag = marks.tag;
  const uint32_t b = marks.base;
  const auto code = static_cast<uint8_t>(b + 1 + static_cast<uint32_t>(code_index));
  int32_t* tok = state.tok.data();
  // EVICTABLE is compacted in place at the front of tok (its write index never passes the read index: ne <= j), so the
  // walk touches 16 KiB less (at H = 4096) than with a separate array; HITS go to scratch.
  int32_t* ev = tok;
  int32_t* hits = marks.hits.data();
  int32_t* miss = marks.miss_tok.data();
  // Walk the LRU once (the contract's step 2): a token marked at this step is a hit. An empty slot's -1 reads tag[-1],
  // which is never marked. Then the misses: valid, non-newest entries not hit by this configuration, in entry order
  // (step 3). Buffers have 8 entries of slack for the vector stores.
  int32_t ne = 0, nm = 0;
#ifdef HISPARSE_REPLAY_AVX2
  if (simd && kHaveAvx2) {
    ne = walk_avx2(tok, H, tag, b, ev, hits);
    for (int32_t k = 0; k < H - ne; ++k) tag[hits[k]] = code;  // held and selected now (the newest too, as HITS)
    nm = misses_avx2(sel, count, tag, b, code, newest, miss);
  } else
#endif
  {
    (void)simd;
    ne = walk_scalar(tok, 0, H, tag, b, ev, hits, 0, 0);
    for (int32_t k = 0; k < H - ne; ++k) tag[hits[k]] = code;
    nm = misses_scalar(sel, 0, count, tag, b, code, newest, miss, 0);
  }
  if (nm > ne) {
    throw_error("swap-in: request {}, layer {}, step {}: {} misses but only {} evictable slots; the buffer state is "
                "corrupt (a token held by two slots?)",
                where.request, where.layer, where.step, nm, ne);
  }
  // New order (step 4): EVICTABLE[M:] ++ loaded (miss order) ++ HITS (old relative order).
  std::memmove(tok, ev + nm, sizeof(int32_t) * static_cast<size_t>(ne - nm));
  std::memcpy(tok + (ne - nm), miss, sizeof(int32_t) * static_cast<size_t>(nm));
  std::memcpy(tok + ne, hits, sizeof(int32_t) * static_cast<size_t>(H - ne));
  return {marks.selected, marks.newest_hit, nm};
}

LruCounts lru_reference_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, int32_t top_k,
                             const cpu_ref::StepContext& where, cpu_ref::SwapInScratch& scratch, SwapInPlan& plan,
                             std::vector<int32_t>& slot_token, std::vector<int32_t>& lru) {
  // Slot j holds tok[j] and LRU order is the identity: the same state as far as any count goes (lru_counter.h).
  const int32_t H = static_cast<int32_t>(state.tok.size());
  slot_token.assign(state.tok.begin(), state.tok.end());
  lru.resize(static_cast<size_t>(H));
  for (int32_t j = 0; j < H; ++j) lru[static_cast<size_t>(j)] = j;
  cpu_ref::swap_in({slot_token.data(), lru.data(), H}, sel, count, n, top_k, nullptr, 1, where, plan, scratch);
  for (int32_t j = 0; j < H; ++j) state.tok[static_cast<size_t>(j)] = slot_token[static_cast<size_t>(lru[j])];
  const SwapInCounters& c = plan.counters;
  return {static_cast<int32_t>(c.selected), static_cast<int32_t>(c.newest_hits), static_cast<int32_t>(c.misses)};
}

}  // namespace hisparse::sim::replay_detail
