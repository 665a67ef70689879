// @brief GPU benchmarks: swap-in (latency, copy rate per mode, batch x miss sweep), gather, backup; each timed with
// CUDA events (median of repetitions, state restored between them), each rate beside a bulk cudaMemcpy ceiling of
// the same bytes and direction measured in the same process and the same way. Gather and backup are timed two
// ways, kernel and ceiling alike: per call (mode zero-copy: an event pair and a host sync around every call, so
// host launch cost is in both) and replayed from a CUDA graph (mode graph: N captured calls per replay, time per
// call = replay time / N, the way a decode step runs inside SGLang's CUDA graph); the targets are judged on the
// graph rows. The config names the zero-copy kernel variant (HISPARSE_GATHER_KERNEL / HISPARSE_BACKUP_KERNEL).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "core/error.h"
#include "bench/gpu/bench_timing.cuh"
#include "bench/gpu/copy_bench.h"
#include "cuda/copy_rows.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/swap_in_cluster.cuh"
#include "cuda/swap_in.h"

namespace hisparse::bench {
using namespace hisparse::cuda;  // the kernels and their launch helpers under test
using namespace timing;
namespace {

__global__ void empty_kernel() {}

/// A batch of swap-in rows on the device with a saved starting state, so every timed call sees the same work.
struct SwapInBed {
  int32_t B, H, K, n;
  DeviceArray<int32_t> slot_token, lru, saved_slot_token, saved_lru, selected, seq_len, slot_of, load_count, load_slot,
      error;
  DeviceArray<int64_t> load_host, counters;
  DeviceArray<uint8_t> device_kv;
  int64_t misses = 0;
  std::vector<int32_t> host_slot_token, host_selected;  // the starting state and selection, row-major

  SwapInBed(int32_t b, int32_t h, int32_t k, double miss_rate, uint64_t seed)
      : B(b), H(h), K(k), n(kPoolRows - 1), slot_token(size_t(b) * h), lru(size_t(b) * h),
        saved_slot_token(size_t(b) * h), saved_lru(size_t(b) * h), selected(size_t(b) * k), seq_len(b),
        slot_of(size_t(b) * k), load_count(b), load_slot(size_t(b) * k), error(size_t(b) * 2),
        load_host(size_t(b) * k), counters(size_t(b) * kCounterWords), device_kv(size_t(b) * (h + 1) * kRowBytes) {
    std::mt19937_64 g(seed);
    std::vector<int32_t> st(size_t(B) * H), lr(size_t(B) * H), sel(size_t(B) * K), sl(B, n);
    std::vector<char> used(n);
    const int32_t n_miss = int32_t(miss_rate * K + 0.5);
    for (int32_t r = 0; r < B; ++r) {
      std::fill(used.begin(), used.end(), 0);
      int32_t* s = &st[size_t(r) * H];
      int32_t* l = &lr[size_t(r) * H];
      for (int32_t i = 0; i < H; ++i) {
        l[i] = i;
        int32_t t;
        do t = int32_t(below(g, uint64_t(n - 1)));
        while (used[t]);
        used[t] = 1;
        s[i] = t;
      }
      for (int32_t i = H; i > 1; --i) std::swap(l[i - 1], l[below(g, uint64_t(i))]);
      // Hits: K - n_miss distinct slot tokens; misses: tokens held by no slot (never the newest).
      std::vector<int32_t> pick(s, s + H);
      for (int32_t i = H; i > 1; --i) std::swap(pick[i - 1], pick[below(g, uint64_t(i))]);
      int32_t* q = &sel[size_t(r) * K];
      for (int32_t i = 0; i < K - n_miss; ++i) q[i] = pick[i];
      for (int32_t i = K - n_miss; i < K; ++i) {
        int32_t t;
        do t = int32_t(below(g, uint64_t(n - 1)));
        while (used[t]);
        used[t] = 1;
        q[i] = t;
      }
      for (int32_t i = K; i > 1; --i) std::swap(q[i - 1], q[below(g, uint64_t(i))]);
    }
    misses = int64_t(n_miss) * B;
    host_slot_token = st;
    host_selected = sel;
    saved_slot_token.upload(st);
    saved_lru.upload(lr);
    selected.upload(sel);
    seq_len.upload(sl);
    restore();
  }
  void restore(cudaStream_t stream = nullptr) {
    HS_CUDA_CHECK(cudaMemcpyAsync(slot_token.get(), saved_slot_token.get(), size_t(B) * H * 4, cudaMemcpyDeviceToDevice,
                                  stream));
    HS_CUDA_CHECK(cudaMemcpyAsync(lru.get(), saved_lru.get(), size_t(B) * H * 4, cudaMemcpyDeviceToDevice, stream));
  }
  SwapInDeviceArgs args(bool copy) {
    SwapInDeviceArgs a;
    a.batch = B;
    a.H = H;
    a.top_k = K;
    a.slot_token = slot_token.get();
    a.lru = lru.get();
    a.selected = selected.get();
    a.seq_len = seq_len.get();
    a.host_loc = nullptr;  // token t at host row t
    a.row_bytes = kRowBytes;
    a.slot_of = slot_of.get();
    a.load_count = load_count.get();
    a.load_host = load_host.get();
    a.load_slot = load_slot.get();
    a.counters = counters.get();
    a.error = error.get();
    if (copy) {
      a.host_pool = host_pool();
      a.host_rows = kPoolRows;
      a.device_kv = device_kv.get();
    }
    return a;
  }
  /// The plan must report exactly the misses the bed was built with (a wrong plan would time the wrong work).
  void check() {
    std::vector<int32_t> cnt(B), err(size_t(B) * 2);
    HS_CUDA_CHECK(cudaMemcpy(cnt.data(), load_count.get(), size_t(B) * 4, cudaMemcpyDeviceToHost));
    HS_CUDA_CHECK(cudaMemcpy(err.data(), error.get(), size_t(B) * 8, cudaMemcpyDeviceToHost));
    int64_t total = 0;
    for (int32_t r = 0; r < B; ++r) {
      if (err[2 * r] != kSwapInOk) throw_error("bench swap-in: row {} reported error {}", r, err[2 * r]);
      total += cnt[r];
    }
    if (total != misses) throw_error("bench swap-in: the plan loads {} rows, the bed expects {}", total, misses);
  }
};

/// HISPARSE_SWAP_IN_PHASES=1: `calls` back-to-back calls of the phase-timed cluster kernel, then per phase and
/// block the median over calls of the time since the previous mark (%globaltimer ns, and SM cycles), printed as a
/// table; the phase rows (max over blocks of the medians) and the launch gaps are returned for the CSV.
template <typename Call>
void swap_in_phase_table(int calls, Call call, std::vector<BenchRow>& rows, const std::string& config) {
  using detail::kSwapInPhaseBlocks;
  using detail::kSwapInPhaseCap;
  using detail::kSwapInPhaseMarks;
  call();
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  detail::swap_in_phases_reset();
  for (int i = 0; i < calls; ++i) call();
  const detail::SwapInPhaseRecords r = detail::swap_in_phases_read();
  int blocks = 0;
  while (blocks < kSwapInPhaseBlocks && r.count[size_t(blocks)] > 0) ++blocks;
  uint32_t n = UINT32_MAX;
  for (int c = 0; c < blocks; ++c) n = std::min(n, r.count[size_t(c)]);
  if (blocks == 0 || n < 2 || n > uint32_t(kSwapInPhaseCap)) {
    fmt::print("swap-in phases: no usable records (blocks {}, calls {}): did the cluster kernel run?\n", blocks,
               blocks ? n : 0);
    return;
  }
  auto at = [&](uint32_t k, int c, int p) { return (size_t(k) * kSwapInPhaseBlocks + size_t(c)) * kSwapInPhaseMarks + size_t(p); };
  fmt::print("swap-in phases, {} ({} calls back to back, {} blocks of row 0; median over calls of the time since the "
             "previous mark: ns by %globaltimer / SM cycles by clock64)\n",
             config, n, blocks);
  fmt::print("{:<16}", "phase");
  for (int c = 0; c < blocks; ++c) fmt::print(" {:>13}", fmt::format("block {}", c));
  fmt::print("\n");
  for (int p = 1; p < kSwapInPhaseMarks; ++p) {
    fmt::print("{:<16}", detail::swap_in_phase_name(p));
    double worst = 0;
    for (int c = 0; c < blocks; ++c) {
      std::vector<double> ns, cyc;
      for (uint32_t k = 0; k < n; ++k) {
        ns.push_back(double(r.gt[at(k, c, p)] - r.gt[at(k, c, p - 1)]));
        cyc.push_back(double(r.clk[at(k, c, p)] - r.clk[at(k, c, p - 1)]));
      }
      const double mns = median(ns);
      worst = std::max(worst, mns);
      fmt::print(" {:>13}", fmt::format("{:.0f}/{:.0f}", mns, median(cyc)));
    }
    fmt::print("\n");
    rows.push_back(make_row("swap-in-phase", config + ", " + detail::swap_in_phase_name(p), "phases", worst * 1e-3, 0, 0));
  }
  // Across blocks and calls (%globaltimer only): a block's whole call, the spread of the blocks' starts, and the
  // gap from the previous call's last block end to this call's first block start (launch cost left exposed).
  std::vector<double> span, skew, gap;
  for (uint32_t k = 0; k < n; ++k) {
    unsigned long long s0 = ~0ull, s1 = 0, e1 = 0;
    for (int c = 0; c < blocks; ++c) {
      s0 = std::min(s0, r.gt[at(k, c, 0)]);
      s1 = std::max(s1, r.gt[at(k, c, 0)]);
      e1 = std::max(e1, r.gt[at(k, c, kSwapInPhaseMarks - 1)]);
    }
    span.push_back(double(e1 - s0));
    skew.push_back(double(s1 - s0));
    if (k > 0) {
      unsigned long long prev_end = 0;
      for (int c = 0; c < blocks; ++c) prev_end = std::max(prev_end, r.gt[at(k - 1, c, kSwapInPhaseMarks - 1)]);
      gap.push_back(double(static_cast<long long>(s0 - prev_end)));  // negative: overlapped (PDL)
    }
  }
  fmt::print("first start -> last end {:.0f} ns, block start skew {:.0f} ns, previous call's end -> next start {:.0f} "
             "ns (medians)\n",
             median(span), median(skew), median(gap));
  rows.push_back(make_row("swap-in-phase", config + ", first start -> last end", "phases", median(span) * 1e-3, 0, 0));
  rows.push_back(make_row("swap-in-phase", config + ", block start skew", "phases", median(skew) * 1e-3, 0, 0));
  rows.push_back(make_row("swap-in-phase", config + ", previous end -> next start", "phases", median(gap) * 1e-3, 0, 0));
}

}  // namespace

std::vector<BenchRow> bench_swap_in(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  const int32_t H = 4096, K = 2048;
  {
    // Latency: batch 1, all hits (state need not be restored: the same hits repeat). Per call with an event pair
    // and a host sync around each call (the old method), then the SGLang-class way: back to back between two
    // events, median of repeats (the target applies there), then replayed from a CUDA graph.
    SwapInBed bed(1, H, K, 0.0, o.seed);
    const SwapInDeviceArgs a = bed.args(false);
    const double us = time_us(o.iters * 4, [] {}, [&] { swap_in_device(a, CopyMode::kFused, o.kernels.swap_in); });
    bed.check();
    rows.push_back(make_row("swap-in", "B=1 H=4096 K=2048 all hits", "per-call", us, 0, 0));
    constexpr int kBack = 200;
    const int repeats = std::max(5, o.iters / 2);
    const double b2b = back_to_back_us(kBack, repeats, [&] { swap_in_device(a, CopyMode::kFused, o.kernels.swap_in); });
    rows.push_back(make_row("swap-in", "B=1 H=4096 K=2048 all hits", "back-to-back", b2b, 0, 0, "<= 10 us", 0, 10.0));
    {
      // All hits that move every call: two disjoint hit sets alternate, so each call rewrites the LRU order.
      std::vector<int32_t> alt;
      std::vector<char> taken(size_t(kPoolRows), 0);
      for (int32_t t : bed.host_selected) taken[size_t(t)] = 1;
      for (int32_t t : bed.host_slot_token)
        if (!taken[size_t(t)] && int32_t(alt.size()) < K) alt.push_back(t);
      if (int32_t(alt.size()) == K) {
        DeviceArray<int32_t> alt_sel{static_cast<size_t>(K)};
        alt_sel.upload(alt);
        SwapInDeviceArgs a2 = a;
        a2.selected = alt_sel.get();
        int flip = 0;
        const double moving = back_to_back_us(kBack, repeats, [&] { swap_in_device(flip++ & 1 ? a2 : a, CopyMode::kFused, o.kernels.swap_in); });
        rows.push_back(make_row("swap-in", "B=1 H=4096 K=2048 all hits, LRU moves", "back-to-back", moving, 0, 0));
        bed.restore();
      }
    }
    // The same launches replayed from a CUDA graph: no host launch cost, so this is the kernel's own time.
    cudaStream_t st;
    HS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    HS_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kBack; ++i) swap_in_device(a, CopyMode::kFused, o.kernels.swap_in, st);
    HS_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    HS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const double g = back_to_back_us(1, repeats, [&] { HS_CUDA_CHECK(cudaGraphLaunch(exec, st)); }, st) / kBack;
    rows.push_back(make_row("swap-in", "B=1 H=4096 K=2048 all hits", "graph", g, 0, 0));
    if (o.kernels.swap_in.phase_timer)
      swap_in_phase_table(64, [&] { swap_in_device(a, CopyMode::kFused, o.kernels.swap_in); }, rows, "B=1 H=4096 K=2048 all hits");
    HS_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HS_CUDA_CHECK(cudaGraphDestroy(graph));
    HS_CUDA_CHECK(cudaStreamDestroy(st));
    // The floor every figure includes: an empty kernel, timed the same two ways.
    const double e1 = time_us(o.iters * 4, [] {}, [] { empty_kernel<<<1, 32>>>(); });
    rows.push_back(make_row("launch", "empty kernel", "per-call", e1, 0, 0));
    rows.push_back(make_row("launch", "empty kernel", "back-to-back",
                            back_to_back_us(kBack, repeats, [] { empty_kernel<<<1, 32>>>(); }), 0, 0));
    rows.push_back(make_row("launch", "empty kernel", "graph",
                            graph_us(kBack, repeats, [](cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); }), 0, 0));
  }
  for (auto hk : {std::pair<int32_t, int32_t>{1024, 512}, {2048, 2048}, {8192, 2048}, {6144, 6144}}) {
    SwapInBed bed(1, hk.first, hk.second, 0.0, o.seed + 7);
    const SwapInDeviceArgs a = bed.args(false);
    const double us = time_us(o.iters * 2, [] {}, [&] { swap_in_device(a, CopyMode::kFused, o.kernels.swap_in); });
    rows.push_back(make_row("swap-in", fmt::format("B=1 H={} K={} all hits", hk.first, hk.second), "per-call", us, 0, 0));
  }
  {
    // Copy rate: batch 100, 20% misses, 1152-byte rows, each copy mode.
    SwapInBed bed(100, H, K, 0.2, o.seed + 1);
    const double bytes = double(bed.misses) * kRowBytes;
    const double ceiling = bulk_gbps(int64_t(bytes), true);
    const double plan = time_us(o.iters, [&] { bed.restore(); }, [&] { swap_in_device(bed.args(false), CopyMode::kFused, o.kernels.swap_in); });
    bed.check();
    rows.push_back(make_row("swap-in", "B=100 H=4096 K=2048 miss=20%", "plan-only", plan, 0, 0));
    for (CopyMode m : {CopyMode::kFused, CopyMode::kSeparate, CopyMode::kCopyEngine}) {
      const int iters = m == CopyMode::kCopyEngine ? 3 : o.iters;
      const double us = time_us(iters, [&] { bed.restore(); }, [&] { swap_in_device(bed.args(true), m, o.kernels.swap_in); });
      bed.check();
      BenchRow r = make_row("swap-in", "B=100 H=4096 K=2048 miss=20%", copy_mode_name(m), us, bytes, ceiling,
                            m == CopyMode::kCopyEngine ? "" : ">= 90% of bulk H2D", m == CopyMode::kCopyEngine ? 0 : 0.9);
      r.batch = 100;
      r.miss_rate = 0.2;
      r.rows = bed.misses;
      rows.push_back(r);
    }
  }
  {
    // Where the two swap-in kernels meet (the calibration fits each side separately).
    BenchRow r = make_row("swap-in-kernel", "cluster kernel up to batch", "cluster", 0, 0, 0);
    r.batch = swap_in_cluster_max_batch(o.kernels.swap_in);
    rows.push_back(r);
    // Its blocks per request: each serves the misses of its LRU slice, which bounds the fused copy's rounds.
    BenchRow c = make_row("swap-in-kernel", "cluster blocks per request", "cluster-blocks", 0, 0, 0);
    c.batch = o.kernels.swap_in.cluster;
    rows.push_back(c);
  }
  if (o.sweep) {
    // Batch x miss-rate sweep (fused and separate): the data a cost model is fitted to and checked on. The GPU time
    // of a call, as the decode step's CUDA graph sees it: graphs of (restore the state; call) pairs minus graphs of
    // the restores alone. Per-call event timing would add the host's launch latency (4-6 us here, and jittery),
    // which a graph-replayed decode step never pays. Every bed has n ~ 1M > H: the slow path, which walks the H slots.
    auto sweep_point = [&](int32_t B, int32_t h, double miss) {
      SwapInBed bed(B, h, K, miss, o.seed + 100 + uint64_t(B) + (h == H ? 0 : uint64_t(h)));
      const double bytes = double(bed.misses) * kRowBytes;
      // The ceiling timed the same way: same-size bulk copies replayed from a graph.
      const double ceiling = bytes > 0 ? bulk_graph_gbps(int64_t(bytes), true, 8, 5) : 0;
      for (CopyMode m : {CopyMode::kFused, CopyMode::kSeparate}) {
        if (miss == 0.0 && m == CopyMode::kSeparate) continue;
        const double us = graph_minus_restore_us(
            std::max(5, o.iters / 2), [&](cudaStream_t st) { bed.restore(st); },
            [&](cudaStream_t st) { swap_in_device(bed.args(true), m, o.kernels.swap_in, st); });
        bed.check();
        BenchRow r = make_row("swap-in-sweep", fmt::format("B={} H={} K={} miss={:.0f}%", B, h, K, miss * 100),
                              copy_mode_name(m), us, bytes, ceiling);
        r.batch = B;
        r.miss_rate = miss;
        r.rows = bed.misses;
        rows.push_back(r);
      }
    };
    for (int32_t B : {1, 4, 16, 64, 128})
      for (double miss : {0.0, 0.05, 0.2, 0.5}) sweep_point(B, H, miss);
    // H sweep: the plan's per-slot cost (the walk of H slots) and the fused copy's slice bound (E / blocks per
    // request grows with H) at two batches of each swap-in kernel (1, 4: cluster; 16, 64: one block per row), same
    // miss rates. `bench --calibrate` fits H 2048 and 16384 with the sweep's 4096 and holds 8192 out. About 10 s.
    for (int32_t h : {2048, 8192, 16384})
      for (int32_t B : {1, 4, 16, 64})
        for (double miss : {0.0, 0.05, 0.2, 0.5}) sweep_point(B, h, miss);
  }
  return rows;
}

std::vector<BenchRow> bench_gather(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  for (int64_t N : {int64_t(2048), int64_t(32768), int64_t(262144)}) {
    std::mt19937_64 g(o.seed + uint64_t(N));
    std::vector<int64_t> hr(N), dr(2 * N);
    for (auto& h : hr) h = int64_t(below(g, kPoolRows));
    for (int64_t i = 0; i < 2 * N; ++i) dr[i] = i;
    for (int64_t i = 2 * N; i > 1; --i) std::swap(dr[i - 1], dr[below(g, uint64_t(i))]);
    dr.resize(N);
    DeviceArray<int64_t> d_hr(N), d_dr(N);
    d_hr.upload(hr);
    d_dr.upload(dr);
    DeviceArray<uint8_t> pool(size_t(2 * N) * kRowBytes);
    RowCopyDeviceArgs a;
    a.count = N;
    a.row_bytes = kRowBytes;
    a.host_row = d_hr.get();
    a.device_row = d_dr.get();
    a.host_pool = host_pool();
    a.device_pool = pool.get();
    a.host_row_on_host = hr.data();
    a.device_row_on_host = dr.data();
    const double bytes = double(N) * kRowBytes;
    const double ceiling = bulk_gbps(int64_t(bytes), true);
    const std::string cfg = fmt::format("{} random rows x 1152 B", N);
    // Per call (event pair and host sync around each call, kernel and ceiling alike): launch cost included.
    const double us = time_us(o.iters, [] {}, [&] { gather_device(a, CopyMode::kFused); });
    rows.push_back(make_row("gather", cfg, "zero-copy", us, bytes, ceiling));
    rows.back().rows = N;
    // The target's rows: kernel and same-size bulk cudaMemcpy both replayed from a CUDA graph.
    const int calls = graph_calls(bytes);
    const double g_ceiling = bulk_graph_gbps(int64_t(bytes), true, calls, o.iters);
    const double g_us = graph_us(calls, o.iters, [&](cudaStream_t st) { gather_device(a, CopyMode::kFused, st); });
    rows.push_back(make_row("gather", cfg, "graph", g_us, bytes, g_ceiling, ">= 92% of bulk H2D (graph)", 0.92));
    rows.back().rows = N;
    if (!o.copy_engine) continue;
    const double ce = time_us(N > 32768 ? 2 : 3, [] {}, [&] { gather_device(a, CopyMode::kCopyEngine); });
    rows.push_back(make_row("gather", cfg, "copy-engine", ce, bytes, ceiling));
    rows.back().rows = N;
  }
  return rows;
}

std::vector<BenchRow> bench_backup(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  for (int64_t R : {int64_t(1), int64_t(16), int64_t(64), int64_t(256), int64_t(1024)}) {
    const int64_t N = R * kLayers;
    std::mt19937_64 g(o.seed + uint64_t(R));
    std::vector<int64_t> hr(kPoolRows), dr(N);
    for (int64_t i = 0; i < kPoolRows; ++i) hr[i] = i;
    for (int64_t i = 0; i < N; ++i) {  // distinct host rows: partial shuffle
      std::swap(hr[i], hr[i + int64_t(below(g, uint64_t(kPoolRows - i)))]);
      dr[i] = i * 8 + int64_t(below(g, 8));  // the reserved slot of each (request, layer): scattered on the device
    }
    hr.resize(N);
    DeviceArray<int64_t> d_hr(N), d_dr(N);
    d_hr.upload(hr);
    d_dr.upload(dr);
    DeviceArray<uint8_t> pool(size_t(N) * 8 * kRowBytes);
    HS_CUDA_CHECK(cudaMemset(pool.get(), 0x5A, size_t(N) * 8 * kRowBytes));
    RowCopyDeviceArgs a;
    a.count = N;
    a.row_bytes = kRowBytes;
    a.host_row = d_hr.get();
    a.device_row = d_dr.get();
    a.host_pool = host_pool();
    a.device_pool = pool.get();
    a.host_row_on_host = hr.data();
    a.device_row_on_host = dr.data();
    const double bytes = double(N) * kRowBytes;
    const double ceiling = bulk_gbps(int64_t(bytes), false);
    const std::string cfg = fmt::format("{} requests x {} layers", R, kLayers);
    // Per call (event pair and host sync around each call, kernel and ceiling alike): launch cost included.
    const double us = time_us(o.iters, [] {}, [&] { backup_device(a, CopyMode::kFused); });
    rows.push_back(make_row("backup", cfg, "zero-copy", us, bytes, ceiling));
    rows.back().rows = N;
    rows.back().batch = int32_t(R);
    // The target's rows: kernel and same-size bulk cudaMemcpy both replayed from a CUDA graph.
    const int calls = graph_calls(bytes);
    const double g_ceiling = bulk_graph_gbps(int64_t(bytes), false, calls, o.iters);
    const double g_us = graph_us(calls, o.iters, [&](cudaStream_t st) { backup_device(a, CopyMode::kFused, st); });
    rows.push_back(make_row("backup", cfg, "graph", g_us, bytes, g_ceiling, ">= 90% of bulk D2H (graph)", 0.9));
    rows.back().rows = N;
    rows.back().batch = int32_t(R);
    if (R <= 256 && o.copy_engine) {
      const double ce = time_us(3, [] {}, [&] { backup_device(a, CopyMode::kCopyEngine); });
      rows.push_back(make_row("backup", cfg, "copy-engine", ce, bytes, ceiling));
      rows.back().rows = N;
      rows.back().batch = int32_t(R);
    }
  }
  return rows;
}

std::vector<BenchRow> bench_bulk(const BenchOptions& o) {
  std::vector<BenchRow> rows;
  constexpr int64_t kBytes = int64_t(256) << 20;  // large enough that the fixed cost is < 0.1 %
  for (bool h2d : {true, false}) {
    const double gbps = bulk_gbps(kBytes, h2d, std::max(3, o.iters / 4));
    const double us = double(kBytes) / (gbps * 1e9) * 1e6;
    rows.push_back(make_row("bulk", "256 MiB pinned cudaMemcpy", h2d ? "h2d" : "d2h", us, double(kBytes), gbps));
  }
  return rows;
}

}  // namespace hisparse::bench
