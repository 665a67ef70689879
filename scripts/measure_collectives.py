#!/usr/bin/env python3
"""Times the collectives of a decode step on the GPUs of one node with NCCL (PyTorch), for the cost model's
all-to-all terms: the expert dispatch (fp8 hidden states, 1 byte each) and combine (bf16, 2 bytes) of B tokens per
GPU routed to top-k experts, as all_to_all_single with equal splits, and the all-reduce of B bf16 hidden states.

Run with torchrun on the GPU machine:
    torchrun --nproc_per_node 8 scripts/measure_collectives.py --csv collectives.csv
Rank 0 writes one CSV row per (op, batch): the median over --iters timed calls (CUDA events around each call, after
--warmup untimed ones and a barrier). NCCL's all-to-all is not DeepEP's low-latency kernel: its times bound
DeepEP's from above. Rank 0 also fits time = latency + bytes leaving a rank / bandwidth to the all-to-all rows
(least squares) and prints the cost-model terms they give (scenarios/cost_model/*.yaml: all_to_all_latency and
efficiency.nvlink against --nvlink-bytes-per-s, the hardware file's per-direction figure).
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)  # ms -> us
    # Every rank's median; the slowest rank is what a lockstep step waits for.
    med = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    return med.item()


def fit(rows, nvlink):
    """Least squares of us = latency + bytes_leaving / bandwidth over the dispatch and combine rows."""
    pts = [(leave, us) for op, _, _, _, leave, us in rows if op in ("dispatch", "combine")]
    n = len(pts)
    sx = sum(x for x, _ in pts)
    sy = sum(y for _, y in pts)
    sxx = sum(x * x for x, _ in pts)
    sxy = sum(x * y for x, y in pts)
    det = n * sxx - sx * sx
    if n < 2 or det <= 0:
        print("fit: fewer than two distinct payloads (one GPU?): no bandwidth to fit")
        return
    slope = (n * sxy - sx * sy) / det  # us per byte
    latency = (sy - slope * sx) / n
    worst = max(abs(latency + slope * x - y) / y for x, y in pts)
    bw = 1e6 / slope if slope > 0 else float("inf")
    print(f"fit: all-to-all = {latency:.1f} us + bytes leaving a rank / {bw / 1e9:.1f} GB/s "
          f"(max |error| {100 * worst:.1f}% over {n} rows)")
    print(f"cost-model terms: all_to_all_latency: {{value: {latency:.1f}us, kind: calibrated, ...}}; "
          f"efficiency.nvlink: {{value: {min(1.0, bw / nvlink):.3f}, kind: calibrated, ...}}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--hidden", type=int, default=7168)  # DeepSeek-V3.2 hidden size
    ap.add_argument("--topk", type=int, default=8)       # experts per token
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--nvlink-bytes-per-s", type=float, default=450e9)  # H200 per direction (hardware file)
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    rows = []
    for b in [int(x) for x in a.batches.split(",")]:
        for op, elem in (("dispatch", 1), ("combine", 2)):
            # Each token goes to top-k experts spread evenly over the ranks: B * topk * hidden * elem bytes per rank,
            # 1/world of it to each rank (its own share stays local).
            n = b * a.topk * a.hidden * elem
            n -= n % world
            src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            us = timed(lambda: dist.all_to_all_single(dst, src), a.iters, a.warmup)
            rows.append((op, world, b, n, n * (world - 1) // world, us))
        x = torch.randn(b, a.hidden, dtype=torch.bfloat16, device="cuda")
        us = timed(lambda: dist.all_reduce(x), a.iters, a.warmup)
        rows.append(("all_reduce", world, b, x.numel() * 2, x.numel() * 2, us))
    if rank == 0:
        name = torch.cuda.get_device_name()
        with open(a.csv + ".tmp", "w") as f:
            f.write("device,op,gpus,batch,bytes_per_rank,bytes_leaving_rank,median_us\n")
            for op, g, b, n, leave, us in rows:
                f.write(f'"{name}",{op},{g},{b},{n},{leave},{us:.3f}\n')
        os.replace(a.csv + ".tmp", a.csv)
        for r in rows:
            print(f"{r[0]:<10} gpus {r[1]} batch {r[2]:>4} bytes/rank {r[3]:>10} median {r[5]:9.2f} us")
        fit(rows, a.nvlink_bytes_per_s)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
