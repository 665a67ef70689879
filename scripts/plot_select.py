#!/usr/bin/env -S /usr/bin/python3
# @brief Plot of `hisparse select --out DIR`: recall of the token oracle's attention mass vs H2D bytes moved per
# step-layer (sglang-lru at each replayed buffer size), one line per (selector, granularity, KV scope), one panel per K:
# token and page granularity side by side (colour = selector, marker = granularity, dashed = per KV head). Reads
# DIR/select.json, writes DIR/select.png atomically.
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_output import run_main, save_png  # noqa: E402


def granularity(r):
    # select.json before page granularity had no such field: token rows.
    return f'page{r["page_size"]}' if r.get("granularity") == "page" else "token"


def main(out_dir):
    with open(os.path.join(out_dir, "select.json")) as f:
        data = json.load(f)
    rows = [r for r in data["rows"] if r["layer"] == "all"]
    ks = sorted({r["top_k"] for r in rows})
    selectors = list(dict.fromkeys(r["selector"] for r in rows))
    grans = list(dict.fromkeys(granularity(r) for r in rows))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "os^Dv<>"
    # One panel per K, stacked, each with its legend to the right (many rows once pages and KV heads are in).
    fig, axes = plt.subplots(len(ks), 1, figsize=(11.0, 5.2 * len(ks)), squeeze=False)
    for ax, k in zip(axes[:, 0], ks):
        for r in (r for r in rows if r["top_k"] == k):
            reps = sorted(r["replay"], key=lambda b: b["buffer_size"])
            x = [b["h2d_bytes_per_step_layer"] / 1024.0 for b in reps]
            y = [r["recall"]] * len(reps)
            kv = r.get("kv", "shared")
            ax.plot(x, y, color=colours[selectors.index(r["selector"]) % len(colours)],
                    marker=markers[grans.index(granularity(r)) % len(markers)],
                    linestyle="--" if kv == "per-kv-head" else "-",
                    label=f'{r["selector"]} {granularity(r)} {kv} (overlap {r["overlap"]:.2f})')
            if granularity(r) == "token" and kv == "shared":
                for b, xv in zip(reps, x):
                    ax.annotate(f'H={b["buffer_size"]}', (xv, r["recall"]), textcoords="offset points", xytext=(3, 4),
                                fontsize=7)
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel(f'H2D KiB per step-layer (sglang-lru at H = each buffer multiple of K; {data["row_bytes"]} B per token row)')
        ax.set_ylabel("recall of the token oracle's top-K attention mass\n(per-kv-head: of each group's own oracle)")
        ax.set_title(f"K = {k} tokens: {data['steps']} steps, model layers {data['model_layers']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.6)
    fig.suptitle(f'measured: {os.path.basename(data["source"])} (left of a line = fewer bytes; higher = more attention '
                 f'kept; marker = granularity, dashed = per KV head)', fontsize=9)
    save_png(fig, os.path.join(out_dir, "select.png"), dpi=120, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plot_select.py OUT_DIR")
    run_main(lambda: main(sys.argv[1]))
