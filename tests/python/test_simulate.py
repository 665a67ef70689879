"""hisparse.simulate: the CLI's run in this process, its files byte for byte, its figures as structs."""

import filecmp
import re
import sys

import pytest

import hisparse
from package_util import cli, run_cli  # noqa: F401 (fixtures)

SCENARIO = "dsv32-8xh200-1tb"
WORKLOAD = "synthetic_poisson"


def same_files(a, b):
    """Both folders hold the same file names, each with the same bytes (a shallow=False comparison)."""
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    assert not mismatch and not errors, f"differ: {mismatch}, unreadable: {errors}"
    return names


@pytest.mark.parametrize("kwargs,flags", [
    # Three modes at one closed-loop level with a timeline window: report.json and 4 files per run.
    ({"mode": "all", "concurrency": 4, "num_requests": 8, "timeline_start": 0.1, "timeline_length": 0.5},
     ["--mode", "all", "--concurrency", "4", "--num-requests", "8", "--timeline-start", "0.1",
      "--timeline-length", "0.5"]),
    # The workload's own arrivals, both overlaps, an override.
    ({"mode": "hisparse", "duration": 2, "overlap": "both", "device_buffer_size": 6144, "timeline_length": 0},
     ["--mode", "hisparse", "--duration", "2", "--overlap", "both", "--device-buffer-size", "6144",
      "--timeline-length", "0"]),
    # A concurrency sweep: sweep.json and sweep.csv.
    ({"mode": "both", "concurrency": [1, 4], "num_requests": 8}, ["--concurrency", "1,4", "--num-requests", "8"]),
])
def test_simulate_files_equal_the_cli(cli, tmp_path, kwargs, flags):
    """Expected: the Python call writes the same files with the same bytes as the CLI given the same flags."""
    got = hisparse.simulate(SCENARIO, WORKLOAD, out=tmp_path / "py", **kwargs)
    run_cli(cli, "simulate", "--scenario", SCENARIO, "--workload", WORKLOAD, *flags, "--no-plots",
            "--out", tmp_path / "cli")
    names = same_files(tmp_path / "py", tmp_path / "cli")
    assert names, "two empty folders would match trivially"
    if got.sweep:
        assert names == ["sweep.csv", "sweep.json"]
    else:
        assert "report.json" in names and all(f"summary_{r.tag}.json" in names for r in got.runs)


def test_simulate_text_is_the_cli_stdout(cli, tmp_path):
    """Expected: result.text is what the CLI prints, but for the measured wall time and the "wrote" line."""
    got = hisparse.simulate(SCENARIO, WORKLOAD, mode="both", concurrency=2, num_requests=4, timeline_length=0)
    out = run_cli(cli, "simulate", "--scenario", SCENARIO, "--workload", WORKLOAD, "--concurrency", "2",
                  "--num-requests", "4", "--timeline-length", "0", "--out", tmp_path / "cli").stdout
    import re
    wall = re.compile(r"[0-9.]+ s wall")
    cli_lines = [wall.sub("X s wall", x) for x in out.splitlines() if not x.startswith("wrote ")]
    assert [wall.sub("X s wall", x) for x in got.text.splitlines()] == cli_lines


def test_simulate_runs_are_structs_of_the_summary():
    """Expected: each run is a struct whose figures are its summary's (finished = arrivals here, every request of the
    closed loop sent and done), the dynamic run carries its demotion count, and the tables hold one row per request
    and per step."""
    got = hisparse.simulate(SCENARIO, WORKLOAD, mode="all", concurrency=2, num_requests=6, timeline_length=0)
    assert [r.tag for r in got.runs] == ["full_none", "hisparse_none", "dynamic_none"]
    for r in got.runs:
        assert r.concurrency == 2 and r.arrivals == 6 and r.finished == 6 and r.rejected == 0
        assert r.tokens_per_s > 0 and r.tpot_p50_ms > 0 and 0 <= r.hit_rate <= 1
        requests = got.table("requests", run=r)
        assert len(requests) == 6 and {q["id"] for q in requests} == {str(i) for i in range(6)}
        assert len(got.table("steps", run=r.tag)) > 0
    assert got.run("full_none").hit_rate == 1.0  # full KV: every row on the GPU
    assert got.run("dynamic_none").demotions >= 0
    rows = got.table("runs")
    assert [row["tag"] for row in rows] == ["full_none", "hisparse_none", "dynamic_none"]
    with pytest.raises(ValueError, match="3 runs"):
        got.table("requests")


def test_simulate_to_pandas():
    """Expected: with pandas, to_pandas gives the CSV's columns typed (one row per request), the runs' table one row
    per run; without pandas, an ImportError that says so and names table() as the way without it."""
    got = hisparse.simulate(SCENARIO, WORKLOAD, mode="hisparse", concurrency=2, num_requests=4, timeline_length=0)
    pandas = pytest.importorskip("pandas")
    requests = got.to_pandas("requests")
    assert isinstance(requests, pandas.DataFrame) and len(requests) == 4
    assert list(requests.columns) == list(got.table("requests")[0].keys())
    assert requests["tpot_ms"].dtype.kind == "f"
    assert got.to_pandas("runs").loc[0, "finished"] == 4


def test_simulate_to_pandas_without_pandas(monkeypatch):
    got = hisparse.simulate(SCENARIO, WORKLOAD, mode="hisparse", concurrency=1, num_requests=2, timeline_length=0)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"needs pandas.*table\(\)"):
        got.to_pandas("steps")


def test_simulate_sweep_rows():
    """Expected: several levels give one sweep row per level and mode, in the CLI's order, and the crossover field."""
    got = hisparse.simulate(SCENARIO, WORKLOAD, mode="both", concurrency="1,2", num_requests=4)
    assert [(r.concurrency, r.mode) for r in got.sweep] == [(1, "full"), (1, "hisparse"), (2, "full"), (2, "hisparse")]
    assert isinstance(got.crossover, int)
    assert all(r.finished == 4 for r in got.sweep)


def test_simulate_errors_are_the_cli_messages():
    """Expected: a bad mode or an unknown keyword is refused with the CLI's wording."""
    with pytest.raises(ValueError, match="--mode 'sometimes' is unknown"):
        hisparse.simulate(SCENARIO, WORKLOAD, mode="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_plots'"):
        hisparse.simulate(SCENARIO, WORKLOAD, no_plots=True)
    with pytest.raises(ValueError, match="--concurrency"):
        hisparse.simulate(SCENARIO, WORKLOAD, concurrency=[4, 2])


def test_simulate_prefix_cache_figures(cli, tmp_path):
    """Expected: on a colocated node over the Mooncake conversation trace's first 20 s (its prompts open with one
    shared 512-token block, so the second prompt on the node already hits), prefix_cache="on" reports the cache: a hit
    rate in (0, 1), the prefill tokens it saved (> 0), TTFT's mean and the host-pool bytes it held (peak >= mean > 0);
    the files are the CLI's with --prefix-cache on; off, the structs carry no cache and zeros."""
    kwargs = {"mode": "hisparse", "duration": 20, "timeline_length": 0}
    on = hisparse.simulate("dsv4-flash-8xh100-tp8", "mooncake_conversation", prefix_cache="on",
                           out=tmp_path / "py", **kwargs)
    run_cli(cli, "simulate", "--scenario", "dsv4-flash-8xh100-tp8", "--workload", "mooncake_conversation",
            "--mode", "hisparse", "--duration", "20", "--timeline-length", "0", "--prefix-cache", "on",
            "--out", tmp_path / "cli")
    same_files(tmp_path / "py", tmp_path / "cli")
    r = on.run("hisparse_none")
    assert r.prefix_cache and 0 < r.prefix_hit_rate < 1 and r.prefill_tokens_saved > 0
    assert r.ttft_mean_ms > 0 and r.prefix_cache_peak_bytes >= r.prefix_cache_mean_bytes > 0
    assert "cached_tokens" in on.table("requests")[0]
    off = hisparse.simulate("dsv4-flash-8xh100-tp8", "mooncake_conversation", prefix_cache="off", **kwargs)
    r = off.run("hisparse_none")
    assert not r.prefix_cache and r.prefix_hit_rate == 0 and r.prefill_tokens_saved == 0


def test_simulate_v2_admission_figures():
    """Expected: --admission v2 under the current coordinator on the DeepSeek-V3.2 node over 20 s of the Mooncake
    conversation trace admits requests both as V2 and as standard; the run's fields are the counts the CLI's
    "v2 admissions" line prints, in its order, and they add up to at least the finished requests (re-admissions after
    a retraction count again). The older coordinator names itself and counts nothing by outcome; without
    --admission v2 the fields are empty and zero."""
    kwargs = {"mode": "hisparse", "duration": 20, "timeline_length": 0}
    out = hisparse.simulate("dsv32-8xh200-1tb", "mooncake_conversation", admission="v2", **kwargs)
    r = out.run("hisparse_none")
    assert r.v2_coordinator == "current"
    line = re.search(r"v2 admissions \(current coordinator, modelled\): (\d+) as V2; standard: (\d+) no whole page, "
                     r"(\d+) prefix shorter than H, (\d+) host capacity, (\d+) indexer pages, (\d+) temp buffer",
                     out.text)
    assert line, out.text
    counts = (r.v2_admitted_as_v2, r.v2_standard_no_whole_page, r.v2_standard_shorter_than_buffer,
              r.v2_standard_host_capacity, r.v2_standard_indexer_pages, r.v2_standard_temp_buffer)
    assert counts == tuple(int(x) for x in line.groups())
    assert r.v2_admitted_as_v2 > 0 and sum(counts) >= r.finished > 0
    older = hisparse.simulate("dsv32-8xh200-1tb", "mooncake_conversation", admission="v2", v2_coordinator="older",
                              **kwargs).run("hisparse_none")
    assert older.v2_coordinator == "older" and older.v2_admitted_as_v2 == 0
    plain = hisparse.simulate("dsv32-8xh200-1tb", "mooncake_conversation", **kwargs).run("hisparse_none")
    assert plain.v2_coordinator == "" and plain.v2_evictions == 0
