#!/usr/bin/env -S /usr/bin/python3
# @brief Real vs synthetic top-k traces: statistics, Python replay of every policy, generator fit, plots.
"""Subcommands (numpy + matplotlib; run with /usr/bin/python3 from the repo root):

  real     --trace DIR --out JSON          stats + hit rate vs H for every policy (Python replay)
  fit      --trace DIR --out JSON          fit the generator's parameters (coordinate descent on the
                                           sglang-lru hit-rate curve, overlap/sinks/window from stats)
  compare  --trace DIR --synth DIR|--fit JSON --out JSON   replay a synthetic trace (a `.npy` dir written
                                           by `hisparse trace convert`, or the Python port with the fit)
  plot     --real JSON [--compare JSON ...] --png FILE
  replay-diff --real replay.json --synth replay.json... --labels A,B --out JSON [--png FILE]
                                           synthetic minus real, from `hisparse replay --out` results

Hit rate = (hits + newest hits) / selected, summed over requests and layers (docs/swap_in.md counters).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth_trace_py as synth  # noqa: E402
import trace_replay_py as rp    # noqa: E402


def h_grid(k):
    return [k, k + k // 4, k + k // 2, 2 * k, 3 * k, 4 * k, 6 * k, 8 * k]


def curve(trace, k, policy, grid=None, layers=None):
    return {H: rp.replay_trace(trace, H, policy, layers) for H in (grid or h_grid(k))}


def cmd_real(a):
    trace, meta = rp.load_npy_dir(a.trace)
    k = meta["top_k"]
    t0 = time.time()
    res = {"trace": a.trace, "top_k": k, "stats": rp.trace_stats(trace), "curves": {}}
    for pol in rp.POLICIES:
        res["curves"][pol] = {str(H): v for H, v in curve(trace, k, pol).items()}
        print(pol, {H: round(v, 4) for H, v in res["curves"][pol].items()}, f"{time.time() - t0:.0f}s", flush=True)
    print(json.dumps(res["stats"], indent=1))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


def fit_base(trace, k, a_layers=6):
    """Parameters read straight off the real trace."""
    steps = min(t.shape[0] for t, _ in trace.values())
    prompt = int(np.mean([s[0] for _, s in trace.values()]))
    st = rp.trace_stats(trace)
    return st, dict(requests=1, steps=steps, layers=a_layers, top_k=k, prompt_len=prompt,
                    overlap=round(st["overlap"], 4), sinks=1 if st["pos0_selected"] > 0.5 else 0,
                    recent_window=32, topics=8, topic_width=512.0, topic_drift=0.02, uniform_fraction=0.25,
                    layer_spread=round(min(1.0, st["overlap_layer_std"] * np.sqrt(12)), 3), seed=1)


def objective(params, target, grid):
    tr = synth.generate(**params)
    got = curve(tr, params["top_k"], "sglang-lru", grid)
    return float(np.mean([abs(got[H] - target[H]) for H in grid])), got


def cmd_fit(a):
    trace, meta = rp.load_npy_dir(a.trace)
    k = meta["top_k"]
    st, p = fit_base(trace, k)
    grid = [k + k // 4, k + k // 2, 2 * k, 3 * k, 4 * k, 8 * k]
    target = curve(trace, k, "sglang-lru", grid)
    print("real sglang-lru", {H: round(v, 4) for H, v in target.items()}, flush=True)
    space = {
        "recent_window": [8, 16, 32, 64, 128],
        "topics": [2, 4, 8, 16, 32, 64],
        "topic_width": [16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0],
        "topic_drift": [0.0, 0.005, 0.02, 0.05, 0.1, 0.2],
        "uniform_fraction": [0.0, 0.05, 0.1, 0.25, 0.5],
    }
    if a.recency:
        p.update(recency_fraction=0.5, recency_max=1024.0)
        space["recency_fraction"] = [0.0, 0.25, 0.5, 0.7, 0.9]
        space["recency_max"] = [256.0, 512.0, 1024.0, 2048.0, 4096.0]
    best, got = objective(p, target, grid)
    print("start", round(best, 4), flush=True)
    log = []
    for rnd in range(a.rounds):
        for name, values in space.items():
            for v in values:
                if v == p[name]:
                    continue
                q = dict(p, **{name: v})
                err, g = objective(q, target, grid)
                log.append({"round": rnd, name: v, "err": err})
                if err < best - 1e-4:
                    best, p, got = err, q, g
                    print(f"  round {rnd} {name}={v} err={err:.4f}", flush=True)
    out = {"source_trace": a.trace, "top_k": k, "mean_abs_hit_rate_error_lru": best, "grid": grid,
           "real_lru": {str(H): target[H] for H in grid}, "synthetic_lru": {str(H): got[H] for H in grid},
           "real_stats": st, "params": p, "python_only_params": ["recency_fraction", "recency_max"] if a.recency else [],
           "search_log": log}
    print("best", json.dumps(p), "err", round(best, 4))
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


def cmd_compare(a):
    trace, meta = rp.load_npy_dir(a.trace)
    k = meta["top_k"]
    if a.synth:
        syn, _ = rp.load_npy_dir(a.synth)
        label = a.synth
    else:
        with open(a.fit) as f:
            fit = json.load(f)
        params = dict(fit["params"], requests=a.requests, layers=a.layers, seed=a.seed)
        syn = synth.generate(**params)
        label = f"python port of the generator, {a.fit}"
    res = {"real": a.trace, "synthetic": label, "top_k": k, "synthetic_stats": rp.trace_stats(syn),
           "curves": {}, "diff": {}}
    for pol in a.policies.split(","):
        c = curve(syn, k, pol)
        r = curve(trace, k, pol)
        res["curves"][pol] = {str(H): v for H, v in c.items()}
        res["diff"][pol] = {"mean_abs": float(np.mean([abs(c[H] - r[H]) for H in c])),
                            "max_abs": float(np.max([abs(c[H] - r[H]) for H in c])),
                            "signed": {str(H): c[H] - r[H] for H in c}}
        print(pol, "synthetic", {H: round(v, 4) for H, v in c.items()}, "mean |diff|",
              round(res["diff"][pol]["mean_abs"], 4), flush=True)
    print(json.dumps(res["synthetic_stats"], indent=1))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


def cmd_plot(a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(a.real) as f:
        real = json.load(f)
    k = real["top_k"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (pol, c) in enumerate(real["curves"].items()):
        hs = sorted(int(h) for h in c)
        ax.plot([h / k for h in hs], [c[str(h)] for h in hs], "o-", color=f"C{i}", label=f"real {pol}")
    for j, path in enumerate(a.compare or []):
        with open(path) as f:
            cmp_ = json.load(f)
        for i, (pol, c) in enumerate(cmp_["curves"].items()):
            idx = list(real["curves"]).index(pol) if pol in real["curves"] else i
            hs = sorted(int(h) for h in c)
            ax.plot([h / k for h in hs], [c[str(h)] for h in hs], ["x--", "+:", "s-."][j % 3], color=f"C{idx}",
                    label=f"{a.labels.split(',')[j] if a.labels else 'synthetic'} {pol}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"device buffer H / top_k (top_k = {k})")
    ax.set_ylabel("hit rate (hits + newest) / selected")
    ax.set_title(a.title or f"SmolLM2-135M real top-{k} traces")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print("wrote", a.png)


def load_replay(path):
    """{policy: {H: result}} from a `hisparse replay --out` replay.json."""
    with open(path) as f:
        d = json.load(f)
    out = {}
    for r in d["results"]:
        out.setdefault(r["policy"], {})[r["buffer_size"]] = r
    return d["trace"], out


def cmd_replay_diff(a):
    """Synthetic minus real, per policy and buffer size, from two `hisparse replay` outputs."""
    _, real = load_replay(a.real)
    res = {"real": a.real, "synthetic": {}, "summary": {}}
    for path, label in zip(a.synth, a.labels.split(",")):
        _, syn = load_replay(path)
        res["synthetic"][label] = path
        for pol in real:
            if pol not in syn:
                continue
            hs = sorted(set(real[pol]) & set(syn[pol]))
            d = [syn[pol][h]["hit_rate"] - real[pol][h]["hit_rate"] for h in hs]
            p99 = [syn[pol][h]["misses_per_step_layer"]["p99"] - real[pol][h]["misses_per_step_layer"]["p99"] for h in hs]
            res["summary"].setdefault(label, {})[pol] = {
                "mean_abs_hit_rate_diff": float(np.mean(np.abs(d))), "max_abs_hit_rate_diff": float(np.max(np.abs(d))),
                "signed": {str(h): round(x, 5) for h, x in zip(hs, d)},
                "p99_miss_diff": {str(h): x for h, x in zip(hs, p99)}}
            print(f"{label:14s} {pol:11s} mean|d| {100 * np.mean(np.abs(d)):5.2f} pp  max|d| {100 * np.max(np.abs(d)):5.2f} pp"
                  f"  signed(pp) {[round(100 * x, 2) for x in d]}  p99-miss diff {p99}")
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        pols = a.plot_policies.split(",")
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for i, pol in enumerate(pols):
            hs = sorted(real[pol])
            axes[0].plot(hs, [real[pol][h]["hit_rate"] for h in hs], "o-", color=f"C{i}", label=f"real {pol}")
            axes[1].plot(hs, [real[pol][h]["misses_per_step_layer"]["p99"] for h in hs], "o-", color=f"C{i}",
                         label=f"real {pol}")
            for j, (path, label) in enumerate(zip(a.synth, a.labels.split(","))):
                _, syn = load_replay(path)
                st = ["x--", "+:", "s-."][j % 3]
                axes[0].plot(hs, [syn[pol][h]["hit_rate"] for h in hs], st, color=f"C{i}", label=f"{label} {pol}")
                axes[1].plot(hs, [syn[pol][h]["misses_per_step_layer"]["p99"] for h in hs], st, color=f"C{i}",
                             label=f"{label} {pol}")
        for ax, yl in zip(axes, ["hit rate", "p99 misses per step-layer"]):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("device_buffer_size H")
            ax.set_ylabel(yl)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(a.title or "real vs synthetic")
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print("wrote", a.png)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("real")
    r.add_argument("--trace", required=True)
    r.add_argument("--out", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--trace", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--rounds", type=int, default=2)
    f.add_argument("--recency", action="store_true", help="also fit the Python-only recency-decay term")
    c = sub.add_parser("compare")
    c.add_argument("--trace", required=True)
    c.add_argument("--synth")
    c.add_argument("--fit")
    c.add_argument("--requests", type=int, default=4)
    c.add_argument("--layers", type=int, default=30)
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--policies", default=",".join(rp.POLICIES))
    c.add_argument("--out", required=True)
    g = sub.add_parser("plot")
    g.add_argument("--real", required=True)
    g.add_argument("--compare", nargs="*")
    g.add_argument("--labels")
    g.add_argument("--title")
    g.add_argument("--png", required=True)
    d = sub.add_parser("replay-diff")
    d.add_argument("--real", required=True, help="replay.json of the real trace")
    d.add_argument("--synth", nargs="+", required=True, help="replay.json of synthetic traces")
    d.add_argument("--labels", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--png")
    d.add_argument("--plot-policies", default="sglang-lru,belady")
    d.add_argument("--title")
    a = p.parse_args()
    {"real": cmd_real, "fit": cmd_fit, "compare": cmd_compare, "plot": cmd_plot, "replay-diff": cmd_replay_diff}[a.cmd](a)


if __name__ == "__main__":
    main()
