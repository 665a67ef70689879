"""The engine-op collector: times, on the GPU it runs on, the kernels SGLang runs in a decode layer.

    python3 bench/engine_ops/collect_gpu.py --out DIR [--models deepseek-v3.2,glm-5,deepseek-v4-flash]
        [--groups moe,dense,indexer,attention,hisparse,checks,decode_path] [--budget-s 420] [--quick]

Imports the engine's libraries where they are installed (deep_gemm, flash_mla); otherwise from the builds of
bench/engine_ops/build_engine.sh under .engine/build/. Writes DIR/engine_ops.csv (the op-table format of
scenarios/measurements/README.md), DIR/engine_record.npz (the engine-kernel check's record), DIR/device.log and
DIR/collect.log. A group whose library is missing is skipped and logged; every other group still runs.
"""

import argparse
import csv
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import yaml  # noqa: E402

COLUMNS = ["op", "library", "commit", "gpu", "driver", "sm_clock_mhz", "params", "batch", "context", "bytes",
           "median_us", "p10_us", "p90_us", "iters", "method"]


class Budget:
    """Wall-clock budget shared by the groups, so one slow group cannot eat the device call."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def expired(self):
        return time.monotonic() > self.end

    def left(self):
        return max(0.0, self.end - time.monotonic())


def device_info():
    import torch
    q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, check=False).stdout.strip().splitlines()
    driver, clock = (q[0].split(", ") + ["", ""])[:2] if q else ("", "")
    return {"gpu": torch.cuda.get_device_name(), "driver": driver.strip(), "sm_clock_mhz": clock.strip()}


def params_str(params):
    return ";".join(f"{k}={params[k]}" for k in sorted(params))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="deepseek-v3.2,glm-5,deepseek-v4-flash")
    ap.add_argument("--groups", default="checks,hisparse,indexer,dense,moe,attention,decode_path")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget for all groups (seconds)")
    ap.add_argument("--quick", action="store_true", help="one or two grid points per group (a smoke run)")
    ap.add_argument("--batches", default="1,2,4,16,64,128,256", help="tokens per GPU (decode requests)")
    ap.add_argument("--append", action="store_true", help="keep the rows and record already in --out")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "collect.log"), "a")
    t0 = time.monotonic()

    def log(msg):
        line = f"[{time.monotonic() - t0:7.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    import torch
    from shapes import load_model
    pins = yaml.safe_load(open(os.path.join(HERE, "pins.yaml")))
    src = os.path.join(REPO, ".engine", "src")
    # In-place builds of build_engine.sh; an installed engine (pip's deep_gemm, flash_mla) comes later on the path
    # only if these are absent.
    for lib in ("DeepGEMM", "FlashMLA"):
        if os.path.isdir(os.path.join(src, lib)):
            sys.path.insert(0, os.path.join(src, lib))
    os.environ.setdefault("DG_JIT_CACHE_DIR", os.path.join(REPO, ".engine", "build", "dg_cache"))
    info = device_info()
    log(f"device {info} torch {torch.__version__} cuda {torch.version.cuda}")
    with open(os.path.join(args.out, "device.log"), "w") as f:
        f.write(subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False).stdout)
        f.write(f"\ntorch {torch.__version__} cuda {torch.version.cuda}\n")

    models = [load_model(m) for m in args.models.split(",")]
    groups = args.groups.split(",")
    budget = Budget(args.budget_s)
    batches = [1, 8, 64] if args.quick else [int(b) for b in args.batches.split(",")]
    rows, record = [], {}
    if args.append and os.path.exists(os.path.join(args.out, "engine_ops.csv")):
        with open(os.path.join(args.out, "engine_ops.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        if os.path.exists(os.path.join(args.out, "engine_record.npz")):
            import numpy as np
            record = dict(np.load(os.path.join(args.out, "engine_record.npz")))
        log(f"appending to {len(rows)} rows and {len(record)} record arrays")

    def add(op, library, params, batch, t, context=0, nbytes=0):
        commit = {"deep_gemm": pins["deep_gemm"]["commit"], "flash_mla": pins["flashmla"]["commit"],
                  "sglang": pins["sglang"]["commit"], "torch": torch.__version__}[library]
        if t.get("note"):
            log(f"{op} {params_str(params)} b{batch}: {t['note']}")
        rows.append({"op": op, "library": library, "commit": commit, **info, "params": params_str(params),
                     "batch": batch, "context": context, "bytes": nbytes,
                     "median_us": f"{t['median_us']:.3f}", "p10_us": f"{t['p10_us']:.3f}",
                     "p90_us": f"{t['p90_us']:.3f}", "iters": t["iters"], "method": t["method"]})

    def try_import(name):
        try:
            return __import__(name)
        except Exception as e:  # noqa: BLE001 - a missing library skips its groups, logged
            log(f"import {name} FAILED: {e!r}"[:400])
            return None

    dg = try_import("deep_gemm") if {"moe", "dense", "indexer", "checks", "smoke"} & set(groups) else None
    fm = try_import("flash_mla") if {"attention", "checks", "decode_path"} & set(groups) else None
    for group in groups:
        n0 = len(rows)
        g0 = time.monotonic()
        log(f"group {group}: start ({budget.left():.0f} s of budget left)")
        try:
            if group == "smoke" and dg is not None:
                # The smallest DeepGEMM call: tells a JIT or set-up failure apart from a shape problem.
                a = (torch.randn(64, 512, device="cuda").to(torch.float8_e4m3fn),
                     torch.ones(64, 4, device="cuda"))
                b = (torch.randn(256, 512, device="cuda").to(torch.float8_e4m3fn), torch.ones(2, 4, device="cuda"))
                d = torch.empty(64, 256, device="cuda", dtype=torch.bfloat16)
                dg.fp8_gemm_nt(a, b, d, disable_ue8m0_cast=True)
                torch.cuda.synchronize()
                ref = a[0].float() @ b[0].float().t()
                log(f"smoke: deep_gemm fp8_gemm_nt rel err {((d.float() - ref).norm() / ref.norm()).item():.2e}")
            elif group == "checks":
                import engine_checks
                if fm is not None:
                    record.update(engine_checks.flashmla_cases(fm, os.path.join(src, "FlashMLA"), log))
                if dg is not None:
                    record.update(engine_checks.deepgemm_cases(dg, log))
                record.update(engine_checks.v2_cases(os.path.join(src, "sglang"), log))
            elif group == "hisparse":
                import ops_hisparse
                for op, p, b, t in ops_hisparse.collect(os.path.join(src, "sglang"),
                                                        [1, 16, 64] if args.quick else [1, 4, 16, 64, 128], log,
                                                        budget):
                    add(op, "sglang", p, b, t)
            elif group == "indexer" and dg is not None:
                import ops_indexer
                ctxs = [8192] if args.quick else [4096, 16384, 65536]
                for op, p, b, c, t, lib in ops_indexer.collect(dg, models, batches, ctxs, log, budget):
                    add(op, lib, p, b, t, context=c)
            elif group == "dense" and dg is not None:
                import ops_dense
                for op, p, b, t, lib in ops_dense.collect(dg, models, batches, [1, 8], log, budget):
                    add(op, lib, p, b, t)
            elif group == "moe" and dg is not None:
                import ops_moe
                for op, p, b, t in ops_moe.collect(dg, models, batches, [8] if args.quick else [8, 16], log,
                                                   budget):
                    add(op, "deep_gemm", p, b, t)
            elif group == "attention" and fm is not None:
                import ops_attention
                for op, p, b, t in ops_attention.collect(fm, os.path.join(src, "FlashMLA"), models, batches, log,
                                                         budget):
                    add(op, "flash_mla", p, b, t)
            elif group == "decode_path" and fm is not None:
                import ops_decode_path
                for op, p, b, c, nb, t, lib in ops_decode_path.collect(
                        fm, models, batches, os.path.join(REPO, ".engine", "build", "path_copies"), log, budget):
                    add(op, lib, p, b, t, context=c)  # bytes = batch x row_bytes: the table keys on batch
            else:
                log(f"group {group}: skipped (library not importable or unknown group)")
        except Exception as e:  # noqa: BLE001 - a broken group is logged; the others still run
            import traceback
            log(f"group {group}: FAILED {e!r}\n{traceback.format_exc()}"[:3000])
            torch.cuda.synchronize()
        log(f"group {group}: {len(rows) - n0} rows in {time.monotonic() - g0:.0f} s")
        write(args.out, rows, record)  # after every group, so a killed run keeps what it measured
    log(f"done: {len(rows)} rows in {time.monotonic() - t0:.0f} s")


def write(out, rows, record):
    path = os.path.join(out, "engine_ops.csv")
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    if record:
        import numpy as np
        np.savez_compressed(os.path.join(out, "engine_record.npz"), **record)


if __name__ == "__main__":
    main()
