#!/usr/bin/env -S /usr/bin/python3
# @brief Plots a `hisparse simulate --out DIR` run: step-time breakdown, TPOT/TTFT CDFs, step time and batch over time.
"""Usage: /usr/bin/python3 scripts/plot_simulate.py DIR   (writes DIR/*.png)"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from plot_output import run_main, save_png  # noqa: E402

# The critical-path terms of StepCost (backup and prefetch_hidden run beside them).
FIELDS = ["indexer", "topk", "swap_in", "h2d", "attention", "moe", "stall", "sync", "draft"]


def tag(run):
    return f"{run['mode']}_{run['overlap']}"


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    save_png(fig, path, dpi=120)
    plt.close(fig)
    print("wrote", path)


def cdf(ax, values, label):
    v = np.sort(np.asarray(values, dtype=float))
    if len(v):
        ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=label)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "report.json")) as f:
        report = json.load(f)
    runs = report["runs"]
    title = f"{report['scenario']} · {report['workload']}"

    # Mean critical-path time per busy GPU-step, stacked by operation.
    fig, ax = plt.subplots(figsize=(1.6 * len(runs) + 3, 4.5))
    bottom = np.zeros(len(runs))
    for field in FIELDS:
        vals = np.array([r["mean_step_ms"][field] for r in runs])
        ax.bar([tag(r) for r in runs], vals, bottom=bottom, label=field)
        bottom += vals
    ax.set_ylabel("ms per GPU step")
    ax.set_title(f"Decode step breakdown\n{title}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    save(fig, out_dir, "breakdown.png")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r in runs:
        reqs = read_csv(os.path.join(out_dir, f"requests_{tag(r)}.csv"))
        cdf(axes[0], [float(q["tpot_ms"]) for q in reqs if float(q["tpot_ms"]) >= 0], tag(r))
        cdf(axes[1], [float(q["ttft_ms"]) / 1e3 for q in reqs if float(q["ttft_ms"]) >= 0], tag(r))
    slo = runs[0]["tpot_slo_ms"]
    axes[0].axvline(slo, color="grey", ls="--", lw=1, label=f"SLO {slo:g} ms")
    axes[0].set_xlabel("TPOT (ms)")
    axes[1].set_xlabel("TTFT (s)")
    for ax in axes:
        ax.set_ylabel("fraction of requests")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    save(fig, out_dir, "latency_cdf.png")

    fig, axes = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    for r in runs:
        steps = read_csv(os.path.join(out_dir, f"steps_{tag(r)}.csv"))
        if not steps:
            continue
        t = np.array([float(s["start_s"]) for s in steps])
        d = np.array([float(s["duration_ms"]) for s in steps])
        b = np.array([float(s["requests"]) for s in steps])
        # Average over 10-second bins so an hour stays readable.
        bins = np.arange(0, t.max() + 10, 10)
        idx = np.digitize(t, bins)
        centers, dm, bm = [], [], []
        for i in np.unique(idx):
            m = idx == i
            centers.append(bins[i - 1] + 5)
            dm.append(d[m].mean())
            bm.append(b[m].mean())
        axes[0].plot(centers, dm, label=tag(r), lw=1)
        axes[1].plot(centers, bm, label=tag(r), lw=1)
    axes[0].set_ylabel("step time (ms, 10 s mean)")
    axes[1].set_ylabel("running requests / instance")
    axes[1].set_xlabel("simulated time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    save(fig, out_dir, "timeline.png")


if __name__ == "__main__":
    run_main(main)
