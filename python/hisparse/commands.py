"""hisparse.plan / advise / validate: the library's typed requests, run inside this process (docs/python.md).

Keyword arguments are the CLI's flags with underscores (`seq_lens=[16384, 32768]` is `--seq-lens 16384,32768`,
`strategies=True` is `--strategies`, None / False leave a flag out), with the same units and meanings; each sets one
field of the request the CLI builds. The override settings (top_k, kv_dtype, mtp_draft_tokens, attention_table, ...)
are the settings table's (hisparse.settings()): each keyword by the setting's name, parsed and range-checked by the
same code as its flag (hisparse_prefetch=False is a setting, not a flag left out) (hisparse._core.PlanRequest /
AdviseRequest), and the library runs it. The results are structs of the library's outcome (PlanResult, AdviseResult:
the rows the CLI prints, typed, with to_pandas()), and the JSON the CLI writes (plan.json, advise.json) built in
memory from the same outcome.
"""

import json
import os

import numpy as np

from ._native import core, stdout_silenced
from .tables import pandas_module, struct_frame, struct_rows

_SUFFIX = {"k": 1024, "m": 1024 * 1024}


def _flags(options, multitoken=()):
    """The CLI flags `options` stand for (the provenance the reports print, and validate's own check)."""
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


def _counts(key, value):
    """A list flag's integers: ints, or "16K" / "1M" as the CLI reads them (K = 1024, M = 1024²); a string may hold
    several, comma-separated."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            out.append(int(item))
            continue
        text = str(item).strip()
        scale = _SUFFIX.get(text[-1:].lower(), 1)
        digits = text[:-1] if scale > 1 else text
        if not digits.isdigit():
            raise ValueError(f"{key}: {item!r} is not a count (expected e.g. 16384 or '16K')")
        out.append(int(digits) * scale)
    if not out:
        raise ValueError(f"{key}: empty list")
    return out


def _number(key, value, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{key}: {value!r}, expected a number")
    return kind(value)


def _text(key, value):
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{key}: {value!r}, expected a string or path")
    return os.fspath(value)


def _names(key, value):
    """A list of names or paths (a comma-separated string, or a list of strings / paths)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return [_text(key, v).strip() for v in items if not isinstance(v, str) or v.strip()]


# The override settings (the scenario's and the cost model's) are not listed here: every one is a keyword by its name
# in the settings table (sim/api/settings_table.cpp, hisparse.settings()), walked by _apply_settings. The groups a
# command takes are the CLI's (apps/scenario_flags.h): advise chooses H, the ratio and the running cap itself.
_GROUP_CHOSEN, _GROUP_DEPLOYMENT, _GROUP_HOST_RESERVE, _GROUP_COST = 1, 2, 4, 8
_SETTING_GROUPS = {
    "plan": _GROUP_CHOSEN | _GROUP_DEPLOYMENT | _GROUP_HOST_RESERVE | _GROUP_COST,
    "advise": _GROUP_DEPLOYMENT | _GROUP_HOST_RESERVE | _GROUP_COST,
    # For a SimulateRequest's setup (its CLI takes no --host-reserve-bytes): _apply_settings("simulate", ...).
    "simulate": _GROUP_CHOSEN | _GROUP_DEPLOYMENT | _GROUP_COST,
}

# keyword -> (where in the request, conversion). "s." is setup, "m." misses, "t." strategies.
_INT, _FLOAT, _BOOL = (lambda k, v: _number(k, v, int)), (lambda k, v: _number(k, v, float)), (lambda k, v: bool(v))
_COMMON = {
    "miss_curve": ("m.surface", _text), "miss_fraction": ("m.fraction", _FLOAT), "trace": ("m.trace", _text),
    "policy": ("m.policy", _text), "threads": ("m.threads", _INT), "rescale_trace_top_k": ("m.rescale_trace_top_k", _BOOL),
    "seq_lens": ("seq_lens", _counts), "workload": ("workload", _text),
}
_PLAN = dict(_COMMON, **{
    "sweep_buffer_sizes": ("sweep_buffer_sizes", _counts), "sweep_ratios": ("sweep_ratios", _counts),
    "batch_cap": ("batch_cap", _INT), "strategies": ("t.enabled", _BOOL), "eviction_budget": ("t.eviction_budget", _INT),
    "compression_ratio": ("t.compression_ratio", _FLOAT), "compression_sinks": ("t.compression_sinks", _INT),
    "compression_recent": ("t.compression_recent", _INT), "reconstruct_bytes": ("t.reconstruct_bytes", _FLOAT),
    "recall_from": ("t.recall_file", _text), "recall_top_k": ("t.recall_top_k", _INT),
})
_ADVISE = dict(_COMMON, **{
    "buffer_sizes": ("buffer_sizes", _counts), "ratios": ("ratios", _counts), "mix_classes": ("mix_classes", _INT),
    "decision_rule": ("decision_rule", _text), "compare_miss_curves": ("compare_miss_curves", _names),
    "layouts": ("layouts", lambda k, v: bool(v)),
})


def settings():
    """The settings table: one dict per override setting (name, flag, sglang_alias, kind, unit, range, default, help,
    groups), the same rows the CLI's flags, their --help and the field files' `overrides:` are made from."""
    return struct_rows(core().settings())


def _setting_index():
    """Every setting by its keyword: its name, and its SGLang alias with underscores (kv_cache_dtype)."""
    index = {}
    for row in settings():
        index[row["name"]] = row
        if row["sglang_alias"]:
            index[row["sglang_alias"].replace("-", "_")] = row
    return index


def _setting_text(key, value):
    """A keyword's value as the flag's text, for the table's one parse (bools as true / false, so a number setting
    refuses them as the CLI refuses `--page-size true`)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise ValueError(f"{key}: {value!r}, expected a number, string, path or bool")


def _apply_settings(command, choice, options):
    """Sets every keyword of `options` that names a setting `command` takes into `choice` (a ScenarioChoice) through
    the table, and returns the other keywords. None leaves a setting out (its default); errors are the table's,
    "<name> <value>: expected <range>", as the CLI's for the flag and the field files' for the key."""
    index, groups, rest = _setting_index(), _SETTING_GROUPS[command], {}
    for key, value in options.items():
        row = index.get(key)
        if row is None or not row["groups"] & groups:
            rest[key] = value
        elif value is not None:
            core().set_setting(choice, key, _setting_text(key, value), f"hisparse.{command}(): ")
    return rest


def _request(command, request, table, scenario, options):
    if not isinstance(scenario, (str, os.PathLike)) or not os.fspath(scenario):
        raise ValueError(f"scenario: {scenario!r}, expected a deployment name or a YAML path")
    for reserved in ("no_plots", "help", "args"):
        if reserved in options:
            raise TypeError(f"hisparse.{command}() got an unexpected keyword argument '{reserved}' (use out= and "
                            "plots=; every other flag is a keyword)")
    request.setup.scenario = os.fspath(scenario)
    if command == "plan":
        limits = options.get("limits", "all")
        if limits not in ("all", "memory"):
            raise ValueError(f"limits: {limits!r}, expected 'all' or 'memory'")
        request.memory_only = limits == "memory"
        # In place, so the provenance line keeps the keywords' order (as the CLI keeps the flags').
        options = dict(options, limits=None if limits == "all" else limits)
    parts = {"s": request.setup, "m": request.misses}
    if command == "plan":
        parts["t"] = request.strategies
    for key, value in _apply_settings(command, request.setup, options).items():
        if key == "limits" or value is None or value is False:
            continue
        if key not in table:
            raise TypeError(f"hisparse.{command}() got an unexpected keyword argument '{key}': not a flag of "
                            f"hisparse {command} (see `hisparse {command} --help`)")
        path, convert = table[key]
        owner, _, field = path.rpartition(".")
        setattr(parts[owner] if owner else request, field, convert(key, value))
    # Provenance, as the CLI's reports print it: the command these keywords stand for.
    # (A switch setting given False is written out, as --hisparse-prefetch false: leaving it out would mean the
    # deployment's.)
    index = _setting_index()
    flags = {k: _setting_text(k, v) if k in index and isinstance(v, (bool, np.bool_)) else v for k, v in options.items()}
    request.command_line = " ".join(["hisparse", command, "--scenario", os.fspath(scenario), *_flags(flags)])
    return request


class _CommandResult:
    """What plan and advise share: the scenario, the warnings, the text the CLI prints, the JSON file it writes
    (json_text byte for byte, json parsed) and the tables (table() as dicts, to_pandas() as DataFrames)."""

    _tables = {}  # table name -> (attribute, struct class name in hisparse._core)

    def __init__(self, output):
        self.scenario = output.scenario
        self.warnings = list(output.warnings)
        self.text = output.text
        self.json_text = output.json
        self._json = None

    @property
    def json(self):
        """The JSON file the CLI writes, parsed (a dict)."""
        if self._json is None:
            self._json = json.loads(self.json_text)
        return self._json

    def _table(self, name):
        if name not in self._tables:
            raise ValueError(f"table: {name!r}, expected " + " or ".join(repr(t) for t in self._tables))
        attribute, struct = self._tables[name]
        return getattr(self, attribute), getattr(core(), struct)

    def table(self, name="rows"):
        """The table's rows as dicts, in the CLI's order."""
        return struct_rows(self._table(name)[0])

    def to_pandas(self, name="rows"):
        """The table as a pandas DataFrame (pandas is imported only here)."""
        return struct_frame(type(self).__name__, *self._table(name))


def _plan_curves(doc):
    # One row per point of each throughput-vs-batch curve, its curve's length, mode and memory limit first.
    return [{"seq_len": c["seq_len"], "mode": c["mode"], "memory_limit_per_rank": c["memory_limit_per_rank"], **point}
            for c in doc["curves"] for point in c["points"]]


def _plan_sweeps(doc):
    # The H and host-ratio sweeps in one table, `sweep` naming which knob a row varies.
    return [{"sweep": knob, **row} for knob in ("device_buffer_size", "host_to_device_ratio")
            for row in doc["sweeps"].get(knob, [])]


def _plan_details(doc):
    # Each row's scalar figures (the per-request byte breakdowns and HBM use stay in .json["details"]).
    return [{k: v for k, v in d.items() if not isinstance(v, (list, dict))} for d in doc["details"]]


class PlanResult(_CommandResult):
    """What hisparse.plan returns. rows: PlanRow structs, the table `hisparse plan` prints (per length full KV,
    HiSparse, then dynamic residency; seq_len, mode, max_concurrency, binding_limit, tpot_ms, decode_tokens_per_s,
    hbm_bytes_per_request, ... modelled); warnings; text; json / json_text: plan.json, every detail behind the rows.
    Beside "rows", table() / to_pandas() read plan.json's own tables: "curves" (a row per batch of each
    throughput-vs-batch curve), "sweeps" (the device_buffer_size and host_to_device_ratio sweeps, column `sweep`),
    "details" (each row's scalar figures), "gains" and "dynamic_residency"; their figures are the file's."""

    _tables = {"rows": ("rows", "PlanRow")}
    _json_tables = {"curves": _plan_curves, "sweeps": _plan_sweeps, "details": _plan_details,
                    "gains": lambda doc: list(doc["gains"]),
                    "dynamic_residency": lambda doc: list(doc["dynamic_residency"])}

    def __init__(self, output):
        super().__init__(output)
        self.rows = list(output.rows)

    def table(self, name="rows"):
        """The table's rows as dicts: "rows" (the CLI's table) or one of plan.json's tables."""
        if name in self._json_tables:
            return self._json_tables[name](self.json)
        if name not in self._tables:
            raise ValueError(f"table: {name!r}, expected " + " or ".join(repr(t) for t in [*self._tables,
                                                                                          *self._json_tables]))
        return super().table(name)

    def to_pandas(self, name="rows"):
        """The table as a pandas DataFrame (pandas is imported only here)."""
        if name in self._json_tables:
            return pandas_module(type(self).__name__).DataFrame(self.table(name))
        self.table(name)  # an unknown name: the error lists every table
        return super().to_pandas(name)

    def __repr__(self):
        return f"<PlanResult {self.scenario}: {len(self.rows)} rows>"


class AdviseResult(_CommandResult):
    """What hisparse.advise returns. recommendations: one AdviceRecommendation per context mix (setting, mode, H, ratio,
    concurrency, goodput_tokens_per_s, sglang_flags, ...); rows: AdviceRow structs, the settings table printed under
    each mix (its best ratio per device_buffer_size, full KV first); warnings; text; json / json_text: advise.json,
    every candidate and scan behind them. to_pandas("rows") or to_pandas("recommendations")."""

    _tables = {"rows": ("rows", "AdviceRow"), "recommendations": ("recommendations", "AdviceRecommendation")}

    def __init__(self, output):
        super().__init__(output)
        self.recommendations = list(output.recommendations)
        self.rows = list(output.rows)

    def __repr__(self):
        return f"<AdviseResult {self.scenario}: {len(self.recommendations)} context mix(es)>"


class LayoutsResult:
    """What hisparse.advise(layouts=True) returns, as `advise --layouts` prints it: rows, one LayoutRow per layout and
    HiSparse setting on each default prompt shape (workload, layout, hisparse, tokens_per_s_per_gpu, binding, winner,
    ...; modelled); text. to_pandas() / table() give the rows."""

    def __init__(self, output):
        self.scenario = output.scenario
        self.rows = list(output.rows)
        self.text = output.text

    def table(self):
        """The rows as dicts, columns in LayoutRow.fields order."""
        return struct_rows(self.rows)

    def to_pandas(self):
        """The rows as a DataFrame (needs pandas)."""
        return struct_frame("LayoutsResult", self.rows, core().LayoutRow)

    def winners(self):
        """{workload label: the winning layout row}."""
        return {r.workload: r for r in self.rows if r.winner}

    def __repr__(self):
        return f"<LayoutsResult {self.scenario}: {len(self.rows)} rows>"


def _run(command, request, out, plots, verbose):
    out_dir = os.fspath(out) if out is not None else ""
    output = getattr(core(), command)(request, out_dir, bool(plots))
    if verbose:
        print(output.text, end="")
    return (PlanResult if command == "plan" else AdviseResult)(output)


def plan(scenario, *, out=None, plots=False, verbose=False, **options):
    """`hisparse plan --scenario S [flags]` -> PlanResult (its rows typed; .json is plan.json as a dict).

    out: also write plan.json/md/html there, as the CLI does; plots: run the plot script (needs matplotlib); verbose:
    print the command's report. Example: `hisparse.plan("dsv32-8xh200-1tb", seq_lens=[16384, 131072],
    limits="memory")`."""
    request = _request("plan", core().PlanRequest(), _PLAN, scenario, dict(options))
    return _run("plan", request, out, plots, verbose)


def advise(scenario, *, out=None, plots=False, verbose=False, **options):
    """`hisparse advise --scenario S [flags]` -> AdviseResult (.json is advise.json as a dict; same keywords as plan but those advise chooses:
    device_buffer_size, host_to_device_ratio, max_running_requests; plus buffer_sizes=, ratios=, mix_classes=,
    decision_rule=, compare_miss_curves=). layouts=True: `advise --layouts` instead, -> LayoutsResult (prints only:
    out= and plots= do not apply)."""
    request = _request("advise", core().AdviseRequest(), _ADVISE, scenario, dict(options))
    if request.layouts:
        if out is not None or plots:
            raise ValueError("advise(layouts=True) writes no files (the CLI's --layouts only prints): drop out= and plots=")
        result = LayoutsResult(core().advise_layouts(request))
        if verbose:
            print(result.text, end="")
        return result
    return _run("advise", request, out, plots, verbose)


def cuda_status():
    """{"built": CUDA backend compiled in, "available": a usable GPU present, "why": why not, "device": its name}."""
    return struct_rows([core().cuda_status()])[0]


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
    request = core().ValidateRequest()
    request.backend = backend
    request.kernel_config = _text("kernel_config", kernel_config)
    opts = request.options
    opts.cases, opts.seed, opts.start_case, opts.trace_steps = int(cases), int(seed), int(start_case), int(trace_steps)
    if trace is not None:
        opts.trace = _text("trace", trace)
    if only is not None:
        opts.only = [only] if isinstance(only, str) else [str(o) for o in only]
    opts.progress = bool(verbose)  # the per-operation lines and the ETA go to stderr only when asked for
    with stdout_silenced(not verbose):
        rc, reports = core().validate(request)
    rows = struct_rows(reports)
    total = sum(r["cases"] for r in rows)
    bad = sum(r["mismatched_cases"] for r in rows)
    return {"backend": backend, "device": status["device"] if backend == "cuda" else "cpu reference",
            "kernel_config": kernel_config, "seed": seed, "cases": total, "mismatches": bad,
            "passed": rc == 0 and bad == 0, "exit_code": rc, "operations": rows}
