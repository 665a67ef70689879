#!/usr/bin/env -S /usr/bin/python3
# @brief Plots of `hisparse plan`: reads DIR/plan.json, writes plan_memory.png, plan_throughput.png, plan_limits.png,
# plan_sweep_buffer.png and plan_sweep_ratio.png into DIR (each to a temp name, then renamed). A plan without HiSparse
# (a model with no sparse indexer: "hisparse_applicable": false) has full-KV panels only and no sweeps.
import json
import math
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
from plot_output import plain_log_ticks, run_main, save_png  # noqa: E402

FULL, HS = "#8c8c8c", "#1f6fb4"
MODE_COLOR = {"full": FULL, "hisparse": HS}
MODE_NAME = {"full": "full KV", "hisparse": "HiSparse"}
LIMIT_COLOR = {"max_running_requests": "#6b6b6b", "hbm": "#d62728", "logical_pool": "#ff7f0e", "host_pool": "#bcbd22",
               "host_dram": "#8c564b", "pcie": "#9467bd", "slo": "#2ca02c"}


def seq_name(n):
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def save(fig, out_dir, name):
    save_png(fig, os.path.join(out_dir, name), dpi=110, bbox_inches="tight")
    plt.close(fig)


def hisparse_applies(plan):
    return plan.get("hisparse_applicable", True)


def plan_modes(plan):
    return ["full", "hisparse"] if hisparse_applies(plan) else ["full"]


def plot_memory(plan, out_dir):
    hbm = plan["hbm_per_gpu"]
    modes = plan_modes(plan)
    details = [d for d in plan["details"] if d["mode"] in modes]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 1.3]})
    labels, x = [], []
    kv_name = "latent in use" if hisparse_applies(plan) else "K + V in use"
    parts = [("weights", "#4d4d4d"), ("outside static pool", "#b0b0b0"), ("activation reserve", "#d9d9d9"),
             (kv_name, "#1f6fb4"), ("indexer keys in use", "#ff9f40"), ("KV pool free", "#e8f1fa")]
    for i, d in enumerate(details):
        u = d["hbm_use"]
        free = max(0.0, hbm["kv_budget"] - u["latent_used"] - u["indexer_used"])
        vals = [hbm["weights"], max(0.0, hbm["outside_static"]), hbm["activation_reserve"], u["latent_used"],
                u["indexer_used"], free]
        bottom = 0.0
        for (name, color), v in zip(parts, vals):
            if name == "indexer keys in use" and not hisparse_applies(plan):
                continue
            ax.bar(i, v / 1e9, bottom=bottom / 1e9, color=color, edgecolor="white", linewidth=0.5,
                   label=name if i == 0 else None)
            bottom += v
        ax.text(i, bottom / 1e9 + 0.5, f"{d['max_per_rank']}", ha="center", va="bottom", fontsize=8)
        labels.append(f"{seq_name(d['seq_len'])}\n{MODE_NAME[d['mode']]}")
        x.append(i)
    ax.axhline(hbm["hbm"] / 1e9, color="black", lw=0.8, ls="--")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("GB per GPU")
    ax.set_title("HBM per GPU at each mode's maximum concurrency (requests per rank on top)", fontsize=11)
    ax.legend(fontsize=8, ncol=3, loc="lower center", bbox_to_anchor=(0.5, -0.32))
    ax.set_ylim(0, hbm["hbm"] / 1e9 * 1.12)

    if not hisparse_applies(plan):
        ax2.axis("off")
        note = "No host KV pool. HiSparse " + plan.get("hisparse_not_applicable", "not applicable")
        ax2.text(0.0, 0.5, textwrap.fill(note, 42), fontsize=8.5, va="center", ha="left", transform=ax2.transAxes)
        save(fig, out_dir, "plan_memory.png")
        return
    # Host DRAM per node: the host pools are allocated whole at start-up; the used part depends on concurrency.
    pools = {f["key"]: f["value"] for f in plan["pools"]}
    dram = plan["scenario"]["host_dram_bytes"]
    gpus = max(1, plan["scenario"]["gpus_per_instance"])
    per_node = pools["host_pool_bytes_per_node"]
    hs = [d for d in details if d["mode"] == "hisparse"]
    xs = list(range(len(hs)))
    node_gpus = per_node / pools["host_pool_bytes_per_gpu"] if pools["host_pool_bytes_per_gpu"] else gpus
    used = [d["host_used_bytes_per_gpu"] * node_gpus / 1e9 for d in hs]
    ax2.bar(xs, [per_node / 1e9] * len(hs), color="#e8f1fa", edgecolor=HS, label="host pools allocated")
    ax2.bar(xs, used, color=HS, label="in use at max concurrency")
    ax2.axhline(dram / 1e9, color="#d62728", lw=1.2, ls="--", label="host DRAM")
    ax2.set_xticks(xs, [seq_name(d["seq_len"]) for d in hs], fontsize=8)
    ax2.set_ylabel("GB per decode node")
    ax2.set_title("Host DRAM per node (HiSparse)")
    ax2.set_ylim(0, max(dram, per_node) / 1e9 * 1.12)
    ax2.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1)
    save(fig, out_dir, "plan_memory.png")


def plot_throughput(plan, out_dir):
    curves = plan["curves"]
    lens = sorted({c["seq_len"] for c in curves})
    rows = {(r["seq_len"], r["mode"]): r for r in plan["rows"]}
    slo = plan["scenario"]["tpot_slo_ms"]
    n = len(lens)
    cols = 2 if n in (2, 4) else min(3, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6.2 * cols, 3.9 * nrows), squeeze=False)
    for k, L in enumerate(lens):
        ax = axes[k // cols][k % cols]
        top = 1
        marks = []
        for c in curves:
            if c["seq_len"] != L:
                continue
            col = MODE_COLOR[c["mode"]]
            pts = c["points"]
            xs = [p["batch"] for p in pts]
            top = max([top] + xs)
            ok = [p["tokens_per_s"] if p["within_slo"] else math.nan for p in pts]
            ax.plot(xs, [p["tokens_per_s"] for p in pts], color=col, lw=1.2, ls=":", alpha=0.8)
            ax.plot(xs, ok, color=col, lw=2.2, label=MODE_NAME[c["mode"]])
            r = rows[(L, c["mode"])]
            if r["max_concurrency"] > 0:
                d = next(x for x in plan["details"] if x["seq_len"] == L and x["mode"] == c["mode"])
                ax.plot([r["max_concurrency"]], [r["decode_tokens_per_s"]], marker="*", ms=14, color=col, mec="black",
                        mew=0.6, zorder=5)
                marks.append((r["max_concurrency"], r["decode_tokens_per_s"], col,
                              f"{r['max_concurrency']} req · {r['binding_limit']} · {d['tpot_ms']:.1f} ms"))
        if top > 64:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        else:
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        lo = min([1] + [p["batch"] for c in curves if c["seq_len"] == L for p in c["points"]])
        for x, y, col, text in marks:
            # Labels point inwards so they stay inside the axes.
            if top > 64:
                frac = math.log(x / lo) / math.log(top / lo) if top > lo else 0
            else:
                frac = (x - lo) / (top - lo) if top > lo else 0
            left = frac > 0.5
            below = col == FULL  # full KV's label under its star, HiSparse's above: they never collide
            # Full KV's label goes right of its star (its own curve rises to the left, so it would cross it there);
            # a boxed background keeps either label readable where it overlaps the other mode's curve.
            right = below or not left
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(10 if right else -10, -14 if below else 10),
                        ha="left" if right else "right", va="top" if below else "bottom", fontsize=8, color=col,
                        bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=col, lw=0.6, alpha=0.9), zorder=6)
        ymax = max([1.0] + [p["tokens_per_s"] for c in curves if c["seq_len"] == L for p in c["points"]])
        ax.set_ylim(0, ymax * 1.12)
        ax.set_title(f"seq_len {seq_name(L)}", fontsize=10)
        ax.set_xlabel("concurrent requests per instance", fontsize=8.5)
        ax.set_ylabel("decode tokens/s per instance", fontsize=8.5)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        if k == 0:
            ax.legend(fontsize=8.5, loc="lower right")
    for k in range(n, nrows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle(f"Decode throughput vs concurrency — solid: TPOT within the {slo:g} ms SLO, dotted: past it; "
                 "★ each mode's maximum (requests · binding limit · TPOT)", fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "plan_throughput.png")


def plot_limits(plan, out_dir):
    modes = plan_modes(plan)
    details = [d for d in plan["details"] if d["mode"] in modes]
    lens = sorted({d["seq_len"] for d in details})
    keys = [l["key"] for l in details[0]["limits"]]
    fig, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 4.2), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, mode in zip(axes, modes):
        width = 0.8 / len(keys)
        for j, key in enumerate(keys):
            for i, L in enumerate(lens):
                d = next(x for x in details if x["seq_len"] == L and x["mode"] == mode)
                lim = next(l for l in d["limits"] if l["key"] == key)
                if lim["per_rank"] is None:
                    continue
                v = max(lim["per_rank"] * d["ranks"], 0.8)
                bind = key == d["binding_limit"]
                ax.bar(i + (j - (len(keys) - 1) / 2) * width, v, width * 0.92, color=LIMIT_COLOR.get(key, "#777"),
                       alpha=1.0 if bind else 0.35, edgecolor="black" if bind else "none", linewidth=1.2,
                       label=key if i == 0 else None)
                if bind:
                    ax.text(i + (j - (len(keys) - 1) / 2) * width, v * 1.08, f"{int(v)}", ha="center", fontsize=7.5,
                            fontweight="bold")
        ax.set_yscale("log")
        plain_log_ticks(ax, "y")
        ax.set_xticks(range(len(lens)), [seq_name(L) for L in lens])
        ax.set_xlabel("sequence length")
        ax.set_title(f"{MODE_NAME[mode]}: requests per instance under each limit (binding: solid, outlined)", fontsize=9.5)
        ax.grid(axis="y", alpha=0.3)
    vmax = max([1] + [l["per_rank"] * d["ranks"] for d in details for l in d["limits"] if l["per_rank"] is not None])
    axes[0].set_ylim(0.6, vmax * 2.0)
    axes[0].set_ylabel("requests per instance (log)")
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, ncol=len(labels), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, -0.06))
    fig.tight_layout()
    save(fig, out_dir, "plan_limits.png")


def plot_sweep(plan, out_dir, key, name, xlabel):
    rows = plan["sweeps"][key]
    if not rows:
        # No sweep (HiSparse not applicable): remove a stale PNG of an earlier run rather than leave it.
        stale = os.path.join(out_dir, name)
        if os.path.exists(stale):
            os.remove(stale)
        return
    lens = sorted({r["seq_len"] for r in rows})
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    current = next((r[key] for r in rows if r["is_current"]), None)
    for i, L in enumerate(lens):
        rs = sorted((r for r in rows if r["seq_len"] == L), key=lambda r: r[key])
        xs = [r[key] for r in rs]
        col = cmap(i / max(1, len(lens) - 1) * 0.85)
        axes[0].plot(xs, [r["max_concurrency"] for r in rs], marker="o", ms=3, color=col, label=f"n = {seq_name(L)}")
        axes[2].plot(xs, [r["tpot_ms"] for r in rs], marker="o", ms=3, color=col)
        if key == "device_buffer_size":
            axes[1].plot(xs, [r["misses_per_request_step"] for r in rs], marker="o", ms=3, color=col)
    if key == "host_to_device_ratio":
        rs = sorted((r for r in rows if r["seq_len"] == lens[0]), key=lambda r: r[key])
        xs = [r[key] for r in rs]
        axes[1].plot(xs, [r["host_pool_bytes_per_node"] / 1e9 for r in rs], marker="o", ms=3, color=HS,
                     label="host pools per node")
        dram = plan["scenario"]["host_dram_bytes"] / 1e9
        axes[1].axhline(dram, color="#d62728", ls="--", lw=1, label="host DRAM")
        ax_b = axes[1].twinx()
        ax_b.plot(xs, [r["device_pool_tokens"] for r in rs], marker="s", ms=3, color="#ff7f0e", label="device pool tokens")
        ax_b.set_ylabel("device pool tokens", fontsize=8, color="#ff7f0e")
        ax_b.tick_params(labelsize=7)
        axes[1].set_ylabel("GB")
        axes[1].set_title("host pools vs DRAM; device pool (orange)", fontsize=9.5)
        axes[1].legend(fontsize=7.5, loc="upper left")
    else:
        axes[1].set_ylabel("rows loaded per request per step")
        axes[1].set_title("misses per request per step", fontsize=9.5)
    axes[0].set_ylabel("requests per instance")
    axes[0].set_title("HiSparse max concurrency", fontsize=9.5)
    axes[2].axhline(plan["scenario"]["tpot_slo_ms"], color="#d62728", ls="--", lw=1)
    axes[2].set_ylabel("ms")
    axes[2].set_title("TPOT at max concurrency (SLO dashed)", fontsize=9.5)
    for ax in axes:
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        if current is not None:
            ax.axvline(current, color="#999", lw=0.8, ls=":")
    axes[0].legend(fontsize=7.5)
    fig.tight_layout()
    save(fig, out_dir, name)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_plan.py DIR   (DIR holds plan.json from `hisparse plan`)")
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "plan.json")) as f:
        plan = json.load(f)
    plot_memory(plan, out_dir)
    plot_throughput(plan, out_dir)
    plot_limits(plan, out_dir)
    plot_sweep(plan, out_dir, "device_buffer_size", "plan_sweep_buffer.png", "device_buffer_size H")
    plot_sweep(plan, out_dir, "host_to_device_ratio", "plan_sweep_ratio.png", "host_to_device_ratio")


if __name__ == "__main__":
    run_main(main)
