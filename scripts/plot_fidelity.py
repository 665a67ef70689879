#!/usr/bin/env -S /usr/bin/python3
# @brief Plots a `hisparse fidelity --out DIR` run: published vs tool per point (log scale, the diagonal is a perfect
# match) and each point's error with its ± tolerance band and its recorded error.
"""Usage: /usr/bin/python3 scripts/plot_fidelity.py DIR   (reads DIR/fidelity.json, writes DIR/fidelity.png)"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_output import plain_log_ticks, run_main, save_png  # noqa: E402

MARKERS = {"tpot_ms": "o", "tokens_per_s": "s", "gain": "^", "max_concurrency": "D"}


def published_mid(p):
    if p["published"] is not None:
        return p["published"], None
    lo, hi = p["published_range"]
    return (lo + hi) / 2, (hi - lo) / 2


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "fidelity.json")) as f:
        report = json.load(f)
    points = [(run["name"], p) for run in report["runs"] for p in run["points"]]
    if not points:
        sys.exit("fidelity.json holds no point")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, max(4.5, 0.32 * len(points) + 2)),
                                   gridspec_kw={"width_ratios": [1, 1.3]})
    # Left: each metric's published figure against the tool's, as a ratio to keep the metrics on one axis.
    seen = set()
    for _, p in points:
        pub, half = published_mid(p)
        label = p["metric"] if p["metric"] not in seen else None
        seen.add(p["metric"])
        ax1.errorbar(pub, p["plan"], xerr=half, fmt=MARKERS.get(p["metric"], "o"), label=label, capsize=3)
        if p["simulate"] is not None:
            ax1.plot(pub, p["simulate"], "x", color="grey")
    lo = min(min(published_mid(p)[0], p["plan"]) for _, p in points)
    hi = max(max(published_mid(p)[0], p["plan"]) for _, p in points)
    ax1.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], "k--", lw=0.8, label="tool = published")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    plain_log_ticks(ax1, "x")
    plain_log_ticks(ax1, "y")
    ax1.set_xlabel("published")
    ax1.set_ylabel("tool (plan; x = simulate)")
    ax1.set_title("published vs tool (modelled)")
    ax1.legend(fontsize=8)
    ax1.grid(True, which="both", alpha=0.3)
    # Right: each point's error with its band (shaded) and its recorded error (tick).
    names = [f"{run}/{p['id']}" for run, p in points]
    ys = list(range(len(points)))[::-1]
    for y, (_, p) in zip(ys, points):
        tol = p["tolerance_pct"]
        ax2.barh(y, 2 * tol, left=-tol, height=0.6, color="#cde8cd", edgecolor="none")
        colour = {"within-band": "tab:green", "ok": "tab:orange"}.get(p["status"], "tab:red")
        ax2.plot(p["error_pct"], y, "o", color=colour)
        if p["recorded_error_pct"] is not None:
            ax2.plot(p["recorded_error_pct"], y, "|", color="black", markersize=12)
    ax2.axvline(0, color="k", lw=0.8)
    ax2.set_yticks(ys)
    ax2.set_yticklabels(names, fontsize=8)
    ax2.set_xlabel("error % (tool − published) / published; band = ± tolerance; | = recorded")
    ax2.set_title(f"{report['within_band']} of {report['points']} points within their band")
    ax2.grid(True, axis="x", alpha=0.3)
    path = os.path.join(out_dir, "fidelity.png")
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    plt.close(fig)
    print("wrote", path)


if __name__ == "__main__":
    run_main(main)
