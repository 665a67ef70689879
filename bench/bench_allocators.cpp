// @brief Allocator throughput (google/benchmark): alloc/free operations per second for each cpu_ref pool.
//
// Run: build/<dir>/bench/bench_allocators [--benchmark_min_time=0.2]
// Each benchmark reports ops/s (allocator calls: alloc, alloc_extend, alloc_decode, free, ...) and items/s
// (tokens allocated or freed). No bytes move here: these are pure bookkeeping costs.
#include <benchmark/benchmark.h>

#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse::cpu_ref;

namespace {

void set_rates(benchmark::State& state, int64_t ops, int64_t tokens) {
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(tokens);
}

// Token allocator: alloc n, then free them (to the release list, merged when the free list runs dry).
void BM_TokenAllocFree(benchmark::State& state) {
  const int64_t n = state.range(0);
  TokenToKVPoolAllocator a(1 << 20);
  int64_t ops = 0;
  for (auto _ : state) {
    std::vector<int64_t> x = a.alloc(n);
    benchmark::DoNotOptimize(x.data());
    a.free(x);
    ops += 2;
  }
  set_rates(state, ops, ops / 2 * n * 2);
}
BENCHMARK(BM_TokenAllocFree)->Arg(1)->Arg(64)->Arg(4096);

// Paged allocator, prefill: a batch of `batch` requests extends 0 → 1000 tokens (15 whole pages + a partial
// page of 40 each, page 64), then each request frees its tokens.
void BM_PagedExtend(benchmark::State& state) {
  const int64_t batch = state.range(0);
  constexpr int64_t kLen = 1000;
  PagedTokenToKVPoolAllocator a(1 << 22, 64);
  std::vector<ExtendRequest> reqs;
  for (int64_t r = 0; r < batch; ++r) reqs.push_back({0, kLen, -1, r});
  int64_t ops = 0;
  for (auto _ : state) {
    std::vector<int64_t> out = a.alloc_extend(reqs);
    for (int64_t r = 0; r < batch; ++r) a.free(out.data() + r * kLen, kLen, r);
    ops += 1 + batch;
  }
  set_rates(state, ops, (ops / (1 + batch)) * batch * kLen * 2);
}
BENCHMARK(BM_PagedExtend)->Arg(1)->Arg(32);

// Paged allocator, decode: `batch` requests grow one token per step (a new page every 64 steps); every 1024
// steps each request frees everything and restarts (the frees are timed too).
void BM_PagedDecode(benchmark::State& state) {
  const int64_t batch = state.range(0);
  PagedTokenToKVPoolAllocator a(1 << 22, 64);
  std::vector<std::vector<int64_t>> held(static_cast<size_t>(batch));
  std::vector<DecodeRequest> reqs(static_cast<size_t>(batch));
  int64_t ops = 0;
  int64_t tokens = 0;
  for (auto _ : state) {
    for (int64_t r = 0; r < batch; ++r) {
      auto& h = held[static_cast<size_t>(r)];
      reqs[static_cast<size_t>(r)] = {static_cast<int64_t>(h.size()) + 1, h.empty() ? -1 : h.back(), r};
    }
    std::vector<int64_t> out = a.alloc_decode(reqs);
    ++ops;
    tokens += batch;
    for (int64_t r = 0; r < batch; ++r) held[static_cast<size_t>(r)].push_back(out[static_cast<size_t>(r)]);
    if (held[0].size() == 1024) {
      for (int64_t r = 0; r < batch; ++r) {
        a.free(held[static_cast<size_t>(r)], r);
        held[static_cast<size_t>(r)].clear();
      }
      ops += batch;
      tokens += batch * 1024;
    }
  }
  set_rates(state, ops, tokens);
}
BENCHMARK(BM_PagedDecode)->Arg(1)->Arg(64);

// HiSparse pair: alloc_extend (logical + device + mapping) of 2048 tokens, then free (both pools + mapping).
void BM_HiSparsePairExtendFree(benchmark::State& state) {
  constexpr int64_t kLen = 2048;
  HiSparseTokenToKVPoolAllocator a(1 << 20, 64, 2);
  int64_t ops = 0;
  for (auto _ : state) {
    std::vector<int64_t> l = a.alloc_extend({{0, kLen, -1, 0}});
    a.free(l, 0);
    ops += 2;
  }
  set_rates(state, ops, ops / 2 * kLen * 2);
}
BENCHMARK(BM_HiSparsePairExtendFree);

// HiSparse request lifecycle through the coordinator: prefill 4096 + 1 tokens (past H = 4096, page 64),
// staged admission (buffer of H + page), 256 decode steps (logical alloc_decode, eager backup, reserved slot),
// finish. ops = 1 extend + 1 admit + 256 decodes + 1 finish per request.
void BM_HiSparseRequestLifecycle(benchmark::State& state) {
  constexpr int64_t kPrefill = 4097;
  constexpr int64_t kDecode = 256;
  ReqToTokenPool req_to_token(8, 8192);
  HiSparseTokenToKVPoolAllocator a(1 << 16, 64, 4);
  HostPool host(1 << 16, 4, 64, 61, 656, 8, 8192);
  HiSparseCoordinator coord(req_to_token, a, host, 4096);
  int64_t ops = 0;
  int64_t tokens = 0;
  for (auto _ : state) {
    const int64_t r = coord.add_request();
    coord.extend(r, kPrefill);
    benchmark::DoNotOptimize(coord.admit_staged(r));
    for (int64_t s = 0; s < kDecode; ++s) benchmark::DoNotOptimize(coord.decode(r));
    coord.finish(r);
    ops += 3 + kDecode;
    tokens += kPrefill + kDecode;
  }
  set_rates(state, ops, tokens);
}
BENCHMARK(BM_HiSparseRequestLifecycle);

}  // namespace

BENCHMARK_MAIN();
