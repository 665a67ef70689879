#!/usr/bin/env -S /usr/bin/python3
# @brief Fits the simulator's default miss curve (per-layer miss fraction vs H/K) to the real SmolLM2 top-k traces.
"""Replays traces/real/smollm2_k256_sorted.hstr and smollm2_k128.hstr with `hisparse replay` at
H/K in {1, 1.25, 1.5, 2, 3, 4, 6, 8} (sglang-lru and belady), then writes scenarios/miss_models/<name>.yaml.

Run from the repo root:
  /usr/bin/python3 scripts/fit_miss_model.py --hisparse build/release/apps/hisparse
      [--out scenarios/miss_models/smollm2-real.yaml] [--work DIR] [--threads N]

Fraction of one (policy, H) = sum(misses) / sum(selected - newest_hits) over decode steps >= 1 of every
request and layer. It is what StatisticalMissParams.by_ratio means (the newest token has a reserved slot and
never misses). Step 0 is left out: the traces start with the buffer holding positions 0..H-1 (initial state
identity), so nearly all of step 0 misses (0.96-0.98); the simulator treats the first step apart.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

RATIOS = [1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0]
POLICIES = ["sglang-lru", "belady"]
TRACES = [  # (label, path, K); the first one feeds the simulator, the others are kept as reference curves
    ("k256", "traces/real/smollm2_k256_sorted.hstr", 256),
    ("k128", "traces/real/smollm2_k128.hstr", 128),
]
STEADY_FROM = 64  # steps >= this: the warm-up after the start has died out (used for a reference curve only)


def replay(hisparse, trace, k, work, threads):
    """Runs hisparse replay; returns (replay.json, {(policy, H): [usable, misses, usable_steady, misses_steady]})."""
    sizes = [int(round(r * k)) for r in RATIOS]
    out = os.path.join(work, os.path.basename(trace) + ".replay")
    steps_csv = os.path.join(work, os.path.basename(trace) + ".steps.csv")
    cmd = [hisparse, "replay", "--trace", trace, "--buffer-sizes", ",".join(map(str, sizes)),
           "--policy", ",".join(POLICIES), "--out", out, "--per-step-csv", steps_csv]
    if threads:
        cmd += ["--threads", str(threads)]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "replay.json")) as f:
        summary = json.load(f)
    acc = {}
    nrange = [1 << 62, 0]
    with open(steps_csv, newline="") as f:
        rd = csv.reader(f)
        head = next(rd)
        col = {name: i for i, name in enumerate(head)}
        for name in ("policy", "buffer_size", "step", "seq_len", "selected", "newest_hits", "misses"):
            if name not in col:
                sys.exit(f"{steps_csv}: column '{name}' missing (header {head})")
        ip, ih, ist, isel, inew, imis, isl = (col[c] for c in ("policy", "buffer_size", "step", "selected",
                                                                "newest_hits", "misses", "seq_len"))
        for row in rd:
            step = int(row[ist])
            n = int(row[isl])
            nrange[0], nrange[1] = min(nrange[0], n), max(nrange[1], n)
            if step == 0:
                a = acc.setdefault(("first", 0), [0, 0, 0, 0])
                a[0] += int(row[isel]) - int(row[inew])
                a[1] += int(row[imis])
                continue
            a = acc.setdefault((row[ip], int(row[ih])), [0, 0, 0, 0])
            usable = int(row[isel]) - int(row[inew])
            mis = int(row[imis])
            a[0] += usable
            a[1] += mis
            if step >= STEADY_FROM:
                a[2] += usable
                a[3] += mis
    os.remove(steps_csv)
    return summary, sizes, acc, nrange


def curve(acc, sizes, policy, steady=False):
    pts = []
    for r, h in zip(RATIOS, sizes):
        a = acc[(policy, h)]
        usable, mis = (a[2], a[3]) if steady else (a[0], a[1])
        pts.append((r, mis / usable))
    return pts


def fmt_curve(pts):
    return "[" + ", ".join(f"[{r:g}, {f:.4f}]" for r, f in pts) + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hisparse", default="build/release/apps/hisparse", help="hisparse binary")
    ap.add_argument("--out", default="scenarios/miss_models/smollm2-real.yaml")
    ap.add_argument("--work", help="keep replay outputs here (default: a temporary directory)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if not os.path.exists(args.hisparse):
        sys.exit(f"--hisparse {args.hisparse}: no such file (build it: scripts/build.sh release hisparse)")

    work = args.work or tempfile.mkdtemp(prefix="fit_miss_model_")
    os.makedirs(work, exist_ok=True)
    results = {}
    nmin, nmax = 1 << 62, 0
    for label, path, k in TRACES:
        summary, sizes, acc, nrange = replay(args.hisparse, path, k, work, args.threads)
        if summary["trace"]["top_k"] != k:
            sys.exit(f"{path}: top_k {summary['trace']['top_k']}, expected {k}")
        results[label] = (summary, sizes, acc, k)
        nmin, nmax = min(nmin, nrange[0]), max(nmax, nrange[1])

    main_label = TRACES[0][0]
    summary, sizes, acc, k = results[main_label]
    rows = []
    for label, (s, sz, a, kk) in results.items():
        for pol in POLICIES:
            rows.append((label, pol, kk, curve(a, sz, pol), curve(a, sz, pol, steady=True),
                         {(c["policy"], c["buffer_size"]): c["hit_rate"] for c in s["results"]}, sz))
    first = [results[lab][2][("first", 0)] for lab, *_ in TRACES]
    first_fraction = sum(f[1] for f in first) / sum(f[0] for f in first)
    lru = {lab: pts for lab, pol, kk, pts, *_ in rows if pol == "sglang-lru"}
    lru_steady = {lab: st for lab, pol, kk, pts, st, *_ in rows if pol == "sglang-lru"}
    other = [lab for lab, *_ in TRACES[1:]]
    k_ratio = [lru[o][i][1] / lru[main_label][i][1] for o in other for i in range(len(RATIOS))]
    steady_ratio = [lru_steady[main_label][i][1] / lru[main_label][i][1] for i in range(len(RATIOS))]

    cmd = f"/usr/bin/python3 scripts/fit_miss_model.py --hisparse {args.hisparse} --out {args.out}"
    lines = [
        "# Per-layer miss fraction of the top-k selections on slow-path decode steps (n > H), as a function of",
        "# the buffer-to-top-k ratio H/K, fitted to real top-k traces. The simulator's default miss model",
        "# (sim/buffer_miss_curve.h; `hisparse simulate --miss-model statistical --miss-curve NAME`).",
        "#",
        f"# Produced by: {cmd}",
        "#   which runs, per trace (sizes = H/K x K):",
    ]
    for label, path, kk in TRACES:
        sz = results[label][1]
        lines.append(f"#   hisparse replay --trace {path} --buffer-sizes {','.join(map(str, sz))} "
                     f"--policy {','.join(POLICIES)} --out DIR --per-step-csv CSV")
    lines += [
        f"# Source traces: {TRACES[0][1]} (curves), "
        + ", ".join(p for _, p, _ in TRACES[1:]) + " (reference);",
        f"#   SmolLM2-135M-Instruct, {summary['trace']['layers']} layers, {summary['trace']['requests']} requests, "
        f"{summary['trace']['decode_steps']} decode steps, n = {nmin}..{nmax},",
        f"#   initial state {summary['trace']['initial_state']} (traces/real/README.md).",
        "# fraction = sum(misses) / sum(selected - newest_hits) over steps >= 1 of all requests and layers (the",
        "#   newest token has a reserved slot). Step 0 is left out: it starts from the trace's arbitrary buffer",
        f"#   ({100 * first_fraction:.1f}% misses); the simulator models the first step apart. Between points: linear",
        "#   in H/K; beyond the last point: flat.",
        "#",
        "# CAVEATS: a 135M model with small K decoding greedily (it repeats itself, so reuse is on the high side);",
        "#   DeepSeek-V3.2's indexer at K = 2048 may differ. Scaling by H/K alone is an assumption: at equal H/K",
        f"#   the smaller-K trace misses {min(k_ratio):.2f}-{max(k_ratio):.2f}x as often (reference curves), and",
        "#   n/H cannot be told apart from H/K in these traces (per H, n/H spans only the trace's n range), so",
        "#   there is no n/H term. The curves include the warm-up after the start; the steady state",
        f"#   (steps >= {STEADY_FROM}) is {min(steady_ratio):.2f}-{max(steady_ratio):.2f}x the curve (lowest at large H/K).",
        "#",
        "# Table: fraction (hit rate over all steps from `hisparse replay`, for cross-checking):",
        "#   H/K   " + "".join(f"{lab}-{pol}".ljust(19) for lab, pol, *_ in rows),
    ]
    for i, r in enumerate(RATIOS):
        cells = [f"{pts[i][1]:.4f} ({100 * hit[(pol, sz[i])]:.2f}%)".ljust(19)
                 for lab, pol, kk, pts, _, hit, sz in rows]
        lines.append(f"#   {r:<5g} " + "".join(cells).rstrip())
    lines += [
        f"name: {os.path.splitext(os.path.basename(args.out))[0]}",
        f"top_k: {k}                       # K of the trace the curves were measured on",
        "curves:                          # policy: [[H/K, miss fraction], ...], H/K ascending",
    ]
    for lab, pol, kk, pts, steady, hit, sz in rows:
        if lab == main_label:
            lines.append(f"  {pol}: {fmt_curve(pts)}")
    lines.append("reference:                       # not used by the simulator: the same fit on other data / steps")
    for lab, pol, kk, pts, steady, hit, sz in rows:
        if lab != main_label:
            lines.append(f"  {pol}-{lab}: {fmt_curve(pts)}")
    for lab, pol, kk, pts, steady, hit, sz in rows:
        lines.append(f"  {pol}-{lab}-steady: {fmt_curve(steady)}")
    text = "\n".join(lines) + "\n"

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
