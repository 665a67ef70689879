"""Issue 19's bar: replaying numpy arrays from Python gives the CLI's numbers, every one of them."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

import hisparse
from package_util import ROOT, arrays, cli, run_cli  # noqa: F401 (fixtures)

SIZES = [48, 32, 96, 64]  # unsorted on purpose: the CLI replays them in ascending order, so must the module
POLICIES = ["sglang-lru", "belady", "fifo", "lfu", "clock", "topk-only"]


def cli_replay(cli, trace_path, out_dir, *extra, sizes=SIZES):
    per_step = out_dir / "steps.csv"
    run_cli(cli, "replay", "--trace", trace_path, "--buffer-sizes", ",".join(map(str, sizes)), "--policy",
            ",".join(POLICIES), "--out", out_dir, "--no-plots", "--per-step-csv", per_step, "--quiet", *extra)
    return ((out_dir / "replay.json").read_text(), (out_dir / "replay.csv").read_text(),
            list(csv.DictReader(per_step.open())))


def test_arrays_replay_matches_cli(arrays, cli, tmp_path):
    topk, seq_lens = arrays
    result = hisparse.replay(topk, SIZES, POLICIES, seq_lens=seq_lens, threads=2)
    trace_path = tmp_path / "t.hstrace"
    hisparse.write_trace(trace_path, topk, seq_lens)
    cli_json, cli_csv, cli_rows = cli_replay(cli, trace_path, tmp_path / "cli", "--threads", "2")

    expected = json.loads(cli_json)
    assert expected["trace"].pop("source") == str(trace_path)
    assert result.json["trace"].pop("source") == "topk arrays"
    assert result.json == expected  # every counter, rate, quantile, histogram, and the (absent) recommendation
    assert result.csv_text == cli_csv
    assert len(result.json["results"]) == len(SIZES) * len(POLICIES)
    assert [r["buffer_size"] for r in result.json["results"][:len(SIZES)]] == sorted(SIZES)

    # Per-step rows: the CLI's --per-step-csv, row for row.
    steps = result.steps
    assert len(steps["misses"]) == len(cli_rows)
    assert len(cli_rows) == len(POLICIES) * len(SIZES) * 3 * sum(len(s) for s in seq_lens)
    for col in ("buffer_size", "request", "layer", "step", "seq_len", "selected", "hits", "newest_hits", "misses",
                "h2d_bytes"):
        cli_col = np.array([int(r[col]) for r in cli_rows], dtype=np.int64)
        np.testing.assert_array_equal(np.asarray(steps[col], dtype=np.int64), cli_col, err_msg=col)
    assert list(steps["policy"]) == [r["policy"] for r in cli_rows]
    # The totals are the sums of the rows (a check on the columns' meaning, not only their equality).
    totals = result.totals
    for (policy, size), t in totals.items():
        mask = (steps["policy"] == policy) & (steps["buffer_size"] == size)
        assert int(steps["misses"][mask].sum()) == t["misses"]
        assert int(steps["hits"][mask].sum()) == t["hits"]
        assert int(steps["h2d_bytes"][mask].sum()) == t["h2d_bytes"]


def test_path_replay_is_the_cli_byte_for_byte(arrays, cli, tmp_path):
    topk, seq_lens = arrays
    trace_path = tmp_path / "t_npy"
    hisparse.write_trace(trace_path, topk, seq_lens, format="npy", request_ids=[7, 3, 11])
    cli_json, cli_csv, _ = cli_replay(cli, trace_path, tmp_path / "cli", "--row-bytes", "656", "--threads", "1")
    result = hisparse.replay(trace_path, SIZES, POLICIES, row_bytes=656, per_step=False)
    assert result.json_text == cli_json
    assert result.csv_text == cli_csv
    assert len(result.steps["misses"]) == 0


def test_output_does_not_depend_on_threads(arrays):
    topk, seq_lens = arrays
    one = hisparse.replay(topk, SIZES, POLICIES, seq_lens=seq_lens, threads=1)
    three = hisparse.replay(topk, SIZES, POLICIES, seq_lens=seq_lens, threads=3)
    assert one.json_text == three.json_text
    for col in one.steps:
        np.testing.assert_array_equal(one.steps[col], three.steps[col])


def test_initial_state_and_top_k_overrides_match_cli(arrays, cli, tmp_path):
    topk, seq_lens = arrays
    trace_path = tmp_path / "t.hstrace"
    hisparse.write_trace(trace_path, topk, seq_lens)
    # --top-k 40 widens every list (trailing -1), --initial-state empty starts every buffer empty.
    sizes = [64, 40, 96]  # each >= the new top_k
    cli_json, _, _ = cli_replay(cli, trace_path, tmp_path / "cli", "--top-k", "40", "--initial-state", "empty",
                                sizes=sizes)
    from_path = hisparse.replay(trace_path, sizes, POLICIES, top_k=40, initial_state="empty")
    from_arrays = hisparse.replay(topk, sizes, POLICIES, seq_lens=seq_lens, top_k=40, initial_state="empty")
    assert from_path.json_text == cli_json
    expected = json.loads(cli_json)
    expected["trace"]["source"] = "topk arrays"
    assert from_arrays.json == expected


def test_dataframes(arrays):
    pd = pytest.importorskip("pandas")
    topk, seq_lens = arrays
    result = hisparse.replay(topk, [32, 64], ["sglang-lru"], seq_lens=seq_lens)
    df = result.steps_df
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(hisparse.replay.__globals__["STEP_COLUMNS"])
    assert len(df) == 2 * 3 * sum(len(s) for s in seq_lens)
    by_size = df.groupby("buffer_size")["misses"].sum().to_dict()
    assert by_size == {h: result.totals[("sglang-lru", h)]["misses"] for h in (32, 64)}
    totals = result.totals_df
    assert list(totals["buffer_size"]) == [32, 64]
    assert list(totals["misses"]) == [result.totals[("sglang-lru", h)]["misses"] for h in (32, 64)]


def test_python_c_one_liner(cli, tmp_path):
    """The issue's words: `python -c "import hisparse; ..."` replays a numpy trace; its numbers are the CLI's."""
    code = (
        "import hisparse, numpy as np, sys\n"
        "rng = np.random.default_rng(5)\n"
        "n = np.arange(200, 230, dtype=np.int32)\n"
        "topk = np.stack([np.stack([np.sort(rng.choice(int(x), 16, replace=False)) for _ in range(2)]) for x in n])\n"
        "hisparse.write_trace(sys.argv[1], topk.astype(np.int32), n)\n"
        "print(hisparse.replay(topk, [16, 32], ['sglang-lru'], seq_lens=n).csv_text, end='')\n")
    trace_path = tmp_path / "one.hstrace"
    proc = subprocess.run([sys.executable, "-c", code, str(trace_path)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    cli_json, cli_csv, _ = None, None, None
    out = tmp_path / "cli"
    run_cli(cli, "replay", "--trace", trace_path, "--buffer-sizes", "16,32", "--policy", "sglang-lru", "--out", out,
            "--no-plots", "--quiet")
    cli_csv = (out / "replay.csv").read_text()
    assert proc.stdout == cli_csv
    assert int(cli_csv.splitlines()[1].split(",")[5]) > 0  # the trace does miss: the comparison is not vacuous
