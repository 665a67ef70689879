#!/usr/bin/env python3
"""Times the collectives of a decode step on the GPUs of one node with NCCL (PyTorch), for the cost model's
intranode collective terms (scenarios/cost_model/*.yaml, sim/cost/terms/collective_cost.h):

  all_reduce   the TP all-reduce of B bf16 hidden states (B x hidden x 2 bytes), for each --hiddens (GLM-5 6144,
               DeepSeek-V3.2 7168) and each batch in --batches;
  dispatch     the expert dispatch of B tokens routed to top-k experts, fp8 (1 byte per element), as
               all_to_all_single with equal splits;
  combine      the same in bf16 (2 bytes per element).

Each op is timed two ways: `eager` (one call between CUDA events) and `graph` (--graph-calls calls captured in one CUDA
graph, replay time / calls), since SGLang's decode step runs its collectives inside a CUDA graph. Rank 0 writes one
CSV row per (mode, op, hidden, batch): the slowest rank's median over --iters timed runs after --warmup untimed ones.

Run on the 2-GPU machine:
    torchrun --nproc_per_node 2 scripts/measure_collectives.py --csv $OUT/collectives.csv
Rank 0 then fits time = latency + bytes over the link / bandwidth (least squares) to each op's rows, where the bytes
over the link are 2 (p - 1) / p x bytes for the ring all-reduce and (p - 1) / p x bytes for the all-to-all, and prints
the cost-model terms ready to paste as kind: measured (all_reduce_latency_intranode, all_to_all_latency_intranode) with
the bandwidth each fit implies as a fraction of --nvlink-bytes-per-s (efficiency.nvlink). NCCL is not what SGLang
runs at these sizes (its custom one-shot all-reduce, DeepEP's low-latency all-to-all): its times bound theirs from
above, and the printed source says so.
"""
import argparse
import os
import statistics


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="output CSV (rank 0 writes it)")
    ap.add_argument("--hiddens", default="6144,7168", help="hidden sizes, comma-separated (GLM-5, DeepSeek-V3.2)")
    ap.add_argument("--topk", type=int, default=8, help="experts per token (dispatch/combine payload)")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128,256", help="tokens per GPU, comma-separated")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--graph-calls", type=int, default=20, help="calls captured in one CUDA graph (graph mode)")
    ap.add_argument("--modes", default="eager,graph", help="eager, graph or both")
    ap.add_argument("--nvlink-bytes-per-s", type=float, default=450e9,
                    help="per GPU and direction (the hardware file's nvlink_bytes_per_s; H100/H200 450e9)")
    return ap.parse_args(argv)


def median_us(torch, dist, fn, iters, warmup, calls=1):
    """The slowest rank's median time of fn() in microseconds, divided by the calls one fn() makes."""
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
        times.append(start.elapsed_time(end) * 1e3 / calls)  # ms -> us per call
    med = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(med, op=dist.ReduceOp.MAX)  # a lockstep step waits for the slowest rank
    return med.item()


def graphed(torch, op, calls):
    """op captured `calls` times in one CUDA graph; returns the replay function (None when capture fails)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # NCCL wants a warm communicator before capture
        op()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            for _ in range(calls):
                op()
    except RuntimeError as e:  # an NCCL or PyTorch without collective capture
        print(f"graph capture failed ({e}); graph rows skipped")
        return None
    return g.replay


def fit(points):
    """Least squares of us = latency + link_bytes / bandwidth. Returns (latency us, bandwidth B/s, max rel error)."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    det = n * sxx - sx * sx
    if n < 2 or det <= 0:
        return None
    slope = (n * sxy - sx * sy) / det  # us per byte
    latency = (sy - slope * sx) / n
    worst = max(abs(latency + slope * x - y) / y for x, y in points)
    return latency, (1e6 / slope if slope > 0 else float("inf")), worst


def report(rows, device, world, nvlink):
    """Prints the fits per (mode, op kind) and the YAML to paste (from the graph rows when there are any)."""
    fits = {}
    for mode in sorted({r["mode"] for r in rows}):
        for kind, ops in (("all_reduce", ("all_reduce",)), ("all_to_all", ("dispatch", "combine"))):
            pts = [(r["link_bytes"], r["median_us"]) for r in rows if r["mode"] == mode and r["op"] in ops]
            f = fit(pts)
            if f is None:
                print(f"fit {mode} {kind}: fewer than two distinct payloads, no fit")
                continue
            fits[(mode, kind)] = f
            print(f"fit {mode:<5} {kind:<10} = {f[0]:6.1f} us + link bytes / {f[1] / 1e9:6.1f} GB/s "
                  f"(max |error| {100 * f[2]:.1f}% over {len(pts)} rows)")
    mode = "graph" if ("graph", "all_reduce") in fits else "eager"
    print(f"\n# Paste into scenarios/cost_model/sglang-hopper.yaml (fits of the {mode} rows, {world} x {device}):")
    for kind, term, runs_instead in (("all_reduce", "all_reduce_latency_intranode", "SGLang's custom all-reduce"),
                                     ("all_to_all", "all_to_all_latency_intranode", "DeepEP's low-latency kernels")):
        f = fits.get((mode, kind))
        if f is None:
            continue
        print(f"{term}:\n  value: {max(f[0], 0.0):.1f}us\n  kind: measured\n  source: >-\n"
              f"    NCCL {kind.replace('_', '-')} on {world} x {device} ({mode}-timed, scripts/measure_collectives.py): "
              f"intercept of latency + link bytes / {f[1] / 1e9:.0f} GB/s over batches 1-256 (max error "
              f"{100 * f[2]:.0f}%). SGLang runs {runs_instead} here: NCCL bounds it from above.")
    if (mode, "all_to_all") in fits:
        bw = fits[(mode, "all_to_all")][1]
        print(f"# implied all-to-all link efficiency: {min(1.0, bw / nvlink):.3f} of {nvlink / 1e9:.0f} GB/s "
              f"(efficiency.nvlink; the shipped value is DeepEP's published 0.765)")


def main():
    a = parse_args()
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    modes = [m for m in a.modes.split(",") if m]
    rows = []
    for hidden in [int(x) for x in a.hiddens.split(",")]:
        for b in [int(x) for x in a.batches.split(",")]:
            ops = []
            x = torch.randn(b, hidden, dtype=torch.bfloat16, device="cuda")
            n = x.numel() * 2
            ops.append(("all_reduce", n, 2 * (world - 1) * n // world, lambda x=x: dist.all_reduce(x)))
            for op, elem in (("dispatch", 1), ("combine", 2)):
                # Top-k copies of each token spread evenly over the ranks; 1/world of them stay local.
                m = b * a.topk * hidden * elem
                m -= m % world
                src = torch.randint(0, 255, (m,), dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                ops.append((op, m, m * (world - 1) // world, lambda s=src, d=dst: dist.all_to_all_single(d, s)))
            for name, nbytes, link_bytes, fn in ops:
                for mode in modes:
                    if mode == "eager":
                        us = median_us(torch, dist, fn, a.iters, a.warmup)
                    else:
                        replay = graphed(torch, fn, a.graph_calls)
                        if replay is None:
                            continue
                        us = median_us(torch, dist, replay, a.iters, a.warmup, calls=a.graph_calls)
                    rows.append(dict(mode=mode, op=name, hidden=hidden, batch=b, bytes=nbytes, link_bytes=link_bytes,
                                     median_us=us))
    if rank == 0:
        device = torch.cuda.get_device_name()
        with open(a.csv + ".tmp", "w") as f:
            f.write("device,gpus,mode,op,hidden,batch,bytes_per_rank,link_bytes_per_rank,median_us\n")
            for r in rows:
                f.write(f'"{device}",{world},{r["mode"]},{r["op"]},{r["hidden"]},{r["batch"]},{r["bytes"]},'
                        f'{r["link_bytes"]},{r["median_us"]:.3f}\n')
        os.replace(a.csv + ".tmp", a.csv)
        for r in rows:
            print(f'{r["mode"]:<5} {r["op"]:<10} hidden {r["hidden"]} batch {r["batch"]:>4} bytes {r["bytes"]:>10} '
                  f'median {r["median_us"]:9.2f} us')
        report(rows, device, world, a.nvlink_bytes_per_s)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
