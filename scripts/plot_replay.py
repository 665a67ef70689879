#!/usr/bin/env -S /usr/bin/python3
# @brief Plots of `hisparse replay --out DIR`: hit rate vs buffer size per policy (Belady as the ceiling) and the
# distribution of misses per step-layer, steady state and cold start apart. Reads DIR/replay.json, writes two PNGs atomically.
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from plot_output import legend_outside, plain_log_ticks, run_main, save_png  # noqa: E402


def save(fig, path):
    save_png(fig, path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def by_policy(results):
    out = {}
    for r in results:
        out.setdefault(r["policy"], []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: r["buffer_size"])
    return out


def plot_hit_rate(data, path):
    pol = by_policy(data["results"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if "belady" in pol:
        rows = pol["belady"]
        x = [r["buffer_size"] for r in rows]
        y = [100 * r["hit_rate"] for r in rows]
        ax.plot(x, y, "k--", lw=2, label="belady (offline optimum: ceiling)")
        ax.fill_between(x, y, 100, color="0.85", label="unreachable by any policy")
    for name, rows in pol.items():
        if name == "belady":
            continue
        ax.plot([r["buffer_size"] for r in rows], [100 * r["hit_rate"] for r in rows], "o-", label=name)
    rec = data["recommendation"]
    # A recommendation exists only with a deployment (--scenario): the advice at the trace's own context mix.
    if rec.get("device_buffer_size"):
        ax.axvline(rec["device_buffer_size"], color="tab:red", lw=1, ls=":",
                   label=f"advised H = {rec['device_buffer_size']} ({rec['setting']}, {rec['policy']})")
    t = data["trace"]
    ax.set_title(f"Hit rate vs device buffer size  ({t['requests']} requests, {t['decode_steps']} steps, "
                 f"{t['layers']} layers, K={t['top_k']})", fontsize=9)
    ax.set_xlabel("device_buffer_size H (slots per request per layer)")
    ax.set_ylabel("hit rate (%)  = 1 - misses / selected")
    ax.grid(alpha=0.3)
    legend_outside(ax)
    save(fig, path)


def phase_counts(pairs):
    """{misses: step-layers} of a JSON histogram ([[misses, count], ...])."""
    out = {}
    for m, c in pairs:
        out[m] = out.get(m, 0) + c
    return out


def draw_ccdf(ax, counts, colour, style, label):
    """Fraction of step-layers with more than m misses; returns the lowest fraction drawable (1 without samples)."""
    items = sorted((m, c) for m, c in counts.items() if c > 0)
    if not items:
        return 1.0
    m = np.array([x[0] for x in items], dtype=float)
    c = np.array([x[1] for x in items], dtype=float)
    ccdf = 1.0 - np.cumsum(c) / c.sum()
    keep = ccdf > 0  # the last point (0) cannot be drawn on a log axis
    ax.step(np.concatenate(([0.0], m[keep])), np.concatenate(([1.0], ccdf[keep])), where="post", color=colour,
            ls=style, label=label)
    return 0.5 / c.sum()


def plot_misses(data, path):
    pol = by_policy(data["results"])
    ncols = min(3, len(pol))
    nrows = (len(pol) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.8 * ncols, 3.8 * nrows), sharey=True, squeeze=False)
    floor = 1.0
    for ax, (name, rows) in zip(axes.flat, pol.items()):
        for i, r in enumerate(rows):
            colour = f"C{i % 10}"
            stats = r["misses_per_step_layer"]
            cold = phase_counts(r.get("cold_start_miss_histogram", []))
            steady = phase_counts(r["miss_histogram"])
            for m, c in cold.items():
                steady[m] -= c
            # The steady state solid, the cold start (first step and warm-up) dashed in the same colour.
            for counts, style, phase in ((steady, "-", "steady"), (cold, "--", "cold start")):
                label = f"H = {r['buffer_size']} {phase} (p99 {stats.get(phase.replace(' ', '_'), {}).get('p99')})"
                floor = min(floor, draw_ccdf(ax, counts, colour, style, label))
        ax.axhline(0.01, color="0.5", lw=0.8, ls="--")
        ax.set_yscale("log")
        plain_log_ticks(ax, "y")
        ax.set_title(name)
        ax.set_xlabel("misses per step-layer")
        ax.grid(alpha=0.3)
        legend_outside(ax, fontsize=7)
    for ax in list(axes.flat)[len(pol):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("fraction of step-layers with more misses")
        row[0].set_ylim(floor, 1.5)
    fig.suptitle("Miss distribution, steady state (solid) and cold start: first step and warm-up (dashed); "
                 "complementary CDF, grey line = 1%, so p99 is where a curve crosses it", fontsize=10)
    fig.tight_layout()
    save(fig, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_replay.py DIR   (DIR holds replay.json from `hisparse replay --out DIR`)")
    out = sys.argv[1]
    with open(os.path.join(out, "replay.json")) as f:
        data = json.load(f)
    plot_hit_rate(data, os.path.join(out, "replay_hit_rate.png"))
    plot_misses(data, os.path.join(out, "replay_misses.png"))


if __name__ == "__main__":
    run_main(main)
