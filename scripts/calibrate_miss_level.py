#!/usr/bin/env python3
# @brief Finds the steady-level scale of a miss surface at which `hisparse fidelity` reproduces one published point.
"""Calibrate the level of a measured miss surface to a published field point, by bisection.

The shape of a miss surface (how the steady fraction moves with H/K and n/H) comes from a recorded trace; its level
depends on how stable the model's top-k lists are, which a small stand-in model need not share with the deployed
one. This script fits one number, the scale s on every steady fraction, so that `hisparse fidelity` computes a
given published figure:

    s* = the largest s in [lo, hi] with plan(point; s) >= target      (plan falls as s grows: more misses)

Each trial writes the surface with `hisparse fit-miss-model --steady-scale s --fitted-to POINT` into a scratch
scenario directory (found first through HISPARSE_SCENARIO_DIR, so the tree is untouched) and runs `hisparse
fidelity --no-simulate` on the point's field file. It prints every trial and the scale rounded down to --digits,
which scripts/fit_miss_models.sh then uses. Example (the shipped default):

    python3 scripts/calibrate_miss_level.py --cli build/release/apps/hisparse \\
        --trace traces/real/gemma3_270m_k2048_sorted.hstr --name gemma3-270m-field \\
        --field scenarios/field/alibaba-hierarchical-sparse-dsv32-8xh200.yaml --point gain_32k --target 2.0
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time


def plan_value(args, scale, scratch):
    surface = os.path.join(scratch, "miss_models", args.name + ".yaml")
    run = os.path.splitext(os.path.basename(args.field))[0]
    subprocess.run([args.cli, "fit-miss-model", "--trace", args.trace, "--h-over-k", args.h_over_k, "--policy",
                    args.policy, "--name", args.name, "--out", surface, "--threads", "2", "--steady-scale",
                    repr(scale), "--fitted-to", f"{run}/{args.point}"], check=True, stdout=subprocess.DEVNULL)
    out = os.path.join(scratch, "fidelity")
    env = dict(os.environ, HISPARSE_SCENARIO_DIR=scratch)
    subprocess.run([args.cli, "fidelity", "--field", args.field, "--no-simulate", "--no-plots", "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    report = json.load(open(os.path.join(out, "fidelity.json")))
    for r in report["runs"]:
        for p in r["points"]:
            if p["id"] == args.point:
                if args.name not in p["label"]:
                    sys.exit(f"{args.field}: point {args.point} did not read surface {args.name} ({p['label']}); "
                             f"is it the default for that deployment's top_k?")
                return p["plan"]
    sys.exit(f"{args.field}: no point {args.point}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default="build/release/apps/hisparse")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--name", required=True, help="the surface name the deployment reads by default")
    ap.add_argument("--field", required=True, help="the field file of the point")
    ap.add_argument("--point", required=True)
    ap.add_argument("--target", type=float, required=True, help="the published value plan must reach")
    ap.add_argument("--h-over-k", default="1,1.25,1.5,2,3,4,6,8")
    ap.add_argument("--policy", default="sglang-lru,belady")
    ap.add_argument("--lo", type=float, default=0.05)
    ap.add_argument("--hi", type=float, default=1.0)
    ap.add_argument("--digits", type=int, default=2)
    args = ap.parse_args()
    step = 10.0 ** -args.digits
    with tempfile.TemporaryDirectory() as scratch:
        os.makedirs(os.path.join(scratch, "miss_models"))
        t0 = time.time()
        lo, hi = args.lo, args.hi
        v_lo, v_hi = plan_value(args, lo, scratch), plan_value(args, hi, scratch)
        print(f"scale {lo:.4f}: plan {v_lo:.4f}\nscale {hi:.4f}: plan {v_hi:.4f}", flush=True)
        if v_hi >= args.target:
            best = hi
        elif v_lo < args.target:
            sys.exit(f"even scale {lo} gives {v_lo:.4f} < target {args.target}: the level is not what is off")
        else:
            while hi - lo > step / 2:
                mid = (lo + hi) / 2
                v = plan_value(args, mid, scratch)
                print(f"scale {mid:.4f}: plan {v:.4f} ({time.time() - t0:.0f} s)", flush=True)
                lo, hi = (mid, hi) if v >= args.target else (lo, mid)
            best = lo
        best = math.floor(best / step + 1e-9) * step
        print(f"scale {best:.{args.digits}f}: the largest (rounded down) with plan({args.point}) >= {args.target}")


if __name__ == "__main__":
    main()
