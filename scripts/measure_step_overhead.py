#!/usr/bin/env python3
"""Measures what one decode step costs beyond its kernels on one GPU (PyTorch), for the cost model's graph_launch and
step_sync terms (scenarios/cost_model/*.yaml; docs/cost_model.md, "The fixed part of a step"):

  graph   A CUDA graph of a whole decode step's kernel count (--layers x --kernels-per-layer small kernels, default
          GLM-5's 78 layers) is replayed; its GPU time (CUDA events around the replay) is set against the sum of the
          same kernels' own durations (torch.profiler / CUPTI, from an eager run of the same sequence). The difference
          is what the replay costs beyond its kernels. Repeated at fractions of the kernel count (--fractions), a least
          squares line beyond = intercept + kernels x gap separates the per-kernel gap (the cost file's
          graph_kernel_gap, charged per kernel already) from the fixed part (graph_launch). Two ways: `busy`, the
          replay queued behind a --busy-us spin kernel so its host launch (cudaGraphLaunch) is hidden, as SGLang's
          overlap scheduler launches step N+1 while step N runs (this is what graph_launch takes); `idle`, the replay
          on an idle GPU, which also pays the host launch (exposed only when the host falls behind). The host time of
          the replay call itself is reported beside both.
  sync    The end of a step: the device-to-host copy of B next-token ids (int64) into pinned memory and the host's wait
          for it, on an idle stream (step_sync), for each B in --batches.

Run on the 1-GPU machine (H100 or H200):
    python scripts/measure_step_overhead.py --csv $OUT/step_overhead.csv
It writes one CSV row per measurement and prints graph_launch and step_sync ready to paste as kind: measured.
"""
import argparse
import os
import statistics
import time


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--layers", type=int, default=78, help="decoder layers (GLM-5: 78; DeepSeek-V3.2: 61)")
    ap.add_argument("--kernels-per-layer", type=int, default=24,
                    help="kernels one layer launches in the decode graph (projections, norms, RoPE, indexer, top-k, "
                         "swap-in, attention, MoE, collectives)")
    ap.add_argument("--elems", type=int, default=6144, help="bf16 elements each small kernel touches (B x hidden)")
    ap.add_argument("--fractions", default="0.25,0.5,0.75,1", help="fractions of the full kernel count to fit over")
    ap.add_argument("--batches", default="1,8,64,256", help="B for the end-of-step token-id copy")
    ap.add_argument("--busy-us", type=float, default=3000,
                    help="spin before each busy-mode replay, longer than the host launch of the largest graph")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    return ap.parse_args(argv)


def kernel_sequence(torch, n, elems):
    """n dependent elementwise kernels (each reads the previous output), as a decode step's chain is dependent."""
    bufs = [torch.randn(elems, dtype=torch.bfloat16, device="cuda") for _ in range(2)]
    one = torch.ones(elems, dtype=torch.bfloat16, device="cuda")

    def run():
        for i in range(n):
            torch.add(bufs[i % 2], one, out=bufs[(i + 1) % 2])
    return run


def kernel_sum_us(torch, run, n):
    """Sum of the kernels' own durations in one eager run (CUPTI via torch.profiler); None when unavailable."""
    from torch.profiler import ProfilerActivity, profile
    run()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
    except RuntimeError as e:
        print(f"profiler unavailable ({e}): no kernel sum")
        return None
    total, count = 0.0, 0
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and "add" in ev.name.lower():
            total += ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
            count += 1
    if count != n:
        print(f"profiler saw {count} kernels of {n}: no kernel sum")
        return None
    return total


def graph_rows(torch, a, n):
    run = kernel_sequence(torch, n, a.elems)
    summed = kernel_sum_us(torch, run, n)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        run()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    for _ in range(a.warmup):
        g.replay()
    torch.cuda.synchronize()
    spin_cycles = int(a.busy_us * 1e-6 * torch.cuda.get_device_properties(0).clock_rate * 1e3)  # clock_rate in kHz
    rows = []
    for mode in ("busy", "idle"):
        gpu, host = [], []
        for _ in range(a.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if mode == "busy":
                torch.cuda._sleep(spin_cycles)  # the GPU is still busy when the replay below is launched
            start.record()
            t0 = time.perf_counter()
            g.replay()
            host.append((time.perf_counter() - t0) * 1e6)
            end.record()
            end.synchronize()
            gpu.append(start.elapsed_time(end) * 1e3)
        replay = statistics.median(gpu)
        rows.append(dict(kind=f"graph_{mode}", kernels=n, batch=0, replay_us=replay, kernel_sum_us=summed,
                         beyond_us=(replay - summed) if summed is not None else None, host_us=statistics.median(host)))
    return rows


def sync_row(torch, a, b):
    ids = torch.randint(0, 150000, (b,), dtype=torch.int64, device="cuda")
    out = torch.empty(b, dtype=torch.int64, pin_memory=True)
    times = []
    for i in range(a.warmup + a.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out.copy_(ids, non_blocking=True)
        torch.cuda.current_stream().synchronize()
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e6)
    return dict(kind="sync", kernels=0, batch=b, replay_us=None, kernel_sum_us=None, beyond_us=statistics.median(times),
                host_us=None)


def fit(points):
    """Least squares y = intercept + slope x; None with fewer than two distinct x."""
    n = len(points)
    sx, sy = sum(x for x, _ in points), sum(y for _, y in points)
    sxx, sxy = sum(x * x for x, _ in points), sum(x * y for x, y in points)
    det = n * sxx - sx * sx
    if n < 2 or det <= 0:
        return None
    slope = (n * sxy - sx * sy) / det
    return (sy - slope * sx) / n, slope


def report(rows, device, a):
    idle = fit([(r["kernels"], r["beyond_us"]) for r in rows if r["kind"] == "graph_idle" and r["beyond_us"] is not None])
    if idle is not None:
        print(f"# idle GPU (host launch exposed): beyond = {idle[0]:.1f} us + {1e3 * idle[1]:.0f} ns per kernel")
    g = [r for r in rows if r["kind"] == "graph_busy" and r["beyond_us"] is not None]
    f = fit([(r["kernels"], r["beyond_us"]) for r in g])
    sync = [r for r in rows if r["kind"] == "sync"]
    print(f"\n# Paste into scenarios/cost_model/sglang-hopper.yaml ({device}):")
    if f is not None:
        full = max(r["kernels"] for r in g)
        print(f"# busy GPU (launch hidden): beyond = {f[0]:.1f} us + {1e3 * f[1]:.0f} ns per kernel over {len(g)} graphs of up to "
              f"{full} kernels (the per-kernel part is graph_kernel_gap, already charged per kernel)")
        print(f"graph_launch:\n  value: {max(f[0], 0.0):.1f}us\n  kind: measured\n  source: >-\n"
              f"    One CUDA-graph replay beyond its kernels on {device}, launched while the GPU is busy (as under the overlap "
              f"scheduler): intercept of (replay GPU time - sum of its "
              f"kernels' CUPTI durations) over {', '.join(str(r['kernels']) for r in g)} kernels "
              f"({a.layers} layers x {a.kernels_per_layer}; slope {1e3 * f[1]:.0f} ns per kernel); "
              f"scripts/measure_step_overhead.py.")
    else:
        print("# graph_launch: no fit (profiler kernel sums missing); see the CSV's replay_us")
    if sync:
        vals = [r["beyond_us"] for r in sync]
        print(f"step_sync:\n  value: {statistics.mean(vals):.1f}us\n  kind: measured\n  source: >-\n"
              f"    End of step on {device}: D2H of B int64 token ids into pinned memory and the host's wait, idle "
              f"stream, mean over B = {', '.join(str(r['batch']) for r in sync)} "
              f"({min(vals):.1f}-{max(vals):.1f} us); scripts/measure_step_overhead.py.")


def main():
    a = parse_args()
    import torch

    full = a.layers * a.kernels_per_layer
    rows = [r for x in a.fractions.split(",") if x for r in graph_rows(torch, a, max(1, round(full * float(x))))]
    rows += [sync_row(torch, a, int(b)) for b in a.batches.split(",") if b]
    device = torch.cuda.get_device_name()

    def num(v):
        return "" if v is None else f"{v:.3f}"
    with open(a.csv + ".tmp", "w") as f:
        f.write("device,kind,kernels,batch,replay_us,kernel_sum_us,beyond_us,host_launch_us\n")
        for r in rows:
            f.write(f'"{device}",{r["kind"]},{r["kernels"]},{r["batch"]},{num(r["replay_us"])},'
                    f'{num(r["kernel_sum_us"])},{num(r["beyond_us"])},{num(r["host_us"])}\n')
    os.replace(a.csv + ".tmp", a.csv)
    for r in rows:
        print(", ".join(f"{k} {num(v) if isinstance(v, float) or v is None else v}" for k, v in r.items()))
    report(rows, device, a)


if __name__ == "__main__":
    main()
