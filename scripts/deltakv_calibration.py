#!/usr/bin/env python3
"""@brief Writes a DeltaKV reconstruction calibration (sim/calibration/deltakv_calibration.h) from the `deltakv`
rows of a `hisparse bench deltakv --csv` file: the row with the most rows per call at the chosen reference count.
  scripts/deltakv_calibration.py BENCH_CSV --hardware scenarios/hardware/h100-sxm.yaml --date YYYY-MM-DD --out FILE
The measuring GPU's HBM rate (hbm_bytes_per_s of --hardware) converts the measured time into bytes."""
import argparse
import csv
import os
import sys
import tempfile

import yaml


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--hardware", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--refs", type=int, default=4, help="reference rows per compressed row of the row used (4)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.csv)) if r["op"] == "deltakv" and int(r["batch"]) == a.refs]
    if not rows:
        sys.exit(f"{a.csv}: no deltakv row with refs = {a.refs} (column batch)")
    r = max(rows, key=lambda r: int(r["rows"]))
    hw = yaml.safe_load(open(a.hardware))
    rate = hw["hbm_bytes_per_s"]
    if isinstance(rate, str):
        units = {"TB/s": 1e12, "GB/s": 1e9}
        rate = next(float(rate[: -len(u)]) * f for u, f in units.items() if rate.endswith(u))
    dim = int(r["config"].split(" x ")[1].split()[0])
    ns_per_row = float(r["median_us"]) * 1e3 / int(r["rows"])
    text = (f"# DeltaKV reconstruction timed by `hisparse bench deltakv` ({r['config']}, CUDA-graph median);\n"
            f"# written by scripts/deltakv_calibration.py from {a.csv}.\n"
            "deltakv_reconstruction:\n"
            f"  device: \"{r['device']}\"\n  date: {a.date}\n  source: {a.csv}\n  dim: {dim}\n  refs: {a.refs}\n"
            f"  rows_per_call: {r['rows']}\n  ns_per_row: {ns_per_row:.4f}\n"
            f"  hbm_bytes_per_s: {rate:.6g}   # {os.path.basename(a.hardware)}\n")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.out)) or ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
