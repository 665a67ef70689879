"""plan and advise from Python: typed results (the rows the CLI prints as structs, to_pandas()), and the JSON the CLI
writes, byte for byte."""

import json
import re

import pytest

import hisparse
from package_util import arrays, cli, run_cli  # noqa: F401 (fixtures)

SCENARIO = "dsv32-8xh200-1tb"
SECONDS = re.compile(r'"plan_seconds": [0-9.e+-]+')


def cli_json_text(cli, tmp_path, command, name, *args):
    """The CLI's file as text, with what differs by construction taken out: the command line's `--out DIR --no-plots`
    (Python has no such flags) and plan.json's measured plan_seconds."""
    out = tmp_path / f"cli_{command}"
    run_cli(cli, command, "--scenario", SCENARIO, *args, "--out", out, "--no-plots")
    text = (out / name).read_text().replace(f" --out {out} --no-plots", "")
    return SECONDS.sub('"plan_seconds": 0', text)


def cli_json(cli, tmp_path, command, name, *args):
    return json.loads(cli_json_text(cli, tmp_path, command, name, *args))


def py_json_text(result):
    return SECONDS.sub('"plan_seconds": 0', result.json_text)


def without_run(plan):
    """plan.json's "run" holds the command line (spelled as the flags were typed) and the wall time."""
    run = plan.pop("run")
    assert set(run) == {"command", "calibration", "workload", "plan_seconds"}
    return plan, run["calibration"], run["workload"]


@pytest.mark.parametrize("kwargs,flags", [
    ({"seq_lens": [16384, 65536]}, ["--seq-lens", "16384,65536"]),
    ({"seq_lens": "32K", "limits": "memory", "strategies": True, "device_buffer_size": 4096},
     ["--seq-lens", "32K", "--limits", "memory", "--strategies", "--device-buffer-size", "4096"]),
])
def test_plan_json_is_the_cli_file_byte_for_byte(cli, tmp_path, kwargs, flags):
    """Expected: the flags as Python spells them give the same command line, so plan.json's text is the CLI's but for
    the measured plan_seconds (and the CLI's own --out / --no-plots)."""
    got = hisparse.plan(SCENARIO, **kwargs)
    assert got.rows, "an empty plan would match trivially"
    assert py_json_text(got) == cli_json_text(cli, tmp_path, "plan", "plan.json", *flags)


def test_plan_rows_are_the_cli_table(cli, tmp_path):
    """Expected: one typed PlanRow per line of the table the CLI prints, in its order (per length full KV, HiSparse,
    dynamic residency), each line's figures as the CLI formats them; the full and HiSparse rows are plan.json's
    `rows`, the dynamic ones its `dynamic_residency`."""
    got = hisparse.plan(SCENARIO, seq_lens=[16384, 131072])
    assert [(r.seq_len, r.mode) for r in got.rows] == [(n, m) for n in (16384, 131072)
                                                       for m in ("full", "hisparse", "dynamic")]
    assert repr(got.rows[0]).startswith("PlanRow(seq_len=16384, mode='full', applicable=True, max_per_rank=")
    for r in got.rows:
        assert isinstance(r.seq_len, int) and isinstance(r.max_concurrency, int) and isinstance(r.tpot_ms, float)
        assert isinstance(r.applicable, bool) and isinstance(r.binding_limit, str)
        assert r.max_concurrency == r.max_per_rank * 8  # 8 dp ranks
        assert (r.resident_per_rank >= 0) == (r.mode == "dynamic")
    stdout = run_cli(cli, "plan", "--scenario", SCENARIO, "--seq-lens", "16384,131072", "--out", tmp_path / "p",
                     "--no-plots").stdout
    line = re.compile(r" +(16384|131072) +(full|hisparse|dynamic) ")
    table = [text.split() for text in stdout.splitlines() if line.match(text)]
    assert [(int(t[0]), t[1], t[2].replace(",", ""), t[3], t[4]) for t in table] == \
        [(r.seq_len, r.mode, str(r.max_concurrency), r.binding_limit, f"{r.tpot_ms:.2f}") for r in got.rows]
    contract = [(x["seq_len"], x["mode"], x["max_concurrency"], x["binding_limit"]) for x in got.json["rows"]]
    rows = [(r.seq_len, r.mode, r.max_concurrency, r.binding_limit) for r in got.rows if r.mode != "dynamic"]
    assert contract == rows
    dynamic = [(x["seq_len"], x["resident_per_rank"]) for x in got.json["dynamic_residency"]]
    assert dynamic == [(r.seq_len, r.resident_per_rank) for r in got.rows if r.mode == "dynamic"]


def test_plan_to_pandas_columns():
    """Expected: to_pandas() has PlanRow's fields as its columns, typed, one row per struct; table() the same dicts."""
    pandas = pytest.importorskip("pandas")
    got = hisparse.plan(SCENARIO, seq_lens=[16384])
    frame = got.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(got.rows) == 3
    assert list(frame.columns) == list(hisparse._native.core().PlanRow.fields)
    assert {"seq_len", "mode", "max_concurrency", "binding_limit", "tpot_ms", "decode_tokens_per_s",
            "hbm_bytes_per_request", "host_bytes_per_request"} <= set(frame.columns)
    assert frame["max_concurrency"].dtype.kind == "i" and frame["tpot_ms"].dtype.kind == "f"
    assert got.table() == frame.to_dict("records")
    with pytest.raises(ValueError, match="table: 'sweep', expected 'rows' or 'curves' or 'sweeps'"):
        got.table("sweep")


def test_plan_json_tables():
    """Expected: plan.json's curves, sweeps, details, gains and dynamic_residency as tables: a curve row per point of
    each curve, its length, mode and memory limit beside the point's figures; the sweeps' rows under `sweep`, the H
    sweep first; the details' scalar figures (no nested breakdown); every figure the file's own."""
    got = hisparse.plan(SCENARIO, seq_lens=[16384])
    doc = got.json
    curves = got.table("curves")
    assert len(curves) == sum(len(c["points"]) for c in doc["curves"]) > 0
    first = doc["curves"][0]
    assert curves[0] == {"seq_len": first["seq_len"], "mode": first["mode"],
                         "memory_limit_per_rank": first["memory_limit_per_rank"], **first["points"][0]}
    sweeps = got.table("sweeps")
    assert [r["sweep"] for r in sweeps] == (["device_buffer_size"] * len(doc["sweeps"]["device_buffer_size"]) +
                                            ["host_to_device_ratio"] * len(doc["sweeps"]["host_to_device_ratio"]))
    assert sweeps[0]["max_concurrency"] == doc["sweeps"]["device_buffer_size"][0]["max_concurrency"]
    details = got.table("details")
    assert len(details) == len(doc["details"]) and "per_request" not in details[0]
    assert details[0]["tpot_ms"] == doc["details"][0]["tpot_ms"]
    assert got.table("gains") == doc["gains"] and got.table("dynamic_residency") == doc["dynamic_residency"]
    pandas = pytest.importorskip("pandas")
    frame = got.to_pandas("curves")
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(curves)
    assert {"seq_len", "mode", "batch", "tpot_ms", "tokens_per_s", "within_slo"} <= set(frame.columns)


def test_plan_of_a_model_without_sparse_indexer():
    """Expected: gpt-oss (GQA + sliding window, no indexer) has no dynamic row, and its HiSparse rows say they do not
    apply, as the CLI's table prints them."""
    got = hisparse.plan("gptoss-120b-1xh200", seq_lens=[16384])
    assert [(r.mode, r.applicable) for r in got.rows] == [("full", True), ("hisparse", False)]
    assert got.rows[1].binding_limit == "not applicable"
    assert "16384  hisparse           - not applicable" in got.text


def test_plan_keeps_files_in_out(tmp_path):
    """Expected: with out=, plan.json on disk is the result's json_text, and the reports are written beside it."""
    got = hisparse.plan(SCENARIO, seq_lens=[16384], out=tmp_path / "p")
    assert (tmp_path / "p" / "plan.json").read_text() == got.json_text
    assert (tmp_path / "p" / "plan.md").is_file() and (tmp_path / "p" / "plan.html").is_file()


def test_advise_json_is_the_cli_file_byte_for_byte(cli, tmp_path):
    """Expected: advise.json's text equals the CLI's but for the CLI's own --out / --no-plots in its command line."""
    got = hisparse.advise(SCENARIO, seq_lens=["16K", "128K"], tpot_slo_ms=60)
    assert len(got.json["advice"]) == 2
    assert got.json_text == cli_json_text(cli, tmp_path, "advise", "advise.json", "--seq-lens", "16K,128K",
                                          "--tpot-slo-ms", "60")


def test_advise_structs_are_what_the_cli_prints(cli, tmp_path):
    """Expected: one AdviceRecommendation per mix, whose flags are the CLI's "launch SGLang" lines and whose figures
    are advise.json's "recommended"; the rows are the settings table printed under each mix (full KV first, one
    recommended row per mix, vs_recommended 1 there)."""
    got = hisparse.advise(SCENARIO, seq_lens=["16K", "128K"])
    stdout = run_cli(cli, "advise", "--scenario", SCENARIO, "--seq-lens", "16K,128K", "--out", tmp_path / "a",
                     "--no-plots").stdout
    launch = [line for line in stdout.splitlines() if line.startswith("launch SGLang, ")]
    assert launch == [f"launch SGLang, {r.context}: {r.sglang_flags}" for r in got.recommendations]
    for r, advice in zip(got.recommendations, got.json["advice"]):
        rec = advice["recommended"]
        assert r.fits and r.setting == rec["setting"] and r.mode == rec["mode"]
        assert (r.device_buffer_size, r.host_to_device_ratio, r.concurrency) == \
            (rec["device_buffer_size"], rec["host_to_device_ratio"], rec["max_running_requests"])
        assert r.goodput_tokens_per_s == pytest.approx(rec["goodput_tokens_per_s"], abs=1e-3)
        rows = [row for row in got.rows if row.context == r.context]
        assert rows[0].mode == "full" and rows[0].device_buffer_size == 0
        assert [row.setting for row in rows if row.recommended] == [r.setting]
        assert [row.vs_recommended for row in rows if row.recommended] == [1.0]
    # Each table line of the text names the row's H (or full KV), ratio and concurrency.
    line = re.compile(r" +(full KV|[0-9]+) +(-|[0-9]+) +[0-9,]+ [a-z][a-z_]* ")  # H, ratio, concurrency, limit
    table = [text.split()[:3] for text in got.text.splitlines() if line.match(text)]
    assert table == [["full", "KV", "-"] if row.mode == "full" else
                     [str(row.device_buffer_size), str(row.host_to_device_ratio), f"{row.concurrency:,}"]
                     for row in got.rows]


def test_advise_to_pandas_columns():
    """Expected: the settings table and the recommendations as DataFrames with their structs' fields as columns,
    typed; one recommendation for one mix, one recommended row in its table."""
    pandas = pytest.importorskip("pandas")
    got = hisparse.advise(SCENARIO, seq_lens=["32K"])
    rows, recs = got.to_pandas(), got.to_pandas("recommendations")
    assert list(rows.columns) == list(hisparse._native.core().AdviceRow.fields)
    assert list(recs.columns) == list(hisparse._native.core().AdviceRecommendation.fields)
    assert len(recs) == 1 and recs.loc[0, "context"] == "32K" and recs["concurrency"].dtype.kind == "i"
    assert rows["recommended"].sum() == 1 and rows["goodput_tokens_per_s"].dtype.kind == "f"


def test_advise_recommended_is_the_setting():
    """advice["recommended"] is the recommended setting itself (its flags, H, ratio); its index stays available."""
    a = hisparse.advise(SCENARIO, seq_lens=["32K"]).json["advice"][0]
    rec = a["recommended"]
    assert isinstance(rec, dict), "an index here was issue 40's complaint"
    assert rec == a["candidates"][a["recommended_index"]]
    assert rec["sglang_flags"] == a["sglang_flags"]
    assert rec["mode"] in ("full", "hisparse") and rec["max_running_requests"] > 0


def test_advise_with_a_python_trace(cli, tmp_path):
    """A trace written from arrays feeds advise's misses exactly as a file given to the CLI does."""
    from package_util import make_request
    import numpy as np
    rng = np.random.default_rng(3)
    topk, seq = make_request(rng, 12, 2, 64, 300)
    path = tmp_path / "k64.hstrace"
    hisparse.write_trace(path, topk, seq)
    got = hisparse.advise(SCENARIO, seq_lens=[32768], trace=path, rescale_trace_top_k=True, buffer_sizes=[2048, 4096])
    expected = cli_json(cli, tmp_path, "advise", "advise.json", "--seq-lens", "32768", "--trace", path,
                        "--rescale-trace-top-k", "--buffer-sizes", "2048,4096")
    assert got.json == expected


def test_errors_are_the_cli_messages():
    """User mistakes are Python's built-in exceptions, with the CLI's message: a missing scenario or file is
    FileNotFoundError (naming where it looked and what exists), a bad value ValueError, an unknown keyword
    TypeError."""
    with pytest.raises(FileNotFoundError, match=r"deployment 'no-such-deployment' not found: looked for "
                                                r"no-such-deployment.yaml in .*/deployments.*; available: .*"
                                                r"dsv32-8xh200-1tb"):
        hisparse.plan("no-such-deployment")
    with pytest.raises(FileNotFoundError, match="scenario file 'nowhere/d.yaml' does not exist"):
        hisparse.plan("nowhere/d.yaml")
    with pytest.raises(FileNotFoundError, match="no_such.hstrace: no such trace file"):
        hisparse.advise(SCENARIO, seq_lens=[32768], trace="no_such.hstrace")
    with pytest.raises(ValueError, match="limits: 'sometimes', expected 'all' or 'memory'"):
        hisparse.plan(SCENARIO, limits="sometimes")
    with pytest.raises(ValueError, match="kv_dtype fp7: expected bf16, fp8 or nvfp4"):
        hisparse.plan(SCENARIO, kv_dtype="fp7")
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_plots'"):
        hisparse.plan(SCENARIO, no_plots=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sequence_lengths': not a flag of hisparse "
                                        "advise"):
        hisparse.advise(SCENARIO, sequence_lengths=[1024])
    with pytest.raises(ValueError, match="scenario"):
        hisparse.advise(None)


def test_keywords_set_the_fields_the_flags_set(cli, tmp_path):
    """Each keyword sets the request field its CLI flag sets, with the same unit: a per-instance
    max_running_requests (100 over 8 dp ranks: 12 per rank, as SGLang divides it), pool tokens 0 (derive), a byte
    size given as text."""
    got = hisparse.plan(SCENARIO, seq_lens=[16384], max_running_requests=100, device_pool_tokens=0,
                        host_dram_bytes="2TiB")
    expected = cli_json(cli, tmp_path, "plan", "plan.json", "--seq-lens", "16384", "--max-running-requests", "100",
                        "--device-pool-tokens", "0", "--host-dram-bytes", "2TiB")
    assert '"max_running_requests": 12' in got.json_text
    assert without_run(got.json) == without_run(expected)


def test_a_keyword_that_is_no_flag_is_named():
    # Expected: TypeError, as Python raises for any unknown keyword, naming it and the command.
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_flag': not a flag of hisparse plan"):
        hisparse.plan(SCENARIO, no_such_flag=1)
    # advise chooses the buffer size itself: it is no flag of advise.
    with pytest.raises(TypeError, match="'device_buffer_size': not a flag of hisparse advise"):
        hisparse.advise(SCENARIO, device_buffer_size=4096)



def test_advise_layouts_are_the_cli_comparison(cli):
    """Expected: advise(layouts=True) prints what `hisparse advise --layouts` prints, byte for byte; its rows are the
    printed lines (per prompt shape one row per layout and HiSparse setting, each applicable row's tok/s/GPU as the
    line shows it), with exactly one winner per shape, the largest tok/s/GPU of its shape (the comparison's rule)."""
    scenario = "dsv32-8xh200-1tb"
    result = hisparse.advise(scenario, layouts=True)
    assert result.text == run_cli(cli, "advise", "--scenario", scenario, "--layouts").stdout
    shapes = sorted({r.workload for r in result.rows})
    assert len(shapes) == 2
    lines = result.text.splitlines()
    for shape in shapes:
        rows = [r for r in result.rows if r.workload == shape]
        winners = [r for r in rows if r.winner]
        assert len(winners) == 1
        assert winners[0].tokens_per_s_per_gpu == max(r.tokens_per_s_per_gpu for r in rows if r.applicable)
        for r in rows:
            if r.applicable:
                assert any(r.layout in l and f" {r.tokens_per_s_per_gpu:.1f} " in l for l in lines), r.layout
    assert [r["layout"] for r in result.table()] == [r.layout for r in result.rows]
    with pytest.raises(ValueError, match="writes no files"):
        hisparse.advise(scenario, layouts=True, out="x")
