// @brief The CUDA layout-aware copies (three layouts, gather and backup) and DeltaKV reconstruction against
// cpu_ref on random inputs, through the Backend interface. Without a GPU (CI) the binary reports itself skipped.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cpu_ref/backend_cpu.h"
#include "cuda/backend_cuda.h"

using namespace hisparse;

TEST_CASE("cuda layout copies match cpu_ref byte for byte in each layout") {
  cpu_ref::CpuBackend ref;
  cuda::CudaBackend dut;
  std::mt19937_64 g(5);
  for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead})
    for (bool gather : {true, false}) {
      LayoutCopyView v;
      v.layout = l;
      v.shape = HostLayoutShape{256, 64, 6, l == HostLayout::kPageHead ? 8 : 1, l == HostLayout::kPageHead ? 256 : 1152};
      v.count = 100;
      v.device_rows = 128;
      v.layer_begin = gather ? 2 : 0;
      v.layer_count = gather ? 1 : 6;
      std::vector<int64_t> hl(256), dl(128);
      std::iota(hl.begin(), hl.end(), 0);
      std::iota(dl.begin(), dl.end(), 0);
      for (size_t i = hl.size(); i > 1; --i) std::swap(hl[i - 1], hl[g() % i]);
      for (size_t i = dl.size(); i > 1; --i) std::swap(dl[i - 1], dl[g() % i]);
      std::vector<uint8_t> host(size_t(v.shape.total_bytes())), dev(size_t(v.device_bytes()));
      for (auto& b : host) b = uint8_t(g());
      for (auto& b : dev) b = uint8_t(g());
      auto h2 = host, d2 = dev;
      v.host_loc = hl.data();
      v.device_loc = dl.data();
      LayoutCopyView r = v, d = v;
      r.host_pool = host.data();
      r.device_pool = dev.data();
      d.host_pool = h2.data();
      d.device_pool = d2.data();
      if (gather) {
        ref.layout_gather(r);
        dut.layout_gather(d);
      } else {
        ref.layout_backup(r);
        dut.layout_backup(d);
      }
      INFO(host_layout_name(l), gather ? " gather" : " backup");
      // Expectation: both pools identical to the reference after the copy (moved bytes and untouched ones).
      CHECK(host == h2);
      CHECK(dev == d2);
    }
}

TEST_CASE("cuda DeltaKV reconstruction matches cpu_ref bit for bit") {
  cpu_ref::CpuBackend ref;
  cuda::CudaBackend dut;
  std::mt19937_64 g(9);
  DeltaKvArgs a;
  a.rows = 300;
  a.dim = 576;
  a.refs = 7;
  a.pool_rows = 200;
  std::vector<uint16_t> pool(size_t(a.pool_rows * a.dim));
  for (auto& x : pool) x = uint16_t(g());  // any bits: NaN and inf included
  std::vector<int32_t> idx(size_t(a.rows * a.refs));
  for (auto& i : idx) i = int32_t(g() % uint64_t(a.pool_rows));
  std::vector<uint8_t> res(size_t(a.rows * a.dim));
  for (auto& c : res) c = uint8_t(g());
  std::vector<float> scale(size_t(a.rows));
  for (auto& s : scale) s = float(g() % 1000) * 0.001f;
  a.ref_pool = pool.data();
  a.ref_index = idx.data();
  a.residual = res.data();
  a.residual_scale = scale.data();
  std::vector<uint16_t> o1(res.size(), 1), o2(res.size(), 2);
  DeltaKvArgs r = a, d = a;
  r.out = o1.data();
  d.out = o2.data();
  ref.deltakv_reconstruct(r);
  dut.deltakv_reconstruct(d);
  // Expectation: identical bf16 bits for every element (canonical NaN included).
  CHECK(o1 == o2);
}
