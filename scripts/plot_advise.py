#!/usr/bin/env -S /usr/bin/python3
# @brief Plots of `hisparse advise`: reads DIR/advise.json, writes advise_<i>_pareto.png and advise_<i>_break_even.png
# per advice (each to a temp name, then renamed).
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_output import legend_below, plain_log_ticks, run_main, save_png  # noqa: E402

FULL, HS, REC = "#8c8c8c", "#1f6fb4", "#d62728"


def save(fig, out_dir, name):
    save_png(fig, os.path.join(out_dir, name), dpi=110, bbox_inches="tight")
    plt.close(fig)


def seq_name(n):
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def front(points):
    """Pareto front of (cost, goodput): lowest cost for each goodput level, ascending in cost."""
    best, out = -1.0, []
    for cost, good in sorted(points, key=lambda p: (p[0], -p[1])):
        if good > best:
            out.append((cost, good))
            best = good
    return out


def plot_pareto(adv, slo, out_dir, i):
    cands = [c for c in adv["candidates"] if c["per_rank"] > 0]
    rec = adv["candidates"][adv["recommended"]] if adv["recommended"] >= 0 else None
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.6))
    for ax, key, scale, label in ((axes[0], "tpot_ms", 1.0, "TPOT at the setting's best batch (ms)"),
                                  (axes[1], "hbm_bytes_per_request", 1e-6, "HBM per request (MB)")):
        for mode, color, name in (("full", FULL, "full KV"), ("hisparse", HS, "HiSparse settings")):
            pts = [(c[key] * scale, c["goodput_tokens_per_s"]) for c in cands if c["mode"] == mode]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18 if mode == "hisparse" else 60, color=color,
                           alpha=0.7, label=name, zorder=3)
        fr = front([(c[key] * scale, c["goodput_tokens_per_s"]) for c in cands])
        if fr:
            ax.step([p[0] for p in fr], [p[1] for p in fr], where="post", color="#444444", lw=1, label="Pareto front")
        if rec:
            ax.scatter([rec[key] * scale], [rec["goodput_tokens_per_s"]], marker="*", s=260, color=REC, zorder=4,
                       label="recommended: " + rec["setting"])
        ax.set_xlabel(label)
        ax.set_ylabel("decode goodput (tokens/s per instance)")
        ax.grid(alpha=0.3)
        legend_below(ax)
    ax = axes[2]
    for n, curve in enumerate(adv["curves"]):
        pts = curve["points"]
        ax.plot([p[1] for p in pts], [p[2] for p in pts], marker="o", ms=3,
                color=REC if n == 0 else FULL, label=curve["setting"] + (" (recommended)" if n == 0 else ""))
    ax.axvline(slo, color="#2ca02c", ls="--", lw=1, label=f"TPOT SLO {slo:g} ms")
    ax.set_xlabel("TPOT (ms) as the batch grows")
    ax.set_ylabel("tokens/s per instance")
    ax.grid(alpha=0.3)
    legend_below(ax)
    fig.suptitle(f"{adv['label']}: every setting at its largest batch within the limits (modelled)", fontsize=11)
    fig.tight_layout()  # room for each panel's legend under it
    save(fig, out_dir, f"advise_{i}_pareto.png")


def plot_break_even(adv, out_dir, i):
    be = adv["break_even"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    conc = be["by_concurrency"]
    if conc:
        x = [p["concurrency"] for p in conc]
        ax.plot(x, [p["full_tokens_per_s"] for p in conc], color=FULL, marker="o", ms=3, label="full KV")
        ax.plot(x, [p["hisparse_tokens_per_s"] for p in conc], color=HS, marker="o", ms=3, label=be["hisparse_setting"])
        if be["pays_from_batch_per_rank"] > 0:
            c0 = next(p["concurrency"] for p in conc if p["batch_per_rank"] == be["pays_from_batch_per_rank"])
            ax.axvline(c0, color=REC, ls="--", lw=1, label=f"HiSparse pays from concurrency {c0}")
        ax.set_xscale("log")
        plain_log_ticks(ax, "x")
        ax.set_xlabel("requests in flight per instance")
        ax.set_ylabel("tokens/s per instance")
        ax.grid(alpha=0.3, which="both")
        legend_below(ax)
        ax.set_title("throughput with at most this many requests (each mode capped at its limit)", fontsize=9)
    lens = be["by_seq_len"]
    if lens:
        x = [p["seq_len"] for p in lens]
        ax2.plot(x, [p["full_goodput"] for p in lens], color=FULL, marker="o", label="full KV")
        ax2.plot(x, [p["hisparse_goodput"] for p in lens], color=HS, marker="o", label=be["hisparse_setting"])
        if be["pays_from_seq_len"] > 0:
            ax2.axvline(be["pays_from_seq_len"], color=REC, ls="--", lw=1,
                        label=f"HiSparse wins from {seq_name(be['pays_from_seq_len'])}")
        ax2.set_xscale("log", base=2)
        ax2.set_xticks(x)
        ax2.set_xticklabels([seq_name(n) for n in x], rotation=45, fontsize=8)
        ax2.set_xlabel("context length (tokens)")
        ax2.set_ylabel("goodput at the largest concurrency (tokens/s)")
        ax2.grid(alpha=0.3)
        legend_below(ax2, drop=0.24)
        ax2.set_title("each mode at its own best concurrency", fontsize=9)
    fig.suptitle(f"{adv['label']}: where HiSparse starts to pay (modelled)", fontsize=11)
    fig.tight_layout()
    save(fig, out_dir, f"advise_{i}_break_even.png")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_advise.py OUT_DIR (with OUT_DIR/advise.json)")
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "advise.json")) as f:
        doc = json.load(f)
    for i, adv in enumerate(doc["advice"]):
        if adv["recommended"] < 0:
            continue
        plot_pareto(adv, doc["tpot_slo_ms"], out_dir, i)
        plot_break_even(adv, out_dir, i)


if __name__ == "__main__":
    run_main(main)
