// @brief CUDA attention (exact: bits; fast: tolerance), indexer (bf16 and fp8 keys) and top-k against cpu_ref on
// fresh random inputs, called through the Backend interface (CudaBackend). Without a GPU (CI) the binary reports
// itself skipped.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "cpu_ref/indexer.h"
#include "cpu_ref/sparse_attention.h"
#include "cpu_ref/sparse_attention_compare.h"
#include "cpu_ref/topk.h"
#include "cuda/backend_cuda.h"
#include "cuda/runtime.h"

using namespace hisparse;

namespace {


float u_pm1(std::mt19937_64& g) { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; }

/// Indexer scores of cpu_ref and of the CUDA backend for the same view (`scores` set here, each side poisoned with
/// its own value, so an unwritten score differs): "" when every score has the same bits (the fp8 path's canonical
/// NaN included), else the first difference.
std::string indexer_cpu_vs_cuda(IndexerArgs ia, Backend& be) {
  const size_t ns = size_t(ia.tokens) * size_t(ia.max_len);
  std::vector<float> r1(ns, 1.0f), r2(ns, 2.0f);
  ia.scores = r1.data();
  cpu_ref::indexer_scores(ia);
  ia.scores = r2.data();
  be.indexer_scores(ia);
  for (size_t i = 0; i < ns; ++i)
    if (num::float_bits(r1[i]) != num::float_bits(r2[i]))
      return "score " + std::to_string(i) + ": " + cpu_ref::describe_f32_pair(r1[i], r2[i]);
  return "";
}

}  // namespace

// The fast kernel splits P into bf16 hi + lo terms; on unit-scale inputs it must meet FlashMLA's bar.
TEST_CASE("cuda attention: exact kernel equals cpu_ref bit for bit; fast kernel within tolerance") {
  cuda::CudaBackend be;
  std::mt19937_64 g(21);
  const int ks[] = {1, 7, 64, 65, 200};
  for (int c = 0; c < 10; ++c) {
    const int heads = c % 2 ? 128 : 64, k = ks[c % 5], slots = 97 + c, tokens = 1 + c % 3;
    std::vector<num::Bf16Bits> q(size_t(tokens) * heads * kMlaQkDim), kv(size_t(slots) * kMlaQkDim);
    for (auto& v : q) v = num::float_to_bf16(u_pm1(g));
    for (auto& v : kv) v = num::float_to_bf16(u_pm1(g));
    std::vector<int32_t> idx(size_t(tokens) * k);
    for (auto& v : idx) v = g() % 5 == 0 ? -1 : int32_t(g() % uint64_t(slots));
    if (c == 3) std::fill(idx.begin(), idx.begin() + k, -1);
    const size_t no = size_t(tokens) * heads * kMlaVDim, nl = size_t(tokens) * heads;
    std::vector<num::Bf16Bits> ref_o(no), ex_o(no), fast_o(no);
    std::vector<float> ref_l(nl), ex_l(nl), fast_l(nl);
    SparseAttentionArgs a;
    a.tokens = tokens;
    a.heads = heads;
    a.top_k = k;
    a.slots = slots;
    a.sm_scale = 1.0f / 24.0f;
    a.q = q.data();
    a.kv = kv.data();
    a.indices = idx.data();
    a.out = ref_o.data();
    a.lse = ref_l.data();
    cpu_ref::sparse_attention(a);
    std::vector<double> o64, l64;
    cpu_ref::sparse_attention_f64(a, o64, l64);
    a.out = ex_o.data();
    a.lse = ex_l.data();
    be.sparse_attention(a, AttentionVariant::kExact);
    const int64_t io = cpu_ref::first_bits_mismatch(ref_o.data(), ex_o.data(), int64_t(no));
    const int64_t il = cpu_ref::first_bits_mismatch(ref_l.data(), ex_l.data(), int64_t(nl));
    CHECK_MESSAGE(io == -1, "case " << c << " out[" << io << "] "
                                    << (io >= 0 ? cpu_ref::describe_bf16_pair(ref_o[io], ex_o[io]) : ""));
    CHECK_MESSAGE(il == -1, "case " << c << " lse[" << il << "] "
                                    << (il >= 0 ? cpu_ref::describe_f32_pair(ref_l[il], ex_l[il]) : ""));
    a.out = fast_o.data();
    a.lse = fast_l.data();
    be.sparse_attention(a, AttentionVariant::kFast);
    const auto so = cpu_ref::compare_values(cpu_ref::bf16_to_double(fast_o.data(), int64_t(no)), o64,
                                            cpu_ref::kAttentionOutTol);
    const auto sl = cpu_ref::compare_values(cpu_ref::f32_to_double(fast_l.data(), int64_t(nl)), l64,
                                            cpu_ref::kAttentionLseTol);
    CHECK_MESSAGE(so.failures == 0, "case " << c << " fast out: " << so.failures << " outside, max abs " << so.max_abs);
    CHECK_MESSAGE(sl.failures == 0, "case " << c << " fast lse: " << sl.failures << " outside, max abs " << sl.max_abs);
  }
}

// fp8 E4M3 q and keys with a per-row scale: every code (NaN codes included: their head contributes +0), and
// scales of every kind (zero, subnormal, negative, infinite, NaN: the output is canonicalised), over lengths that
// do and do not fill the 128-thread blocks.
TEST_CASE("cuda indexer fp8: identical to cpu_ref bit for bit") {
  cuda::CudaBackend be;
  std::mt19937_64 g(23);
  for (int c = 0; c < 6; ++c) {
    const int32_t tokens = 1 + c % 3, n = c == 0 ? 1 : 97 + 173 * c;
    IndexerArgs ia;
    ia.dtype = IndexerDtype::kFp8E4m3;
    ia.tokens = tokens;
    ia.max_len = n + c;
    ia.key_rows = int64_t(tokens) * n + 5;
    std::vector<num::Fp8Bits> q(size_t(tokens) * kIndexerHeads * kIndexerDim), keys(size_t(ia.key_rows) * kIndexerDim);
    for (auto& v : q) v = num::Fp8Bits(c < 3 ? g() % 256 : 0x30 + g() % 0x4e);  // any code; or exponents 6..15
    for (auto& v : keys) v = num::Fp8Bits(c < 3 ? g() % 256 : (g() & 0x80) | (0x30 + g() % 0x4e));
    ia.q_fp8 = q.data();
    ia.keys_fp8 = keys.data();
    std::vector<float> w(size_t(tokens) * kIndexerHeads), scale(static_cast<size_t>(ia.key_rows));
    for (auto& v : w) v = u_pm1(g) * 0.01f;
    for (auto& v : scale) v = c == 2 ? num::bits_float(uint32_t(g())) : g() % 9 == 0 ? 0.0f : u_pm1(g) * 0.002f;
    ia.weights = w.data();
    ia.key_scale = scale.data();
    std::vector<int64_t> start(static_cast<size_t>(tokens));
    std::vector<int32_t> len(static_cast<size_t>(tokens));
    for (int32_t t = 0; t < tokens; ++t) {
      start[size_t(t)] = int64_t(t) * n + t % 2;
      len[size_t(t)] = n - t;
    }
    ia.key_start = start.data();
    ia.seq_len = len.data();
    CHECK_MESSAGE(indexer_cpu_vs_cuda(ia, be) == "", "case " << c);
  }
}

TEST_CASE("cuda indexer and topk: identical to cpu_ref") {
  cuda::CudaBackend be;
  std::mt19937_64 g(22);
  // indexer
  IndexerArgs ia;
  ia.tokens = 2;
  ia.max_len = 300;
  std::vector<num::Bf16Bits> q(2 * kIndexerHeads * kIndexerDim), keys(600 * kIndexerDim);
  for (auto& v : q) v = num::float_to_bf16(u_pm1(g));
  for (auto& v : keys) v = num::float_to_bf16(u_pm1(g));
  std::vector<float> w(2 * kIndexerHeads);
  for (auto& v : w) v = u_pm1(g);
  std::vector<int64_t> start{0, 290};
  std::vector<int32_t> len{290, 257};
  ia.q = q.data();
  ia.weights = w.data();
  ia.keys = keys.data();
  ia.key_rows = 600;
  ia.key_start = start.data();
  ia.seq_len = len.data();
  CHECK(indexer_cpu_vs_cuda(ia, be) == "");
  // top-k: a tie-heavy long row, random rows, a short row; one row alone (many blocks per row) and 3 rows
  for (int rows : {1, 3})
  for (int k : {1, 64, 2048}) {
    std::vector<float> s(size_t(3) * 131072);
    for (size_t i = 0; i < s.size(); ++i) s[i] = i < 131072 ? float(g() % 5) : u_pm1(g);
    std::vector<int32_t> lens{131072, 1000, 17}, o1(size_t(3) * k, -9), o2(size_t(3) * k, -9);
    TopkArgs ta;
    ta.rows = rows;
    ta.stride = 131072;
    ta.k = k;
    ta.scores = s.data();
    ta.length = lens.data();
    ta.out = o1.data();
    cpu_ref::topk(ta);
    ta.out = o2.data();
    be.topk(ta);
    CHECK_MESSAGE(o1 == o2, "rows=" << rows << " k=" << k);
  }
}
