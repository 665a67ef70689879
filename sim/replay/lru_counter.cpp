// @brief Counting form of the swap-in contract for the replay (see lru_counter.h).
#include "sim/replay/lru_counter.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "core/error.h"
#include "traces/step_validation.h"

namespace hisparse::sim::replay_detail {

namespace {

/// Bit t of a PositionBits (t >= -1). The arithmetic shift sends -1 to the never-set word in front.
inline uint32_t bit_of(const uint32_t* at, int32_t t) { return (at[t >> 5] >> (t & 31)) & 1u; }
inline void set_bit(uint32_t* at, int32_t t) { at[t >> 5] |= 1u << (t & 31); }
inline void clear_bit(uint32_t* at, int32_t t) { at[t >> 5] &= ~(1u << (t & 31)); }

}  // namespace

bool StepMarks::mark(const int32_t* sel, int32_t count, int32_t n, int32_t K, int32_t H_max) {
  limit_ = kTableSpan * (int64_t{K} + H_max);
  if (n < 1 || count < 0 || count > K || int64_t{n} > limit_) return false;
  if (dirty_) {
    // The last list was not cleared with clear() (it may be gone): its words are known.
    std::fill(bits.at() + lo_, bits.at() + hi_ + 1, 0u);
    dirty_ = false;
  }
  bits.cover(n);
  if (miss_tok.size() < static_cast<size_t>(K) + 8) miss_tok.resize(static_cast<size_t>(K) + 8);
  if (hits.size() < static_cast<size_t>(H_max) + 16) hits.resize(static_cast<size_t>(H_max) + 16);
  uint32_t* const w = bits.at();
  if (count > 0 && sel[0] >= 0 && sel[count - 1] < n && traces::strictly_ascending(sel, count)) {
    // Commonest case: no padding, strictly ascending (as recorded traces and the generator write them): every entry is
    // in range and distinct, so marking is a plain scatter.
    for (int32_t i = 0; i < count; ++i) set_bit(w, sel[i]);
    selected = count;
    newest_hit = sel[count - 1] == n - 1;
    sel_ = sel;
    count_ = count;
    lo_ = sel[0] >> 5;
    hi_ = sel[count - 1] >> 5;
    dirty_ = true;
    return true;
  }
  int32_t valid = 0;
  int32_t lo = n, hi = -1;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t t = sel[i];
    // One unsigned compare covers padding (-1) and out-of-range positions; both are rare.
    if (static_cast<uint32_t>(t) >= static_cast<uint32_t>(n) || bit_of(w, t)) {
      if (t == -1) continue;
      for (int32_t k = 0; k < i; ++k)  // unmark: sel[k] is -1 or marked by this call
        if (sel[k] >= 0) clear_bit(w, sel[k]);
      return false;
    }
    set_bit(w, t);
    lo = std::min(lo, t);
    hi = std::max(hi, t);
    ++valid;
  }
  selected = valid;
  newest_hit = static_cast<int32_t>(bit_of(w, n - 1));
  sel_ = sel;
  count_ = count;
  lo_ = valid ? lo >> 5 : 0;
  hi_ = valid ? hi >> 5 : -1;
  dirty_ = valid > 0;
  return true;
}

void StepMarks::clear() {
  if (!dirty_) return;
  uint32_t* const w = bits.at();
  if (hi_ - lo_ + 1 <= 8 * int64_t{count_}) {
    std::fill(w + lo_, w + hi_ + 1, 0u);  // a few vector stores per entry at most
  } else {
    for (int32_t i = 0; i < count_; ++i) w[sel_[i] >> 5] = 0;  // -1 clears the never-set word: harmless
  }
  dirty_ = false;
}

void LruTokens::reset(int32_t size, InitialState init) {
  if (H != size || cur.size() != front + static_cast<size_t>(size) + kBackSlack) {
    H = size;
    cur.assign(front + static_cast<size_t>(H) + kBackSlack, -1);
  }
  int32_t* t = cur.data() + front;
  for (int32_t i = 0; i < H; ++i) t[i] = init == InitialState::kIdentity ? i : -1;
  started = false;
  initial = init;
  held_ok = false;
  span = init == InitialState::kIdentity ? H : 0;
}

namespace {

/// Makes room for `need` evicted tokens in front of the order (a step evicts at most its list's length).
void ensure_front(LruTokens& s, size_t need) {
  if (s.front >= need) return;
  std::vector<int32_t> c(need + static_cast<size_t>(s.H) + LruTokens::kBackSlack, -1);
  std::copy(s.tok(), s.tok() + s.H, c.data() + need);
  s.cur.swap(c);
  s.front = need;
}

/// The held bitmap covers [0, max(span, n)) and matches the tokens (rebuilt after a reset or a reference step).
void sync_held(LruTokens& s, int32_t n) {
  s.span = std::max<int64_t>(s.span, n);
  s.held.cover(s.span);
  if (s.held_ok) return;
  std::fill(s.held.words.begin(), s.held.words.end(), 0u);
  uint32_t* const h = s.held.at();
  const int32_t* t = s.tok();
  for (int32_t j = 0; j < s.H; ++j)
    if (t[j] >= 0) set_bit(h, t[j]);
  s.held_ok = true;
}

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

/// Misses: valid (not -1), non-newest entries not held, in entry order, to miss[nm..]; returns the new nm.
int32_t misses_scalar(const int32_t* sel, int32_t from, int32_t count, const uint32_t* held, int32_t newest,
                      int32_t* miss, int32_t nm) {
  for (int32_t i = from; i < count; ++i) {
    const int32_t t = sel[i];
    miss[nm] = t;  // stored always, kept by advancing: no data-dependent branch
    nm += static_cast<int32_t>((bit_of(held, t) ^ 1u) & (t != -1) & (t != newest));
  }
  return nm;
}

/// The LRU walk: EVICTABLE to ev[0..), HITS to hits[0..) (both in LRU order). hits are written at min(nh, cap), so a
/// corrupt state (more hits than the misses allowed for) cannot write past the caller's buffer; the caller checks.
void walk_scalar(const int32_t* tok, int32_t from, int32_t H, const uint32_t* sel, int32_t* ev, int32_t* hits,
                 int32_t cap, int32_t& ne, int32_t& nh) {
  for (int32_t j = from; j < H; ++j) {
    const int32_t t = tok[j];
    const auto hit = static_cast<int32_t>(bit_of(sel, t));
    ev[ne] = t;  // both stores, one index advances: no data-dependent branch
    hits[std::min(nh, cap)] = t;
    ne += 1 - hit;
    nh += hit;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HISPARSE_REPLAY_AVX2 1
/// 8 bits of a PositionBits for the 8 positions p[0..8), bit lane = p[lane]'s (scalar loads: a vpgatherdd of 8 words
/// is slower than 8 loads on Zen 1/2 and no faster elsewhere; h * 2 + bit keeps the chain to one add per lane).
__attribute__((target("avx2,bmi,bmi2,popcnt"))) inline unsigned bits8(const uint32_t* at, const int32_t* p) {
  unsigned h = 0;
  const uint32_t* words = at - 1;
  for (int lane = 7; lane >= 0; --lane) {
    // t + 32 indexes from the front word without a sign extension; bt takes the bit number mod 32 and adc shifts
    // the carry in: h = 2h + bit in two instructions (compilers emit four).
    const uint32_t t = static_cast<uint32_t>(p[lane]) + 32u;
    const uint32_t w = words[t >> 5];
    asm("btl %k[t], %k[w]\n\tadcl %k[h], %k[h]" : [h] "+r"(h) : [w] "r"(w), [t] "r"(t) : "cc");
  }
  return h;
}

/// AVX2 walk: 8 tokens at a time, their marks turned into an 8-bit mask, both sides compacted with a lane permutation
/// (one vector store each instead of 8 scalar pairs). The same result as the scalar walk.
__attribute__((target("avx2,bmi,bmi2,popcnt"))) void walk_avx2(const int32_t* tok, int32_t H, const uint32_t* sel,
                                                                int32_t* ev, int32_t* hits, int32_t cap, int32_t& ne_out,
                                                                int32_t& nh_out) {
  int32_t ne = 0, nh = 0, j = 0;
  for (; j + 8 <= H; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tok + j));
    const unsigned h = bits8(sel, tok + j);
    const unsigned e = ~h & 0xFFu;
    const __m256i ve = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[e])));
    const __m256i vh = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[h])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ev + ne), ve);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hits + std::min(nh, cap)), vh);
    ne += __builtin_popcount(e);
    nh += __builtin_popcount(h);
  }
  walk_scalar(tok, j, H, sel, ev, hits, cap, ne, nh);
  ne_out = ne;
  nh_out = nh;
}

__attribute__((target("avx2,bmi,bmi2,popcnt"))) int32_t misses_avx2(const int32_t* sel, int32_t count,
                                                                     const uint32_t* held, int32_t newest,
                                                                     int32_t* miss) {
  const __m256i vnew = _mm256_set1_epi32(newest);
  const __m256i vpad = _mm256_set1_epi32(-1);
  int32_t nm = 0, i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sel + i));
    const __m256i skip = _mm256_or_si256(_mm256_cmpeq_epi32(v, vnew), _mm256_cmpeq_epi32(v, vpad));
    const unsigned m = ~(bits8(held, sel + i) | static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(skip)))) &
                       0xFFu;
    const __m256i vm = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kLut.idx[m])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(miss + nm), vm);
    nm += __builtin_popcount(m);
  }
  return misses_scalar(sel, i, count, held, newest, miss, nm);
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                       __builtin_cpu_supports("popcnt");
#endif

}  // namespace

bool lru_simd_available() {
#ifdef HISPARSE_REPLAY_AVX2
  return kHaveAvx2;
#else
  return false;
#endif
}

LruCounts lru_slow_step(LruTokens& s, const int32_t* sel, int32_t count, int32_t n, StepMarks& marks,
                        const cpu_ref::StepContext& where, bool simd) {
  const int32_t H = s.H;
  ensure_front(s, static_cast<size_t>(count) + 8);
  sync_held(s, n);
  marks.bits.cover(s.span);  // the walk reads the marks of every held token, which may lie beyond n
  if (marks.hits.size() < static_cast<size_t>(H) + 16) marks.hits.resize(static_cast<size_t>(H) + 16);
  if (marks.miss_tok.size() < static_cast<size_t>(count) + 8) marks.miss_tok.resize(static_cast<size_t>(count) + 8);
  const uint32_t* sp = marks.bits.at();
  uint32_t* hp = s.held.at();
  const int32_t newest = n - 1;
  int32_t* miss = marks.miss_tok.data();
  // The contract's step 3 first (misses: valid, non-newest entries not held, in entry order): it fixes the number of
  // hits, |selected and held| = selected - misses - (newest selected but not held), which bounds the walk's writes
  // to HITS (a corrupt state, a token held twice, is detected after the walk instead of overrunning the scratch).
  int32_t nm = 0;
#ifdef HISPARSE_REPLAY_AVX2
  const bool vec = simd && kHaveAvx2;
  if (vec)
    nm = misses_avx2(sel, count, hp, newest, miss);
  else
#else
  (void)simd;
#endif
    nm = misses_scalar(sel, 0, count, hp, newest, miss, 0);
  const int32_t nh_expected =
      marks.selected - nm - static_cast<int32_t>(static_cast<uint32_t>(marks.newest_hit) & (bit_of(hp, newest) ^ 1u));
  // Then the walk (step 2), in place: EVICTABLE is written from tok - M (its first M, the evicted, land in the slack
  // in front; the write index stays behind the read index), HITS to scratch (hot: the same 16 KiB for every state).
  // The order is then complete with two copies: misses after EVICTABLE[M:], HITS after them.
  int32_t* dst = s.cur.data() + s.front;
  int32_t* hits = marks.hits.data();
  int32_t ne = 0, nh = 0;
#ifdef HISPARSE_REPLAY_AVX2
  if (vec)
    walk_avx2(dst, H, sp, dst - nm, hits, nh_expected, ne, nh);
  else
#endif
    walk_scalar(dst, 0, H, sp, dst - nm, hits, nh_expected, ne, nh);
  if (nm > ne || nh != nh_expected) {
    s.held_ok = false;
    throw_error("swap-in: request {}, layer {}, step {}: {} misses but only {} evictable slots ({} hits, {} expected); "
                "the buffer state is corrupt (a token held by two slots?)",
                where.request, where.layer, where.step, nm, ne, nh, nh_expected);
  }
  std::memcpy(dst + ne, hits, sizeof(int32_t) * static_cast<size_t>(nh));
  std::memcpy(dst + (ne - nm), miss, sizeof(int32_t) * static_cast<size_t>(nm));
  // The held set: the M evicted (dst[-M..0), empty slots included: their -1 clears the never-set word) out, the
  // misses in.
  for (int32_t k = 0; k < nm; ++k) clear_bit(hp, dst[k - nm]);
  for (int32_t k = 0; k < nm; ++k) set_bit(hp, miss[k]);
  return {marks.selected, marks.newest_hit, nm};
}

LruCounts lru_reference_step(LruTokens& s, const int32_t* sel, int32_t count, int32_t n, int32_t top_k,
                             const cpu_ref::StepContext& where, cpu_ref::SwapInScratch& scratch, SwapInPlan& plan,
                             std::vector<int32_t>& slot_token, std::vector<int32_t>& lru) {
  // Slot j holds tok[j] and LRU order is the identity: the same state as far as any count goes (lru_counter.h).
  const int32_t H = s.H;
  slot_token.assign(s.tok(), s.tok() + H);
  lru.resize(static_cast<size_t>(H));
  for (int32_t j = 0; j < H; ++j) lru[static_cast<size_t>(j)] = j;
  s.held_ok = false;  // rebuilt by the next lru_slow_step
  s.span = std::max<int64_t>(s.span, n);
  cpu_ref::swap_in({slot_token.data(), lru.data(), H}, sel, count, n, top_k, nullptr, 1, where, plan, scratch);
  int32_t* t = s.cur.data() + s.front;
  for (int32_t j = 0; j < H; ++j) t[j] = slot_token[static_cast<size_t>(lru[j])];
  const SwapInCounters& c = plan.counters;
  return {static_cast<int32_t>(c.selected), static_cast<int32_t>(c.newest_hits), static_cast<int32_t>(c.misses)};
}

}  // namespace hisparse::sim::replay_detail
