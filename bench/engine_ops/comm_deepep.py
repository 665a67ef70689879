"""DeepEP normal and low-latency dispatch/combine timed inside a stage worker (comm_stage.py)."""

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
# DeepEP
# ------------------------------------------------------------------------------------------------------------------

def import_deep_ep(ctx):
    """deep_ep, retried without its NCCL duplicate check when that check is what refuses (logged)."""
    try:
        import deep_ep
        return deep_ep
    except AssertionError as e:
        if "NCCL" not in str(e):
            raise
        ctx.log(f"import deep_ep refused by its NCCL check ({e}); retrying with EP_SUPPRESS_NCCL_CHECK=1", True)
        for m in [m for m in sys.modules if m == "deep_ep" or m.startswith("deep_ep.")]:
            del sys.modules[m]
        os.environ["EP_SUPPRESS_NCCL_CHECK"] = "1"
        import deep_ep
        return deep_ep


def routing(ctx, deep_ep, tokens, model, salt):
    """Uniform top-k without replacement (the top-k of i.i.d. uniform scores), seeded per rank, model and batch."""
    torch = ctx.torch
    g = torch.Generator(device="cuda")
    g.manual_seed(ctx.cfg["seed"] + 100_003 * ctx.rank + 1_009 * tokens + salt)
    scores = torch.rand(tokens, model["experts"], generator=g, device="cuda")
    top = scores.topk(model["topk"], dim=-1)
    idx = top.indices.to(deep_ep.topk_idx_t).contiguous()
    weights = torch.softmax(top.values, dim=-1).to(torch.float32).contiguous()
    return idx, weights, g


def time_events_calls(ctx, calls, warmup, iters, sleep_cycles):
    """Runs `calls` (a list of zero-argument functions executed in order each iteration, the later ones may use what
    the earlier returned through closures) and times each separately with events; returns a list of sample lists."""
    torch = ctx.torch
    for _ in range(warmup):
        for c in calls:
            c()
    torch.cuda.synchronize()
    samples = [[] for _ in calls]
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in calls]
    for _ in range(iters):
        for (start, end), c in zip(events, calls):
            ctx.align(sleep_cycles)
            start.record()
            c()
            end.record()
        events[-1][1].synchronize()
        for k, (start, end) in enumerate(events):
            samples[k].append(start.elapsed_time(end) * 1e3)
    return samples


def ep_models(ctx, ll):
    ok = []
    for m in ctx.cfg["models"]:
        why = None
        if m["experts"] % ctx.world:
            why = f"{m['experts']} experts do not split over {ctx.world} ranks"
        elif m["hidden"] % 128:
            why = f"hidden {m['hidden']} is not a multiple of 128 (fp8 scales)"
        elif ll and m["hidden"] not in LL_HIDDENS:
            why = f"hidden {m['hidden']} is not one DeepEP's LL kernels are compiled for ({sorted(LL_HIDDENS)})"
        elif ll and m["topk"] > 11:
            why = f"top-k {m['topk']} above the LL kernels' 11"
        if why:
            ctx.log(f"{m['name']}: SKIPPED for {'LL' if ll else 'normal'} mode: {why}")
        else:
            ok.append(m)
    if ctx.smoke:
        ok = ok[:1]
    return ok


def run_ep_normal(ctx):
    torch, world = ctx.torch, ctx.world
    deep_ep = import_deep_ep(ctx)
    models = ep_models(ctx, ll=False)
    if not models:
        return
    group = ctx.dist.new_group(list(range(world)))
    # The NVLink buffer SGLang would size: the larger of the dispatch/combine configs' hints for bf16 tokens of the
    # widest model.
    hidden_bytes = max(m["hidden"] for m in models) * 2
    try:
        configs = (deep_ep.Buffer.get_dispatch_config(world), deep_ep.Buffer.get_combine_config(world))
        nvl_bytes = max(cfg.get_nvl_buffer_size_hint(hidden_bytes, world) for cfg in configs)
    except Exception as e:  # noqa: BLE001
        nvl_bytes = int(1e9)
        ctx.log(f"size hint unavailable ({type(e).__name__}: {e}); NVLink buffer of 1 GB")
    ctx.log(f"deep_ep normal mode: Buffer(num_nvl_bytes={nvl_bytes}), {deep_ep.Buffer.num_sms} SMs, "
            f"models {[m['name'] for m in models]}")
    buffer = deep_ep.Buffer(group, int(nvl_bytes), 0, low_latency_mode=False, explicitly_destroy=True)
    tokens_list = [64] if ctx.smoke else TOKENS
    warmup, iters = 3, (5 if ctx.smoke else 30)
    points = [(m, t) for m in models for t in tokens_list]
    t_start, n_done = time.time(), 0
    for i, (m, t) in enumerate(points):
        key = f"{m['name']}:{t}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        hidden, experts = m["hidden"], m["experts"]
        idx, weights, g = routing(ctx, deep_ep, t, m, salt=7 * i)
        x_bf16 = (torch.randn(t, hidden, generator=g, device="cuda") * 0.1).to(torch.bfloat16)
        # fp8 tokens with per-128-channel fp32 scales, the scales column-major as SGLang's quantiser lays them out
        x_fp8 = (x_bf16.to(torch.float8_e4m3fn),
                 torch.rand(hidden // 128, t, generator=g, device="cuda").add_(0.5).t())
        state = {}

        def dispatch(x):
            n_rank, _, n_expert, in_rank, _ = buffer.get_dispatch_layout(idx, experts)
            recv_x, _, recv_w, _, handle, _ = buffer.dispatch(
                x, num_tokens_per_rank=n_rank, is_token_in_rank=in_rank, num_tokens_per_expert=n_expert,
                topk_idx=idx, topk_weights=weights)
            state["recv"], state["handle"] = recv_x, handle

        def combine():
            buffer.combine(state["combine_x"], state["combine_handle"])

        def dispatch_bf16_and_keep():
            dispatch(x_bf16)
            state["combine_x"], state["combine_handle"] = state["recv"], state["handle"]

        # One bf16 dispatch first gives combine its received tokens and handle.
        dispatch_bf16_and_keep()
        torch.cuda.synchronize()
        n_recv = state["combine_x"].shape[0]
        s_fp8, s_bf16, s_comb = time_events_calls(
            ctx, [lambda: dispatch(x_fp8), lambda: dispatch(x_bf16), combine], warmup, iters, 400_000)
        base = {"experts": experts, "hidden": hidden, "model": m["name"], "ranks": world, "topk": m["topk"]}
        stats = [ctx.slowest(s) for s in (s_fp8, s_bf16, s_comb)]
        rows = []
        if ctx.rank == 0:
            rows = [ctx.row("ep_dispatch_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="fp8"), t, 0, stats[0],
                            "events"),
                    ctx.row("ep_dispatch_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[1],
                            "events"),
                    ctx.row("ep_combine_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[2],
                            "events")]
        ctx.end(key, rows)
        state.clear()
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {m['name']:<18} tokens {t:>4} (rank 0 received {n_recv:>5})  "
                    f"dispatch fp8 {stats[0]['median_us']:8.1f} us  bf16 {stats[1]['median_us']:8.1f} us  "
                    f"combine {stats[2]['median_us']:8.1f} us  (ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.synchronize()
    # No buffer.destroy(): NVSHMEM finalize / IPC teardown can hang, and the worker leaves with os._exit right after
    # a barrier, when the driver frees everything; the reference is kept so no destructor runs before that.
    KEEP_ALIVE.append(buffer)


def run_ep_ll(ctx):
    torch, world = ctx.torch, ctx.world
    deep_ep = import_deep_ep(ctx)
    models = ep_models(ctx, ll=True)
    if not models:
        return
    big = [t for t in TOKENS if t > LL_MAX_TOKENS]
    if big and not ctx.smoke:
        ctx.log(f"LL: batches {big} skipped: above num_max_dispatch_tokens_per_rank={LL_MAX_TOKENS} "
                f"(SGLang's default)")
    group = ctx.dist.new_group(list(range(world)))
    # One NVSHMEM buffer for all models (NVSHMEM is initialised once per process), sized for the largest, and as many
    # QPs per rank as the most local experts (DeepEP's LL kernels check that count).
    rdma_bytes = max(deep_ep.Buffer.get_low_latency_rdma_size_hint(LL_MAX_TOKENS, m["hidden"], world, m["experts"])
                     for m in models)
    qps = max(m["experts"] // world for m in models)
    ctx.log(f"deep_ep LL mode: Buffer(num_rdma_bytes={rdma_bytes}, num_qps_per_rank={qps}), "
            f"NVSHMEM_REMOTE_TRANSPORT={os.environ.get('NVSHMEM_REMOTE_TRANSPORT', '<default>')}, "
            f"models {[m['name'] for m in models]}")
    try:
        buffer = deep_ep.Buffer(group, 0, int(rdma_bytes), low_latency_mode=True, num_qps_per_rank=qps,
                                allow_nvlink_for_low_latency_mode=True, explicitly_destroy=True)
    except Exception as e:
        ctx.log(f"LL buffer (NVSHMEM) cannot be created: {type(e).__name__}: {e}", True)
        raise
    ctx.log("LL buffer ready")
    tokens_list = [64] if ctx.smoke else [t for t in TOKENS if t <= LL_MAX_TOKENS]
    warmup, iters = 3, (5 if ctx.smoke else 30)
    points = [(m, t) for m in models for t in tokens_list]
    t_start, n_done, current = time.time(), 0, None
    combine_in = None
    for i, (m, t) in enumerate(points):
        key = f"{m['name']}:{t}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        hidden, experts = m["hidden"], m["experts"]
        if current != m["name"]:
            # The LL buffer's layout depends on hidden and experts: zero its signalling area for the new shape.
            buffer.clean_low_latency_buffer(LL_MAX_TOKENS, hidden, experts)
            torch.cuda.synchronize()
            ctx.dist.barrier()
            combine_in = None
            torch.cuda.empty_cache()
            # What the experts hand back: bf16, one slot per (local expert, source rank x max tokens).
            combine_in = torch.randn(experts // world, LL_MAX_TOKENS * world, hidden, device="cuda",
                                     dtype=torch.bfloat16)
            current = m["name"]
        idx, weights, g = routing(ctx, deep_ep, t, m, salt=7 * i + 3)
        x = (torch.randn(t, hidden, generator=g, device="cuda") * 0.1).to(torch.bfloat16)
        state = {}

        def dispatch():
            _, _, handle, _, _ = buffer.low_latency_dispatch(x, idx, LL_MAX_TOKENS, experts, use_fp8=True,
                                                             async_finish=False, return_recv_hook=False)
            state["handle"] = handle

        def combine():
            buffer.low_latency_combine(combine_in, idx, weights, state["handle"], async_finish=False,
                                       return_recv_hook=False)

        s_disp, s_comb = time_events_calls(ctx, [dispatch, combine], warmup, iters, 400_000)
        base = {"experts": experts, "hidden": hidden, "model": m["name"], "ranks": world, "topk": m["topk"]}
        stats = [ctx.slowest(s) for s in (s_disp, s_comb)]
        rows = []
        if ctx.rank == 0:
            rows = [ctx.row("ep_dispatch_ll", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="fp8"), t, 0, stats[0],
                            "events"),
                    ctx.row("ep_combine_ll", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[1],
                            "events")]
        ctx.end(key, rows)
        state.clear()
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {m['name']:<18} tokens {t:>4}  dispatch {stats[0]['median_us']:8.1f} us"
                    f"  combine {stats[1]['median_us']:8.1f} us  (ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.synchronize()
    # No buffer.destroy(): NVSHMEM finalize / IPC teardown can hang, and the worker leaves with os._exit right after
    # a barrier, when the driver frees everything; the reference is kept so no destructor runs before that.
    KEEP_ALIVE.append(buffer)


# ------------------------------------------------------------------------------------------------------------------
