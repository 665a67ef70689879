#!/usr/bin/env -S /usr/bin/python3
# @brief Plots a `hisparse simulate --concurrency N1,N2,...` sweep: full KV vs HiSparse decode tokens/s and TPOT
# against concurrency (TPOT on a log axis: an overloaded level is orders of magnitude above the rest), the TPOT SLO
# and the crossover (where HiSparse, meeting the SLO, starts to beat full KV and keeps the lead) marked.
"""Usage: /usr/bin/python3 scripts/plot_sweep.py DIR   (reads DIR/sweep.json, writes DIR/sweep.png)"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_output import legend_below, plain_log_ticks, run_main, save_png  # noqa: E402

STYLE = {"full": ("full KV", "tab:blue", "o"), "hisparse": ("HiSparse", "tab:red", "s")}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "sweep.json")) as f:
        sweep = json.load(f)
    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(12, 4.6))
    for mode, (label, color, marker) in STYLE.items():
        pts = sorted((p for p in sweep["points"] if p["mode"] == mode), key=lambda p: p["concurrency"])
        if not pts:
            continue
        c = [p["concurrency"] for p in pts]
        ax_t.plot(c, [p["tokens_per_s"] for p in pts], marker=marker, color=color, label=label)
        ax_p.plot(c, [p["tpot_p50_ms"] for p in pts], marker=marker, color=color, label=f"{label} p50")
        ax_p.plot(c, [p["tpot_p99_ms"] for p in pts], marker=marker, color=color, ls=":", alpha=0.6, label=f"{label} p99")
    slo = sweep.get("tpot_slo_ms")
    if slo:
        ax_p.axhline(slo, color="tab:green", ls="-.", lw=1.2, label=f"TPOT SLO {slo:g} ms")
    ax_p.set_yscale("log")
    plain_log_ticks(ax_p, "y")
    cross = sweep.get("crossover")
    for ax in (ax_t, ax_p):
        ax.set_xscale("log", base=2)
        plain_log_ticks(ax, "x")
        ax.set_xlabel("concurrent clients (closed loop)")
        ax.grid(True, which="both", alpha=0.3)
        if cross:
            ax.axvline(cross, color="black", ls="--", lw=1, label=f"crossover: {cross} clients")
    ax_t.set_ylabel("decode tokens/s (whole node)")
    ax_t.set_title("throughput (modelled)")
    ax_p.set_ylabel("TPOT (ms, log; queueing apart)")
    ax_p.set_title("TPOT (modelled)")
    legend_below(ax_t, drop=0.2)
    legend_below(ax_p, drop=0.2)
    fig.suptitle(f"{sweep['scenario']} · {sweep['workload']} · overlap {sweep['overlap']}"
                 + ("" if cross else " · no crossover in range"))
    path = os.path.join(out_dir, "sweep.png")
    fig.tight_layout()
    save_png(fig, path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print("wrote", path, "(TPOT on a log axis" + (f", the {slo:g} ms SLO line)" if slo else ", no SLO in sweep.json)"))


if __name__ == "__main__":
    run_main(main)
