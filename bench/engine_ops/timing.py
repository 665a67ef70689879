"""How every engine op is timed: as a decode step's CUDA graph runs it.

A decode step is captured in a CUDA graph by SGLang, so the cost of an op there is its kernel time plus the gap to the
next kernel, with no host launch cost. We capture `calls` back-to-back calls in one graph and replay it `replays`
times; one sample is a replay's time divided by `calls`. The table keeps the median and the 10th/90th percentiles of
those samples. Where an op cannot be captured (a host sync inside it), CUDA events around the same loop run eagerly,
and the row says `events`.
"""

import statistics

import torch


def _percentile(sorted_values, q):
    """Nearest-rank percentile; the tables quote p10/p90 of 20–50 samples, where interpolation adds nothing."""
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


def summarize(samples_us):
    s = sorted(samples_us)
    return {"median_us": statistics.median(s), "p10_us": _percentile(s, 0.10), "p90_us": _percentile(s, 0.90),
            "iters": len(s)}


def time_graph(fn, calls=10, replays=30, warmup=3):
    """Median/p10/p90 of one call of `fn` inside a CUDA graph of `calls` back-to-back calls."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):  # JIT compilation, autotuning and lazy allocations stay out of the graph
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / calls)
    del graph
    out = summarize(samples)
    out["method"] = "graph"
    return out


def time_events(fn, calls=10, replays=30, warmup=3):
    """The eager fallback: events around `calls` launches, for ops that cannot be captured."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / calls)
    out = summarize(samples)
    out["method"] = "events"
    return out


def time_op(fn, **kw):
    """Graph timing, else events (the reason is returned so the log says why)."""
    try:
        return time_graph(fn, **kw), None
    except Exception as e:  # noqa: BLE001 - any capture failure falls back; the reason is logged
        torch.cuda.synchronize()
        return time_events(fn, **kw), f"graph capture failed ({type(e).__name__}: {str(e)[:200]})"
