"""One stage of the NCCL/DeepEP collector in its own process group: the per-rank workers and the NCCL collectives
(collect_comm.py runs it with --stage-config; DeepEP dispatch/combine are in comm_deepep.py)."""

import argparse
import csv
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback

from comm_common import *  # noqa: F401,F403 - the shared constants and summarize

# ------------------------------------------------------------------------------------------------------------------
# Stage process: spawns one worker per GPU.
# ------------------------------------------------------------------------------------------------------------------

def stage_main(cfg_path):
    with open(cfg_path) as f:
        cfg = json.load(f)
    import torch.multiprocessing as mp
    try:
        mp.spawn(_worker, args=(cfg,), nprocs=cfg["world"], join=True)
    except Exception as e:  # noqa: BLE001 - the parent reads the exit status; the reason goes to the log
        print(f"stage {cfg['stage']}@{cfg['world']} failed: {type(e).__name__}: {str(e)[-2000:]}", flush=True)
        return 1
    return 0


class Ctx:
    """What a worker needs: its rank, the group, the deadline, and (rank 0) the row writer."""

    def __init__(self, cfg, rank, torch, dist):
        self.cfg, self.rank, self.world = cfg, rank, cfg["world"]
        self.torch, self.dist = torch, dist
        self.smoke = cfg["smoke"]
        self.done = set(open(cfg["done_file"]).read().split()) if os.path.exists(cfg["done_file"]) else set()
        self.skip = set(cfg["skip"])
        self.flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.sync_t = torch.zeros(1, dtype=torch.float32, device="cuda")
        self.gpu = torch.cuda.get_device_name(rank)
        self.t0 = time.time()
        self.rows_written = 0
        if rank == 0:
            new = not os.path.exists(cfg["part"])
            self.part = open(cfg["part"], "a", newline="")
            self.writer = csv.DictWriter(self.part, fieldnames=HEADER)
            if new:
                self.writer.writeheader()
                self.part.flush()

    def log(self, msg, all_ranks=False):
        if self.rank == 0 or all_ranks:
            print(f"r{self.rank} +{time.time() - self.t0:5.1f}s {msg}", flush=True)

    def agree(self, ok):
        """True only if `ok` holds on every rank (a MIN all-reduce): keeps the ranks on the same path."""
        self.flag.fill_(1 if ok else 0)
        self.dist.all_reduce(self.flag, op=self.dist.ReduceOp.MIN)
        return bool(self.flag.item())

    def time_left(self):
        return self.agree(time.time() < self.cfg["deadline"])

    def begin(self, key):
        """Records the point about to run, so a restart can step over it if it kills the stage."""
        if self.rank == 0:
            with open(self.cfg["progress"], "w") as f:
                f.write(key)
                f.flush()
                os.fsync(f.fileno())

    def end(self, key, rows):
        if self.rank == 0:
            for row in rows:
                self.writer.writerow(row)
            self.part.flush()
            os.fsync(self.part.fileno())
            with open(self.cfg["done_file"], "a") as f:
                f.write(key + "\n")
            self.rows_written += len(rows)
        self.done.add(key)

    def wanted(self, key):
        if key in self.done:
            return False
        if key in self.skip:
            self.log(f"{key}: SKIPPED (it killed the previous attempt)")
            return False
        return True

    def align(self, sleep_cycles):
        """GPU-side start line: a one-element all-reduce, then a sleep that lets the host queue the timed work."""
        self.dist.all_reduce(self.sync_t)
        if sleep_cycles and hasattr(self.torch.cuda, "_sleep"):
            self.torch.cuda._sleep(sleep_cycles)

    def slowest(self, samples):
        """Rank 0 gets, sample by sample, the slowest rank's time; others get None."""
        torch = self.torch
        t = torch.tensor(samples, dtype=torch.float64, device="cuda")
        parts = [torch.empty_like(t) for _ in range(self.world)]
        self.dist.all_gather(parts, t)
        if self.rank != 0:
            return None
        return summarize(torch.stack(parts).amax(dim=0).tolist())

    def row(self, op, library, commit, params, batch, nbytes, stats, method):
        return {"op": op, "library": library, "commit": commit, "gpu": self.gpu,
                "driver": self.cfg["facts"].get("driver", ""),
                "sm_clock_mhz": self.cfg["facts"].get("sm_clock_mhz", ""),
                "params": ";".join(f"{k}={params[k]}" for k in sorted(params)), "batch": batch, "context": 0,
                "bytes": nbytes, "median_us": f"{stats['median_us']:.3f}", "p10_us": f"{stats['p10_us']:.3f}",
                "p90_us": f"{stats['p90_us']:.3f}", "iters": stats["iters"], "method": method}


def _worker(local_rank, cfg):
    for k, v in SAFE_ENV.items():
        os.environ[k] = v
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(cfg["port"])
    rank = local_rank
    ctx = None
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(local_rank)
        kw = dict(backend="nccl", init_method=f"tcp://127.0.0.1:{cfg['port']}", world_size=cfg["world"], rank=rank,
                  timeout=datetime.timedelta(seconds=max(60, int(cfg["budget"]))))
        try:  # eager NCCL communicator creation; older torch has no device_id
            dist.init_process_group(**kw, device_id=torch.device("cuda", local_rank))
        except TypeError:
            dist.init_process_group(**kw)
        ctx = Ctx(cfg, rank, torch, dist)
        ctx.begin("init")
        ctx.log(f"{cfg['stage']}: {cfg['world']} ranks up on {ctx.gpu} (attempt {cfg['attempt']}, "
                f"{cfg['deadline'] - time.time():.0f}s to go)")
        {"nccl": run_nccl, "ep_normal": run_ep_normal, "ep_ll": run_ep_ll}[cfg["stage"]](ctx)
        torch.cuda.synchronize()
        dist.barrier()
        ctx.begin("")  # finished: nothing to step over
        ctx.log(f"{cfg['stage']}: finished, {ctx.rows_written} rows")
    except BaseException as e:  # noqa: BLE001 - the exact exception is the log's most useful line
        print(f"r{rank} {cfg['stage']}: FAILED: {type(e).__name__}: {e}\n{traceback.format_exc()}", flush=True)
        sys.stdout.flush()
        os._exit(1)  # no teardown: NCCL/NVSHMEM destructors can hang after a failure
    sys.stdout.flush()
    # Skip interpreter teardown (NVSHMEM finalize and NCCL destructors have hung at exit): the rows are on disk.
    os._exit(0)


# ------------------------------------------------------------------------------------------------------------------
# NCCL collectives
# ------------------------------------------------------------------------------------------------------------------

def nccl_sizes(models, smoke):
    if smoke:
        return [1 << 20]
    sizes = {1 << p for p in range(12, 29)}  # 4 KiB .. 256 MiB
    for m in models:
        for t in TOKENS:
            sizes.add(t * m["hidden"] * 2)
    return sorted(sizes)


def time_graph(ctx, fn, calls, replays, warmup):
    """Samples of one call inside a graph of `calls` calls, or (None, reason) when capture failed on any rank."""
    torch = ctx.torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the communicator is warm, and lazy allocations happen, before capture
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph, err = torch.cuda.CUDAGraph(), None
    try:
        # thread_local: CUDA calls of other threads (NCCL's watchdog) must not invalidate this capture
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            for _ in range(calls):
                fn()
    except Exception as e:  # noqa: BLE001 - the ranks agree below, then fall back together
        err = f"{type(e).__name__}: {str(e)[:300]}"
    torch.cuda.synchronize()
    if not ctx.agree(err is None):
        del graph
        return None, err or "capture failed on another rank"
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        ctx.align(100_000)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    return samples, None


def time_eager(ctx, fn, calls, replays, warmup):
    torch = ctx.torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        ctx.align(200_000)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return samples


def collective(torch, dist, op, n, world):
    """One call of `op` on n bf16 elements per rank (see the module doc for what n is per op); the tensors live as
    long as the returned function. Zeros: repeated in-place sums stay finite, and values do not change the timing."""
    if op == "all_reduce":
        x = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        return lambda: dist.all_reduce(x)
    if op == "all_gather":
        x = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        y = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
        return lambda: dist.all_gather_into_tensor(y, x)
    x = torch.zeros(world * n, dtype=torch.bfloat16, device="cuda")
    y = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    return lambda: dist.reduce_scatter_tensor(y, x)


def run_nccl(ctx):
    torch, dist, world = ctx.torch, ctx.dist, ctx.world
    v = torch.cuda.nccl.version()
    commit = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
    sizes = nccl_sizes(ctx.cfg["models"], ctx.smoke)
    ops = ("all_reduce", "all_gather", "reduce_scatter")
    calls, replays, warmup = 10, (8 if ctx.smoke else 30), 3
    points = [(op, n) for n in sizes for op in ops]
    ctx.log(f"nccl {commit}: {len(points)} points ({len(sizes)} sizes x 3 ops, {sizes[0]}..{sizes[-1]} B), "
            f"graph of {calls} calls x {replays} replays")
    use_graph, graph_failures = True, 0
    t_start, n_done = time.time(), 0
    for i, (op, nbytes) in enumerate(points):
        key = f"{op}:{nbytes}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        fn = collective(torch, dist, op, nbytes // 2, world)
        samples, method = None, "graph"
        if use_graph:
            samples, why = time_graph(ctx, fn, calls, replays, warmup)
            if samples is None:
                graph_failures += 1
                ctx.log(f"{key}: graph capture failed ({why}); timing eager calls with events")
                if graph_failures >= 2:
                    use_graph = False
                    ctx.log("two capture failures: events for the rest of this stage")
        if samples is None:
            samples, method = time_eager(ctx, fn, calls, replays, warmup), "events"
        stats = ctx.slowest(samples)
        rows = []
        if ctx.rank == 0:
            rows.append(ctx.row(op, "nccl", commit, {"dtype": "bf16", "ranks": world}, 0, nbytes, stats, method))
        ctx.end(key, rows)
        fn = None  # frees this point's tensors (up to ranks x 256 MiB) before the next
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {op:<14} {nbytes:>10} B  median {stats['median_us']:9.2f} us  "
                    f"p10 {stats['p10_us']:9.2f}  p90 {stats['p90_us']:9.2f}  ({method}; "
                    f"ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.empty_cache()



from comm_deepep import run_ep_ll, run_ep_normal  # noqa: E402 - after the helpers comm_deepep imports back
