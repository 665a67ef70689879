"""The terms of SGLang's HiSparse decode path that the op tables lacked: the attention HiSparse replaces, the
IndexShare prefetch copy, and the per-step new-token backup (docs/sglang_decode_path.md §2-§4, §7).

- `dense_decode_attention`: the OFF arm's attention. On Hopper with bf16 KV SGLang runs fa3 with a page table of
  the K selected positions (page size 1), so it attends min(n, K) rows at the real head count, unpadded. fa3 is not
  built here, so FlashMLA's dense bf16 decode (`flash_mla_with_kvcache` without indices, 64-token pages) over the same
  number of rows is timed as a **stand-in** (the impl column says so): both are split-KV MLA decode kernels that read
  each attended row once. `context` = rows attended (K = 2048 is the OFF arm at any longer context).
- `prefetch_copy`: the launch shape of SGLang's `copy_cache_planned_mla` (a fixed grid of 4 CTAs x 1024 threads, one
  warp per planned row, 16-byte non-coherent loads from pinned host memory through its device pointer). The kernel is
  this project's own, written from that description (SGLang's JIT source is not built here): a **shape stand-in**.
  Rows are `batch x misses` of one skip layer. It is timed alone and beside the FlashMLA sparse decode of the main
  stream (fork/join inside one CUDA graph), which is how the prefetch overlaps a shared layer's attention.
- `backup_all_layers`: the per-step new-token backup (`jit_transfer_hicache_all_layer_mla`): B tokens x L layers of
  one row each, device -> pinned host, one warp per row. Also a shape stand-in.
"""

import torch

from timing import time_op

PAGE = 64

_COPY_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

// One warp moves one row; lanes take 16-byte words. ld.global.nc mirrors a read-only pass over host memory.
__device__ __forceinline__ void warp_copy_row(const uint4* __restrict__ src, uint4* __restrict__ dst, int words) {
  int lane = threadIdx.x & 31;
  for (int w = lane; w < words; w += 32) dst[w] = __ldg(src + w);
}

__global__ void planned_copy_kernel(const uint8_t* __restrict__ host, uint8_t* __restrict__ dev,
                                    const int64_t* __restrict__ src_rows, const int64_t* __restrict__ dst_rows,
                                    int n, int row_bytes) {
  int warps = (blockDim.x >> 5) * gridDim.x;
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int words = row_bytes / 16;
  for (int i = warp; i < n; i += warps)
    warp_copy_row(reinterpret_cast<const uint4*>(host + src_rows[i] * row_bytes),
                  reinterpret_cast<uint4*>(dev + dst_rows[i] * row_bytes), words);
}

void planned_copy(torch::Tensor host, torch::Tensor dev, torch::Tensor src_rows, torch::Tensor dst_rows,
                  int64_t n, int64_t row_bytes, int64_t ctas, int64_t threads) {
  uint8_t* host_dev_ptr = nullptr;
  TORCH_CHECK(cudaHostGetDevicePointer((void**)&host_dev_ptr, host.data_ptr(), 0) == cudaSuccess,
              "host tensor is not pinned");
  auto stream = c10::cuda::getCurrentCUDAStream();
  planned_copy_kernel<<<ctas, threads, 0, stream>>>(host_dev_ptr, dev.data_ptr<uint8_t>(),
      src_rows.data_ptr<int64_t>(), dst_rows.data_ptr<int64_t>(), (int)n, (int)row_bytes);
  TORCH_CHECK(cudaGetLastError() == cudaSuccess, "planned_copy launch failed");
}

__global__ void backup_kernel(const uint8_t* __restrict__ dev, uint8_t* __restrict__ host,
                              const int64_t* __restrict__ rows, int n, int row_bytes) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= n) return;
  warp_copy_row(reinterpret_cast<const uint4*>(dev + rows[warp] * row_bytes),
                reinterpret_cast<uint4*>(host + (int64_t)warp * row_bytes), row_bytes / 16);
}

void backup_rows(torch::Tensor dev, torch::Tensor host, torch::Tensor rows, int64_t n, int64_t row_bytes) {
  uint8_t* host_dev_ptr = nullptr;
  TORCH_CHECK(cudaHostGetDevicePointer((void**)&host_dev_ptr, host.data_ptr(), 0) == cudaSuccess,
              "host tensor is not pinned");
  auto stream = c10::cuda::getCurrentCUDAStream();
  int threads = 1024, ctas = (int)((n * 32 + threads - 1) / threads);
  backup_kernel<<<ctas, threads, 0, stream>>>(dev.data_ptr<uint8_t>(), host_dev_ptr, rows.data_ptr<int64_t>(),
                                              (int)n, (int)row_bytes);
  TORCH_CHECK(cudaGetLastError() == cudaSuccess, "backup launch failed");
}
"""

_CPP_DECL = """
void planned_copy(torch::Tensor host, torch::Tensor dev, torch::Tensor src_rows, torch::Tensor dst_rows,
                  int64_t n, int64_t row_bytes, int64_t ctas, int64_t threads);
void backup_rows(torch::Tensor dev, torch::Tensor host, torch::Tensor rows, int64_t n, int64_t row_bytes);
"""


def load_copy_module(build_dir):
    import os
    from torch.utils.cpp_extension import load_inline
    os.makedirs(build_dir, exist_ok=True)
    return load_inline(name="hisparse_path_copies", cpp_sources=_CPP_DECL, cuda_sources=_COPY_SRC,
                       functions=["planned_copy", "backup_rows"], build_directory=build_dir,
                       extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)


def dense_attention(flash_mla, s, heads, batches, contexts, log, budget):
    """OFF arm: FlashMLA dense bf16 decode over `context` cached rows per request (stand-in for fa3)."""
    for ctx in contexts:
        for batch in batches:
            if budget.expired():
                log("decode_path dense: time budget spent, stopping")
                return
            blocks = (ctx + PAGE - 1) // PAGE
            if batch * blocks * PAGE * s.d_qk * 2 > 24 << 30:
                continue
            try:
                cache = torch.randn(batch * blocks, PAGE, 1, s.d_qk, device="cuda", dtype=torch.bfloat16)
                table = torch.randperm(batch * blocks, device="cuda", dtype=torch.int32).view(batch, blocks)
                seqlens = torch.full((batch,), ctx, device="cuda", dtype=torch.int32)
                q = torch.randn(batch, 1, heads, s.d_qk, device="cuda", dtype=torch.bfloat16)
                meta, _ = flash_mla.get_mla_metadata()
                fn = lambda: flash_mla.flash_mla_with_kvcache(q, cache, table, seqlens, 512, meta, None,  # noqa: E731
                                                              s.d_qk ** -0.5, False, False)
                t, why = time_op(fn)
            except Exception as e:  # noqa: BLE001
                log(f"decode_path dense {s.name} h{heads} b{batch} ctx{ctx}: FAILED {e!r}"[:400])
                continue
            finally:
                torch.cuda.empty_cache()
            if why:
                t["note"] = why
            yield "dense_decode_attention", dict(model=s.name, kv="bf16", heads=heads, d_qk=s.d_qk,
                                                 impl="flashmla-dense-standin-for-fa3"), batch, ctx, t


def prefetch_copy(mod, row_bytes_set, row_counts, log, budget):
    """The 4 x 1024 planned copy alone, at `rows` = batch x misses of one skip layer."""
    host_rows = 1 << 16
    for rb in row_bytes_set:
        host = torch.randint(0, 255, (host_rows, rb), dtype=torch.uint8).pin_memory()
        dev = torch.empty(host_rows, rb, device="cuda", dtype=torch.uint8)
        for n in row_counts:
            if budget.expired():
                return
            src = torch.randperm(host_rows, device="cuda")[:n].to(torch.int64)
            dst = torch.randperm(host_rows, device="cuda")[:n].to(torch.int64)
            t, why = time_op(lambda: mod.planned_copy(host, dev, src, dst, n, rb, 4, 1024))
            if why:
                t["note"] = why
            yield "prefetch_copy", dict(row_bytes=rb, ctas=4, threads=1024, impl="shape-standin"), n, n * rb, t


def prefetch_overlap(mod, flash_mla, s, heads, batches, misses, log, budget, row_bytes=1152):
    """Main stream: the FlashMLA sparse decode of one shared layer; side stream: that layer's planned copy.

    Yields three rows per point: attention alone, copy alone, and both forked and joined inside one graph, so the
    table holds what the prefetch adds to the main stream when it does overlap.
    """
    pool_rows = 1 << 16
    pool = torch.randn(pool_rows, 1, s.d_qk, device="cuda", dtype=torch.bfloat16)
    host = torch.randint(0, 255, (pool_rows, row_bytes), dtype=torch.uint8).pin_memory()
    dev = torch.empty(pool_rows, row_bytes, device="cuda", dtype=torch.uint8)
    side = torch.cuda.Stream()
    for batch in batches:
        for miss in misses:
            if budget.expired():
                return
            n = int(round(batch * s.top_k * miss))
            q = torch.randn(batch, heads, s.d_qk, device="cuda", dtype=torch.bfloat16)
            qpad = torch.zeros(batch, max(heads, 64), s.d_qk, device="cuda", dtype=torch.bfloat16)
            idx = torch.stack([torch.randperm(pool_rows, device="cuda")[:s.top_k] for _ in range(batch)]).int()
            idx = idx.view(batch, 1, s.top_k)
            src = torch.randperm(pool_rows, device="cuda")[:max(n, 1)].to(torch.int64)
            dst = torch.randperm(pool_rows, device="cuda")[:max(n, 1)].to(torch.int64)

            def attn():
                qpad[:, :heads].copy_(q)
                return flash_mla.flash_mla_sparse_fwd(qpad, pool, idx, s.d_qk ** -0.5, 512)[0][:, :heads]

            def copy():
                mod.planned_copy(host, dev, src, dst, n, row_bytes, 4, 1024)

            def both():
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    copy()
                attn()
                torch.cuda.current_stream().wait_stream(side)

            params = dict(model=s.name, heads=heads, padded=max(heads, 64), topk=s.top_k, miss=miss,
                          row_bytes=row_bytes, impl="flashmla-sparse+shape-standin-copy")
            for what, fn in (("attention", attn), ("copy", copy), ("overlapped", both)):
                try:
                    t, why = time_op(fn)
                except Exception as e:  # noqa: BLE001
                    log(f"decode_path overlap {what} b{batch} miss{miss}: FAILED {e!r}"[:400])
                    continue
                if why:
                    t["note"] = why
                yield "prefetch_overlap", dict(params, part=what), batch, n * row_bytes, t


def backup(mod, layers_set, batches, log, budget, row_bytes=1152):
    """The once-per-step backup of the newest token of each request in every layer (device -> pinned host)."""
    for layers in layers_set:
        for batch in batches:
            if budget.expired():
                return
            n = layers * batch
            dev = torch.randn(max(n, 1) * row_bytes // 2, device="cuda", dtype=torch.bfloat16).view(torch.uint8)
            dev = dev.view(max(n, 1), row_bytes)
            host = torch.empty(n, row_bytes, dtype=torch.uint8).pin_memory()
            rows = torch.randperm(max(n, 1), device="cuda")[:n].to(torch.int64)
            t, why = time_op(lambda: mod.backup_rows(dev, host, rows, n, row_bytes))
            if why:
                t["note"] = why
            yield "backup_all_layers", dict(layers=layers, row_bytes=row_bytes, impl="shape-standin"), batch, \
                n * row_bytes, t


def collect(flash_mla, models, batches, build_dir, log, budget):
    """Every decode-path row, for the models given (GLM-5's shapes stand for GLM-5.1 and 5.2: same dims)."""
    mod = None
    try:
        mod = load_copy_module(build_dir)
    except Exception as e:  # noqa: BLE001
        log(f"decode_path: copy module build FAILED {e!r}"[:600])
    small = [b for b in batches if b <= 64]
    for s in models:
        if s.layout != "v32":
            continue  # DeepSeek-V4 keeps HiSparse's compressed path; its dense arm is not this kernel
        for op, p, b, c, t in dense_attention(flash_mla, s, s.heads // 8, small, [2048, 8192, 32768],
                                              log, budget):
            yield op, p, b, c, 0, t, "flash_mla"
    if mod is None:
        return
    for op, p, n, nb, t in prefetch_copy(mod, (656, 1152), [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                                         log, budget):
        yield op, p, n, 0, nb, t, "torch"
    glm = [s for s in models if s.name.startswith("glm")]
    for s in glm[:1]:
        for op, p, b, nb, t in prefetch_overlap(mod, flash_mla, s, s.heads // 8, [1, 4, 16, 64], [0.05, 0.2],
                                                log, budget):
            yield op, p, b, 0, nb, t, "flash_mla"
    for op, p, b, nb, t in backup(mod, (61, 78), small, log, budget):
        yield op, p, b, 0, nb, t, "torch"
