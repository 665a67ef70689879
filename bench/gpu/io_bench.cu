// @brief GPU benchmarks of the layout-aware host-pool copies (core/host_layout.h, cuda/host_layout_copy.cu) and of
// the DeltaKV reconstruction (cuda/deltakv.cu). Every copy is timed replayed from a CUDA graph (how a decode step
// runs) beside a bulk pinned cudaMemcpy of the same bytes and direction, replayed the same way: the ratio is what
// the layout costs against moving the same bytes in one piece.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "bench/gpu/bench_timing.cuh"
#include "bench/gpu/copy_bench.h"
#include "cuda/io_ops.h"

namespace hisparse::bench {
using namespace timing;
namespace {

struct PoolShape {
  const char* name;
  int64_t layers, heads, head_bytes;
};
// DeepSeek-V3.2's MLA latent row (512 + 64 bf16 = 1152 B, 62 layers incl. MTP; one "head"), and one K (or V) half of
// Llama-3.1-8B (8 KV heads × 128 dims × bf16 = 256 B per head, 32 layers; config.json of the model).
constexpr PoolShape kMla{"mla 1x1152B x62L", 62, 1, 1152};
constexpr PoolShape kGqa{"gqa 8x256B x32L", 32, 8, 256};
constexpr int64_t kPage = 64;  // SGLang's HiSparse page size in the bundled deployments

/// Host tokens in the pool: as many as fit the shared 1.2 GB pinned buffer, whole pages.
int64_t pool_tokens(const PoolShape& p) {
  return kPoolRows * kRowBytes / (p.layers * p.heads * p.head_bytes) / kPage * kPage;
}

void layout_rows(const BenchOptions& o, const PoolShape& p, HostLayout layout, bool gather, int64_t count,
                 std::vector<BenchRow>& rows) {
  const int64_t size = pool_tokens(p);
  std::mt19937_64 g(o.seed + uint64_t(count) * 7 + uint64_t(layout));
  std::vector<int64_t> hl(static_cast<size_t>(size), 0), dl(static_cast<size_t>(count));
  for (int64_t i = 0; i < size; ++i) hl[size_t(i)] = i;
  for (int64_t i = 0; i < count; ++i) {  // distinct random host tokens: partial shuffle
    std::swap(hl[size_t(i)], hl[size_t(i + int64_t(below(g, uint64_t(size - i))))]);
    dl[size_t(i)] = i;
  }
  hl.resize(size_t(count));
  DeviceArray<int64_t> d_hl(static_cast<size_t>(count)), d_dl(static_cast<size_t>(count));
  d_hl.upload(hl);
  d_dl.upload(dl);
  LayoutCopyView v;
  v.layout = layout;
  v.shape = HostLayoutShape{size, kPage, p.layers, p.heads, p.head_bytes};
  v.count = count;
  v.host_loc = d_hl.get();
  v.device_loc = d_dl.get();
  v.layer_begin = gather ? p.layers / 2 : 0;  // decode loads one layer; the backup writes every layer
  v.layer_count = gather ? 1 : p.layers;
  v.device_rows = count;
  DeviceArray<uint8_t> dev(static_cast<size_t>(v.device_bytes()));
  HS_CUDA_CHECK(cudaMemset(dev.get(), 0x5A, size_t(v.device_bytes())));
  v.host_pool = host_pool();
  v.device_pool = dev.get();
  const double bytes = double(v.bytes_moved());
  const int calls = graph_calls(bytes);
  const double ceiling = bulk_graph_gbps(int64_t(bytes), gather, calls, o.iters);
  const double us = graph_us(calls, o.iters, [&](cudaStream_t st) { cuda::layout_copy_device(v, gather, st); });
  const std::string cfg = fmt::format("{} {} tok {}", p.name, count, gather ? "1 layer" : "all layers");
  rows.push_back(make_row(gather ? "gather-layout" : "backup-layout", cfg, host_layout_name(layout), us, bytes, ceiling));
  rows.back().rows = count * v.layer_count;
}

}  // namespace

std::vector<BenchRow> bench_layouts(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  for (const PoolShape* p : {&kMla, &kGqa})
    for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead}) {
      if (l == HostLayout::kPageHead && p->heads == 1) continue;  // page_head is SGLang's MHA/GQA layout only
      for (int64_t n : {int64_t(256), int64_t(2048)}) layout_rows(o, *p, l, true, n, rows);
      for (int64_t n : {int64_t(16), int64_t(1024)}) layout_rows(o, *p, l, false, n, rows);
    }
  return rows;
}

std::vector<BenchRow> bench_deltakv(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  constexpr int64_t kDim = 576, kPool = 4096;
  for (int64_t R : {int64_t(2048), int64_t(16384)})
    for (int32_t refs : {1, 4, 16}) {
      std::mt19937_64 g(o.seed + uint64_t(R) + uint64_t(refs));
      std::vector<uint16_t> pool(size_t(kPool * kDim));
      for (auto& x : pool) x = uint16_t((g() & 0x807f) | (0x7f << 7));  // finite, magnitudes in [1, 2)
      std::vector<int32_t> idx(size_t(R * refs));
      for (auto& i : idx) i = int32_t(below(g, kPool));
      std::vector<uint8_t> res(size_t(R * kDim));
      for (auto& c : res) c = uint8_t(below(g, 0x7e));
      std::vector<float> scale(size_t(R), 0x1p-6f);
      DeviceArray<uint16_t> d_pool(pool.size()), d_out(size_t(R * kDim));
      DeviceArray<int32_t> d_idx(idx.size());
      DeviceArray<uint8_t> d_res(res.size());
      DeviceArray<float> d_scale(scale.size());
      d_pool.upload(pool);
      d_idx.upload(idx);
      d_res.upload(res);
      d_scale.upload(scale);
      DeltaKvArgs a;
      a.rows = R;
      a.dim = kDim;
      a.refs = refs;
      a.ref_pool = d_pool.get();
      a.pool_rows = kPool;
      a.ref_index = d_idx.get();
      a.residual = d_res.get();
      a.residual_scale = d_scale.get();
      a.out = d_out.get();
      // HBM bytes a row must move at least: its residual, scale and indices in, its bf16 row out (the reference
      // rows are shared by many rows and mostly served from L2, so they are not counted).
      const double bytes = double(R) * double(kDim + 4 + 4 * refs + 2 * kDim);
      const double us = graph_us(16, o.iters, [&](cudaStream_t st) { cuda::deltakv_device(a, st); });
      rows.push_back(make_row("deltakv", fmt::format("{} rows x {} dims refs={}", R, kDim, refs), "graph", us, bytes, 0));
      rows.back().rows = R;
      rows.back().batch = refs;
    }
  return rows;
}

}  // namespace hisparse::bench
