#!/usr/bin/env python3
"""Measures the two per-step terms of the cost model that sit outside the decode CUDA graph (scenarios/cost_model/
*.yaml `sampling` and `dp_batch_sync`; docs/cost_model.md, "The fixed part of a step"), on one GPU machine:

  sampling  SGLang's Sampler after the graph replay (python/sglang/srt/layers/sampler.py): with every request greedy
            (temperature 0, as bench_serving runs) it is one argmax over the [B, vocab] float32 logits; with sampling
            on it is softmax + top-k/top-p sampling (flashinfer's sampling kernels when importable, else the torch
            path SGLang falls back to: sort, cumulative sum, mask, multinomial). Both run eagerly, so a call costs
            its kernels plus their host launches: timed as wall time over --iters calls between synchronisations
            (what the step's critical path pays), and as GPU time between CUDA events.
  dp_sync   Attention data parallel: before each step every rank all-gathers a (dp, tp, 6) int64 tensor of batch
            facts (SGLang's MLPSyncBatchInfo.all_gather in scheduler_dp_attn_mixin.py) over the TP group's CPU (gloo)
            group when the overlap scheduler is on. Timed here with --ranks processes on this machine's CPU, gloo
            over loopback as on one node, median of --iters calls after warm-up, for each rank count.

    python scripts/measure_host_terms.py --csv $OUT/host_terms.csv
One CSV row per measurement (term, variant, batch or ranks, median and p90 in microseconds, what was timed).
"""
import argparse
import os
import statistics
import time


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--vocab", type=int, default=154880, help="logit columns (GLM-5: 154,880; DeepSeek-V3.2: 129,280)")
    ap.add_argument("--batches", default="1,8,32,64,128,256")
    ap.add_argument("--ranks", default="2,4,8,16", help="process counts for the dp_sync all-gather")
    ap.add_argument("--iters", type=int, default=200)
    return ap.parse_args(argv)


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def time_calls(torch, fn, iters):
    """Wall time per call (host launches included) and GPU time per call (CUDA events), microseconds."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    walls, gpus = [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        t0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        end.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6)
        gpus.append(start.elapsed_time(end) * 1e3)
    return walls, gpus


def sampling_rows(args):
    import torch

    rows = []
    device = torch.device("cuda")
    try:
        from flashinfer.sampling import top_k_top_p_sampling_from_probs  # SGLang's default sampling backend

        backend = "flashinfer"
    except Exception:  # not installed on the machine: SGLang's torch fallback
        top_k_top_p_sampling_from_probs = None
        backend = "torch"
    for b in [int(x) for x in args.batches.split(",")]:
        logits = torch.randn(b, args.vocab, device=device, dtype=torch.float32)

        def greedy():
            return torch.argmax(logits, dim=-1)

        top_k = torch.full((b,), 20, device=device, dtype=torch.int32)
        top_p = torch.full((b,), 0.95, device=device, dtype=torch.float32)

        def sample():
            probs = torch.softmax(logits / 0.7, dim=-1)
            if top_k_top_p_sampling_from_probs is not None:
                return top_k_top_p_sampling_from_probs(probs, top_k, top_p)
            sorted_p, idx = torch.sort(probs, dim=-1, descending=True)
            cum = torch.cumsum(sorted_p, dim=-1)
            sorted_p[(cum - sorted_p) > top_p.unsqueeze(1)] = 0.0
            sorted_p[torch.arange(args.vocab, device=device).unsqueeze(0) >= top_k.unsqueeze(1)] = 0.0
            pick = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1)
            return torch.gather(idx, 1, pick).squeeze(1)

        for variant, fn in (("greedy_argmax", greedy), (f"top_k_top_p_{backend}", sample)):
            walls, gpus = time_calls(torch, fn, args.iters)
            rows.append(("sampling", variant, b, statistics.median(walls), pct(walls, 0.9), statistics.median(gpus),
                         "wall per call incl. host launch; gpu_us between CUDA events"))
            print(f"sampling {variant} B={b}: wall {statistics.median(walls):.1f} us, gpu {statistics.median(gpus):.1f} us",
                  flush=True)
    return rows


def _gather_worker(rank, world, port, iters, queue):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    local = torch.arange(6, dtype=torch.int64) + rank
    out = torch.empty(world * 6, dtype=torch.int64)
    for _ in range(20):
        dist.all_gather_into_tensor(out, local)
    times = []
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_gather_into_tensor(out, local)
        times.append((time.perf_counter() - t0) * 1e6)
    if rank == 0:
        queue.put(times)
    dist.destroy_process_group()


def dp_sync_rows(args):
    import torch.multiprocessing as mp

    rows = []
    ctx = mp.get_context("spawn")
    for i, world in enumerate(int(x) for x in args.ranks.split(",")):
        queue = ctx.Queue()
        procs = [ctx.Process(target=_gather_worker, args=(r, world, 29600 + i, args.iters, queue)) for r in range(world)]
        for p in procs:
            p.start()
        times = queue.get(timeout=300)
        for p in procs:
            p.join(timeout=60)
        rows.append(("dp_batch_sync", "gloo_all_gather_6xint64", world, statistics.median(times), pct(times, 0.9), "",
                     "rank 0's all_gather_into_tensor after a barrier, gloo over loopback"))
        print(f"dp_sync gloo all-gather, {world} ranks: median {statistics.median(times):.1f} us, "
              f"p90 {pct(times, 0.9):.1f} us", flush=True)
    return rows


def main(argv=None):
    args = parse_args(argv)
    import torch

    rows = sampling_rows(args) + dp_sync_rows(args)
    with open(args.csv, "w") as f:
        f.write(f"# device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; vocab {args.vocab}; "
                f"iters {args.iters}\n")
        f.write("term,variant,batch_or_ranks,median_us,p90_us,gpu_median_us,what\n")
        for r in rows:
            gpu = f"{r[5]:.2f}" if r[5] != "" else ""
            f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.2f},{r[4]:.2f},{gpu},{r[6]}\n")
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
