// @brief The HiSparse V2 swap-in kernel (see swap_in_v2.h). One block per row, in four phases separated by barriers:
//  1. every entry is padding (-1), resident (outside [evicted_begin, evicted_end): slot H) or evicted; evicted
//     positions go into a shared-memory open-addressing table (position -> entry), >= 2 cells per entry so it never
//     fills;
//  2. every slot looks its position up: found = a hit, the slot is retained;
//  3. ranks: each thread counts the misses of a contiguous run of entries and the empty and stale free slots of a
//     contiguous run of slots, three threads scan the per-thread counts, so order is entry order and slot order;
//     the free-slot list is empty slots in slot order, then stale ones (SGLang's swap_in_plan_kernel does the same
//     with tl.cumsum);
//  4. the m-th miss takes the m-th free slot.
// Only integers: the table's layout depends on the order of insertion, but no output does.
#include "cuda/swap_in_v2.h"

#include <vector>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int32_t kUnassigned = -2;

__device__ __forceinline__ uint32_t home_cell(int32_t t, uint32_t mask) {
  return (static_cast<uint32_t>(t) * 0x9E3779B9u >> 7) & mask;
}

__global__ void __launch_bounds__(kThreads) swap_in_v2_kernel(int32_t top_k, int32_t H, int32_t table_cells,
                                                             const int32_t* __restrict__ selected,
                                                             const int32_t* __restrict__ evicted_end,
                                                             const int32_t* __restrict__ evicted_begin,
                                                             int32_t* __restrict__ slot_pos,
                                                             int32_t* __restrict__ slot_of,
                                                             int32_t* __restrict__ load_slot,
                                                             int32_t* __restrict__ load_pos,
                                                             long long* __restrict__ counters) {
  extern __shared__ int32_t smem[];
  int32_t* keys = smem;                         // [table_cells] position, -1 = empty
  int32_t* vals = keys + table_cells;           // [table_cells] entry
  int32_t* retained = vals + table_cells;       // [H]
  int32_t* free_list = retained + H;            // [H]
  int32_t* part = free_list + H;                // [3][kThreads] per-thread counts, then their exclusive scans
  __shared__ int32_t total[3];                  // misses, empty free, stale free
  __shared__ int32_t count[3];                  // selected, resident, hits

  const int32_t b = blockIdx.x;
  const int tid = threadIdx.x;
  const uint32_t mask = static_cast<uint32_t>(table_cells - 1);
  const int32_t* sel = selected + static_cast<int64_t>(b) * top_k;
  int32_t* pos = slot_pos + static_cast<int64_t>(b) * H;
  int32_t* out = slot_of + static_cast<int64_t>(b) * top_k;
  const int32_t E = evicted_end[b];
  const int32_t B = evicted_begin[b];

  for (int32_t i = tid; i < table_cells; i += kThreads) keys[i] = -1;
  for (int32_t s = tid; s < H; s += kThreads) retained[s] = 0;
  if (tid < 3) count[tid] = 0;
  __syncthreads();

  // 1. classify the entries; evicted ones into the table.
  for (int32_t k = tid; k < top_k; k += kThreads) {
    const int32_t t = sel[k];
    if (t < 0) {
      out[k] = -1;
      continue;
    }
    atomicAdd(&count[0], 1);
    if (t >= E || t < B) {
      out[k] = H;
      atomicAdd(&count[1], 1);
      continue;
    }
    out[k] = kUnassigned;
    for (uint32_t h = home_cell(t, mask);; h = (h + 1) & mask) {
      if (atomicCAS(&keys[h], -1, t) == -1) {
        vals[h] = k;
        break;
      }
    }
  }
  __syncthreads();

  // 2. hits: a slot whose (evicted) position is selected keeps it.
  for (int32_t s = tid; s < H; s += kThreads) {
    const int32_t p = pos[s];
    if (p < 0 || p >= E || p < B) continue;
    for (uint32_t h = home_cell(p, mask); keys[h] != -1; h = (h + 1) & mask) {
      if (keys[h] == p) {
        out[vals[h]] = s;
        retained[s] = 1;
        atomicAdd(&count[2], 1);
        break;
      }
    }
  }
  __syncthreads();

  // 3. per-thread counts over contiguous runs, scanned by three threads.
  const int32_t lane_run = (top_k + kThreads - 1) / kThreads;
  const int32_t slot_run = (H + kThreads - 1) / kThreads;
  const int32_t k0 = min(top_k, tid * lane_run), k1 = min(top_k, k0 + lane_run);
  const int32_t s0 = min(H, tid * slot_run), s1 = min(H, s0 + slot_run);
  int32_t misses = 0, empties = 0, stales = 0;
  for (int32_t k = k0; k < k1; ++k) misses += out[k] == kUnassigned;
  for (int32_t s = s0; s < s1; ++s) {
    if (retained[s]) continue;
    empties += pos[s] < 0;
    stales += pos[s] >= 0;
  }
  part[tid] = misses;
  part[kThreads + tid] = empties;
  part[2 * kThreads + tid] = stales;
  __syncthreads();
  if (tid < 3) {
    int32_t* row = part + tid * kThreads;
    int32_t run = 0;
    for (int i = 0; i < kThreads; ++i) {
      const int32_t c = row[i];
      row[i] = run;
      run += c;
    }
    total[tid] = run;
  }
  __syncthreads();
  int32_t next_empty = part[kThreads + tid];
  int32_t next_stale = total[1] + part[2 * kThreads + tid];
  for (int32_t s = s0; s < s1; ++s) {
    if (retained[s]) continue;
    if (pos[s] < 0) {
      free_list[next_empty++] = s;
    } else {
      free_list[next_stale++] = s;
    }
  }
  __syncthreads();

  // 4. the m-th miss takes the m-th free slot (free >= misses: H >= top_k and the positions held are distinct).
  const int32_t nfree = total[1] + total[2];
  int32_t m = part[tid];
  for (int32_t k = k0; k < k1; ++k) {
    if (out[k] != kUnassigned) continue;
    const int32_t s = m < nfree ? free_list[m] : -1;
    out[k] = s;
    load_slot[static_cast<int64_t>(b) * top_k + m] = s;
    load_pos[static_cast<int64_t>(b) * top_k + m] = sel[k];
    if (s >= 0) pos[s] = sel[k];
    ++m;
  }
  if (tid == 0) {
    long long* c = counters + static_cast<int64_t>(b) * kSwapInV2CounterWords;
    c[0] = count[0];
    c[1] = count[1];
    c[2] = count[2];
    c[3] = total[0];
  }
}

template <class T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(size_t n) { HS_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(T))); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

}  // namespace

void swap_in_v2(const SwapInV2Batch& batch) {
  const int32_t R = batch.rows, K = batch.top_k, H = batch.H;
  if (R <= 0) return;
  if (K < 1 || H < K) throw_error("cuda swap_in_v2: top_k {} and H {}: expected 1 <= top_k <= H", K, H);
  int32_t cells = 2;
  while (cells < 2 * K) cells *= 2;
  const size_t smem = (2 * static_cast<size_t>(cells) + 2 * static_cast<size_t>(H) + 3 * kThreads) * sizeof(int32_t);
  int device = 0, optin = 0;
  HS_CUDA_CHECK(cudaGetDevice(&device));
  HS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > static_cast<size_t>(optin)) {
    throw_error("cuda swap_in_v2: top_k {} and H {} need {} bytes of shared memory per block, the device allows {}", K,
                H, smem, optin);
  }
  HS_CUDA_CHECK(cudaFuncSetAttribute(swap_in_v2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)));
  const size_t rk = static_cast<size_t>(R) * K, rh = static_cast<size_t>(R) * H;
  DeviceArray<int32_t> sel(rk), end(R), begin(R), pos(rh), slot_of(rk), load_slot(rk), load_pos(rk);
  DeviceArray<long long> counters(static_cast<size_t>(R) * kSwapInV2CounterWords);
  HS_CUDA_CHECK(cudaMemcpy(sel.p, batch.selected, rk * sizeof(int32_t), cudaMemcpyHostToDevice));
  HS_CUDA_CHECK(cudaMemcpy(end.p, batch.evicted_end, R * sizeof(int32_t), cudaMemcpyHostToDevice));
  if (batch.evicted_begin) {
    HS_CUDA_CHECK(cudaMemcpy(begin.p, batch.evicted_begin, R * sizeof(int32_t), cudaMemcpyHostToDevice));
  } else {
    HS_CUDA_CHECK(cudaMemset(begin.p, 0, R * sizeof(int32_t)));
  }
  HS_CUDA_CHECK(cudaMemcpy(pos.p, batch.slot_pos, rh * sizeof(int32_t), cudaMemcpyHostToDevice));
  // Loads past a row's miss count stay -1 (the reference's lists are only as long as its misses).
  HS_CUDA_CHECK(cudaMemset(load_slot.p, 0xFF, rk * sizeof(int32_t)));
  HS_CUDA_CHECK(cudaMemset(load_pos.p, 0xFF, rk * sizeof(int32_t)));
  swap_in_v2_kernel<<<R, kThreads, smem>>>(K, H, cells, sel.p, end.p, begin.p, pos.p, slot_of.p, load_slot.p,
                                            load_pos.p, counters.p);
  HS_CUDA_CHECK_LAUNCH();
  HS_CUDA_CHECK(cudaMemcpy(batch.slot_pos, pos.p, rh * sizeof(int32_t), cudaMemcpyDeviceToHost));
  HS_CUDA_CHECK(cudaMemcpy(batch.slot_of, slot_of.p, rk * sizeof(int32_t), cudaMemcpyDeviceToHost));
  HS_CUDA_CHECK(cudaMemcpy(batch.load_slot, load_slot.p, rk * sizeof(int32_t), cudaMemcpyDeviceToHost));
  HS_CUDA_CHECK(cudaMemcpy(batch.load_pos, load_pos.p, rk * sizeof(int32_t), cudaMemcpyDeviceToHost));
  std::vector<long long> c(static_cast<size_t>(R) * kSwapInV2CounterWords);
  HS_CUDA_CHECK(cudaMemcpy(c.data(), counters.p, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < c.size(); ++i) batch.counters[i] = c[i];
}

}  // namespace hisparse::cuda
