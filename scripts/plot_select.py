#!/usr/bin/env -S /usr/bin/python3
# @brief Plot of `hisparse select --out DIR`: recall of the oracle's attention mass vs H2D bytes moved per step-layer
# (sglang-lru at each replayed buffer size), one line per selector, one panel per K. Reads DIR/select.json, writes
# DIR/select.png atomically.
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_output import save_png  # noqa: E402


def main(out_dir):
    with open(os.path.join(out_dir, "select.json")) as f:
        data = json.load(f)
    rows = [r for r in data["rows"] if r["layer"] == "all"]
    ks = sorted({r["top_k"] for r in rows})
    fig, axes = plt.subplots(1, len(ks), figsize=(6.2 * len(ks), 4.6), squeeze=False)
    markers = "os^Dv<>"
    for ax, k in zip(axes[0], ks):
        sel = [r for r in rows if r["top_k"] == k]
        for i, r in enumerate(sel):
            reps = sorted(r["replay"], key=lambda b: b["buffer_size"])
            x = [b["h2d_bytes_per_step_layer"] / 1024.0 for b in reps]
            y = [r["recall"]] * len(reps)
            ax.plot(x, y, marker=markers[i % len(markers)], label=f'{r["selector"]} (overlap {r["overlap"]:.2f})')
            for b, xv in zip(reps, x):
                ax.annotate(f'H={b["buffer_size"]}', (xv, r["recall"]), textcoords="offset points", xytext=(3, 4),
                            fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel(f'H2D KiB per step-layer (sglang-lru, {data["row_bytes"]} B rows)')
        ax.set_ylabel("recall of the oracle top-K attention mass")
        ax.set_title(f"K = {k}: {data['steps']} steps, model layers {data['model_layers']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="best", framealpha=0.6)
    fig.suptitle(f'measured: {os.path.basename(data["source"])} (left of a line = fewer bytes; higher = more attention kept)',
                 fontsize=9)
    save_png(fig, os.path.join(out_dir, "select.png"), dpi=120, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plot_select.py OUT_DIR")
    main(sys.argv[1])
