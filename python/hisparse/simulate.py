"""hisparse.simulate: `hisparse simulate` run inside this process (docs/python.md).

Keywords are the CLI's flags with underscores, as for plan and advise (`concurrency=[1, 4]` is `--concurrency 1,4`,
`mode="all"`, `overlap="both"`); each fills one field of the request the CLI builds (hisparse._core.SimulateRequest)
and the library runs it (sim/api/simulate_outcome.h). The result holds structs of figures, not JSON text: one
SimulateRun per run, the sweep's rows for several levels, and `to_pandas()` for the tables. With out=, the files are
the CLI's byte for byte.
"""

import csv
import io
import os

from ._native import core
from .commands import _COMMON, _FLOAT, _INT, _apply_settings, _counts, _text
from .tables import pandas_module, struct_frame, struct_rows

def _levels(key, value):
    """One level (4) or several ([1, 4], "1,4")."""
    return _counts(key, [value] if isinstance(value, int) and not isinstance(value, bool) else value)


# keyword -> (where in the request, conversion); "s." setup, "m." misses (commands.py).
# simulate's own flags; every override setting (the scenario's and the cost model's) is a keyword by its name in the
# settings table (hisparse.settings()), set through _apply_settings as plan's and advise's are.
_SIMULATE = {key: _COMMON[key] for key in ("miss_curve", "miss_fraction", "policy")}
_SIMULATE.update({
    "mode": ("mode", _text), "duration": ("duration_s", _FLOAT), "prefill_instances": ("prefill_instances", _INT),
    "link_model": ("link_model", _text), "miss_model": ("miss_model", _text), "miss_trace": ("m.trace", _text),
    "timeline_start": ("timeline_start_s", _FLOAT), "timeline_length": ("timeline_length_s", _FLOAT),
    "concurrency": ("concurrency", _levels), "think_time": ("think_time_s", _FLOAT),
    "num_requests": ("num_requests", _INT), "admission": ("admission", _text), "max_retries": ("max_retries", _INT),
    "v2_coordinator": ("v2_coordinator", _text),
    "force": ("force", lambda k, v: bool(v)), "prefix_cache": ("prefix_cache", _text),
})


def _rows(text):
    """A CSV text's rows as dicts of strings (the CLI's file, column for column)."""
    return list(csv.DictReader(io.StringIO(text)))


class SimulateResult:
    """What hisparse.simulate returns.

    runs: hisparse._core.SimulateRun structs, in the CLI's order (mode-major, then overlap; a sweep: level-major then
    mode), each with its figures (tokens_per_s, tpot_p50_ms, ..., modelled; wall_s measured) and its tables;
    sweep: SimulateSweepRow structs (several concurrency levels), crossover: the level from which HiSparse leads (-1:
    none); text: what the CLI prints. to_pandas(table) and table(name) give the tables."""

    def __init__(self, output):
        self._output = output
        self.runs = list(output.runs)
        self.sweep = list(output.sweep)
        self.crossover = output.crossover
        self.scenario = output.scenario
        self.workload = output.workload
        self.text = output.text

    def run(self, tag):
        """The run of this tag ("hisparse_none", "full_two-batch", ...); a sweep has one run per level and mode."""
        for r in self.runs:
            if r.tag == tag:
                return r
        raise KeyError(f"no run {tag!r} (runs: {', '.join(r.tag for r in self.runs)})")

    def table(self, name="runs", run=None):
        """Rows as dicts. name: "runs" (one row per run, its figures), "sweep" (the sweep's rows), "requests" or
        "steps" (the run's CSV rows, as strings; run: a tag or a SimulateRun, default the only run)."""
        if name in ("requests", "steps"):
            r = self._one_run(run)
            return _rows(r.requests_csv if name == "requests" else r.steps_csv)
        if name in ("runs", "sweep"):
            return struct_rows(self.runs if name == "runs" else self.sweep)
        raise ValueError(f"table: {name!r}, expected 'runs', 'sweep', 'requests' or 'steps'")

    def to_pandas(self, name="runs", run=None):
        """A pandas DataFrame of table(name, run); requests and steps are read as the CLI's CSV (numbers typed)."""
        if name in ("requests", "steps"):
            r = self._one_run(run)
            csv_text = r.requests_csv if name == "requests" else r.steps_csv
            return pandas_module("SimulateResult").read_csv(io.StringIO(csv_text))
        if name in ("runs", "sweep"):
            structs, struct = (self.runs, "SimulateRun") if name == "runs" else (self.sweep, "SimulateSweepRow")
            return struct_frame("SimulateResult", structs, getattr(core(), struct))
        return pandas_module("SimulateResult").DataFrame(self.table(name))

    def _one_run(self, run):
        if run is None:
            if len(self.runs) != 1:
                raise ValueError(f"run: {len(self.runs)} runs ({', '.join(r.tag for r in self.runs)}); name one")
            return self.runs[0]
        return self.run(run) if isinstance(run, str) else run

    def __repr__(self):
        return f"<SimulateResult {self.scenario} · {self.workload}: {len(self.runs)} run(s)>"


def simulate(scenario, workload, *, out=None, plots=False, verbose=False, overlap=None, **options):
    """`hisparse simulate --scenario S --workload W [flags]` -> SimulateResult.

    out: also write the CLI's files there (report.json and per-run summary/requests/steps/timeline files, or a
    sweep's sweep.json/csv and, with plots=True, sweep.png), byte for byte as the CLI writes them; verbose: print the
    command's report. overlap: "none", "two-batch" or "both" (each in turn). Example:
    `hisparse.simulate("dsv32-8xh200-1tb", "synthetic_poisson", mode="all", concurrency=4, num_requests=8)`."""
    request = _request(scenario, workload, overlap, options)
    result = SimulateResult(core().simulate(request, os.fspath(out) if out is not None else "", bool(plots)))
    if verbose:
        print(result.text, end="")
    return result


def _request(scenario, workload, overlap, options):
    """The SimulateRequest hisparse.simulate runs for these arguments (built, not run)."""
    if not isinstance(scenario, (str, os.PathLike)) or not os.fspath(scenario):
        raise ValueError(f"scenario: {scenario!r}, expected a deployment name or a YAML path")
    request = core().SimulateRequest()
    request.setup.scenario = os.fspath(scenario)
    request.workload = _text("workload", workload)
    if overlap == "both":
        request.both_overlaps = True
    elif overlap is not None:
        request.setup.overlap = _text("overlap", overlap)
    parts = {"s": request.setup, "m": request.misses}
    for key, value in _apply_settings("simulate", request.setup, options).items():
        if value is None or value is False:
            continue
        if key not in _SIMULATE:
            raise TypeError(f"hisparse.simulate() got an unexpected keyword argument '{key}': not a flag of "
                            "hisparse simulate (see `hisparse simulate --help`; out=, plots= and verbose= are "
                            "Python's own)")
        path, convert = _SIMULATE[key]
        owner, _, field = path.rpartition(".")
        setattr(parts[owner] if owner else request, field, convert(key, value))
    return request
