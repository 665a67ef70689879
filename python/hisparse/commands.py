"""hisparse.plan / advise / validate: the CLI's subcommands run inside this process (docs/python.md).

Keyword arguments become the CLI's flags (`seq_lens=[16384, 32768]` -> `--seq-lens 16384,32768`, `strategies=True`
-> `--strategies`, None / False leave a flag out), so every option of `hisparse plan --help` / `advise --help` is
available and means the same; `args=[...]` passes raw flags. The dicts returned are the files the CLI writes
(plan.json, advise.json), parsed.
"""

import json
import os
import tempfile

import numpy as np

from ._native import core, stdout_silenced


def _flags(options, multitoken=()):
    out = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple, np.ndarray)):
            items = [str(v) for v in value]
            if not items:
                raise ValueError(f"{key}: empty list")
            out += [flag, *items] if key in multitoken else [flag, ",".join(items)]
        elif isinstance(value, (str, int, float, np.integer, np.floating, os.PathLike)):
            out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
        else:
            raise ValueError(f"{key}: {value!r} cannot be passed as {flag} (expected a number, string, list or bool)")
    return out


def _raw(args):
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"args: {args!r}, expected a list of strings (raw CLI flags)")
    return list(args)


def _run_json(command, json_name, scenario, out, plots, verbose, args, options):
    if not isinstance(scenario, (str, os.PathLike)) or not os.fspath(scenario):
        raise ValueError(f"scenario: {scenario!r}, expected a deployment name or a YAML path")
    for reserved in ("out", "no_plots", "help"):
        if reserved in options:
            raise ValueError(f"{reserved}: set by hisparse.{command} itself (use out= and plots=)")
    argv = ["--scenario", os.fspath(scenario), *_flags(options), *_raw(args)]
    with tempfile.TemporaryDirectory(prefix=f"hisparse_{command}_") as tmp:
        out_dir = os.fspath(out) if out is not None else tmp
        argv += ["--out", out_dir] + ([] if plots else ["--no-plots"])
        with stdout_silenced(not verbose):
            rc = core().run_command(command, argv)
        if rc != 0:
            raise RuntimeError(f"hisparse {command} {' '.join(argv)}: exit code {rc}")
        with open(os.path.join(out_dir, json_name), encoding="utf-8") as f:
            return json.load(f)


def plan(scenario, *, out=None, plots=False, verbose=False, args=(), **options):
    """`hisparse plan --scenario S [flags]` -> plan.json as a dict.

    out: also keep plan.json/md/html there (default: a temporary directory); plots: run the plot script (needs
    matplotlib); verbose: let the command print its report to stdout. Example:
    `hisparse.plan("dsv32-8xh200-1tb", seq_lens=[16384, 131072], limits="memory")`."""
    return _run_json("plan", "plan.json", scenario, out, plots, verbose, args, options)


def advise(scenario, *, out=None, plots=False, verbose=False, args=(), **options):
    """`hisparse advise --scenario S [flags]` -> advise.json as a dict (same keywords as plan; e.g. seq_lens=,
    workload=, trace=)."""
    return _run_json("advise", "advise.json", scenario, out, plots, verbose, args, options)


def cuda_status():
    """{"built": CUDA backend compiled in, "available": a usable GPU present, "why": why not, "device": its name}."""
    return dict(core().cuda_status())


def validate(backend="cuda", *, cases=1000, seed=1, start_case=0, only=None, trace=None, trace_steps=0,
             kernel_config="default", verbose=False):
    """`hisparse validate`: the CPU reference against a backend, bit for bit; returns the summary.

    backend "cuda" needs the CUDA backend built in and a GPU: RuntimeError saying which is missing otherwise.
    backend "cpu" checks the harness (the reference against itself) and runs anywhere."""
    if backend not in ("cuda", "cpu"):
        raise ValueError(f"backend: {backend!r}, expected 'cuda' or 'cpu'")
    status = cuda_status()
    if backend == "cuda":
        if not status["built"]:
            raise RuntimeError(
                "hisparse.validate(backend='cuda'): this build of hisparse has no CUDA backend (it was built with "
                "HISPARSE_CUDA=OFF, or without nvcc); install a build made with nvcc (pip install . -C "
                "cmake.define.HISPARSE_CUDA=ON) on a GPU machine, or use backend='cpu' to check the harness only")
        if not status["available"]:
            raise RuntimeError(f"hisparse.validate(backend='cuda'): no usable CUDA GPU: {status['why']}; run it on a "
                               "GPU machine (scripts/gpu_check_python.sh), or use backend='cpu' to check the harness")
    for name, value in (("cases", cases), ("seed", seed), ("start_case", start_case), ("trace_steps", trace_steps)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name}: {value!r}, expected an integer >= 0")
    opts = {"backend": backend, "cases": cases, "start_case": start_case, "seed": seed, "trace": trace,
            "trace_steps": trace_steps, "only": [only] if isinstance(only, str) else only,
            "kernel_config": kernel_config}
    with stdout_silenced(not verbose):
        rc, rows = core().run_validate(_flags(opts, multitoken=("only",)))
    total = sum(r["cases"] for r in rows)
    bad = sum(r["mismatched_cases"] for r in rows)
    return {"backend": backend, "device": status["device"] if backend == "cuda" else "cpu reference",
            "kernel_config": kernel_config, "seed": seed, "cases": total, "mismatches": bad,
            "passed": rc == 0 and bad == 0, "exit_code": rc, "operations": rows}
