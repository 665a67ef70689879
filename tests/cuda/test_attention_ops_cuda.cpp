// @brief CUDA attention (exact: bits; fast: tolerance), indexer and top-k against cpu_ref on fresh random inputs,
// called through the Backend interface (CudaBackend). Without a GPU (CI) each test says it is skipped and returns.
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
  std::vector<float> w(2 * kIndexerHeads), r1(600), r2(600);
  for (auto& v : w) v = u_pm1(g);
  std::vector<int64_t> start{0, 290};
  std::vector<int32_t> len{290, 257};
  ia.q = q.data();
  ia.weights = w.data();
  ia.keys = keys.data();
  ia.key_rows = 600;
  ia.key_start = start.data();
  ia.seq_len = len.data();
  ia.scores = r1.data();
  cpu_ref::indexer_scores(ia);
  ia.scores = r2.data();
  be.indexer_scores(ia);
  CHECK(cpu_ref::first_bits_mismatch(r1.data(), r2.data(), 600) == -1);
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
