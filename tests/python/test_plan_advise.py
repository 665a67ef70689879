"""plan and advise from Python return the JSON the CLI writes, as dicts."""

import json

import pytest

import hisparse
from package_util import arrays, cli, run_cli  # noqa: F401 (fixtures)

SCENARIO = "dsv32-8xh200-1tb"


def cli_json(cli, tmp_path, command, name, *args):
    out = tmp_path / f"cli_{command}"
    run_cli(cli, command, "--scenario", SCENARIO, *args, "--out", out, "--no-plots")
    return json.loads((out / name).read_text())


def without_run(plan):
    """plan.json's "run" holds the command line (its --out differs) and the wall time; everything else must match."""
    run = plan.pop("run")
    assert set(run) == {"command", "calibration", "workload", "plan_seconds"}
    return plan, run["calibration"], run["workload"]


@pytest.mark.parametrize("kwargs,flags", [
    ({"seq_lens": [16384, 65536]}, ["--seq-lens", "16384,65536"]),
    ({"seq_lens": "32K", "limits": "memory", "strategies": True, "device_buffer_size": 4096},
     ["--seq-lens", "32K", "--limits", "memory", "--strategies", "--device-buffer-size", "4096"]),
])
def test_plan_matches_cli(cli, tmp_path, kwargs, flags):
    got = hisparse.plan(SCENARIO, **kwargs)
    expected = cli_json(cli, tmp_path, "plan", "plan.json", *flags)
    assert got["rows"], "an empty plan would match trivially"
    assert without_run(got) == without_run(expected)


def test_plan_keeps_files_in_out(tmp_path):
    got = hisparse.plan(SCENARIO, seq_lens=[16384], out=tmp_path / "p")
    assert json.loads((tmp_path / "p" / "plan.json").read_text()) == got
    assert (tmp_path / "p" / "plan.md").is_file() and (tmp_path / "p" / "plan.html").is_file()


def test_advise_matches_cli(cli, tmp_path):
    got = hisparse.advise(SCENARIO, seq_lens=["16K", "128K"], tpot_slo_ms=60)
    expected = cli_json(cli, tmp_path, "advise", "advise.json", "--seq-lens", "16K,128K", "--tpot-slo-ms", "60")
    assert got.pop("command_line").startswith("hisparse advise --scenario dsv32-8xh200-1tb --seq-lens 16K,128K")
    expected.pop("command_line")
    assert len(got["advice"]) == 2
    assert got == expected


def test_advise_recommended_is_the_setting():
    """advice["recommended"] is the recommended setting itself (its flags, H, ratio); its index stays available."""
    a = hisparse.advise(SCENARIO, seq_lens=["32K"])["advice"][0]
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
    got.pop("command_line"), expected.pop("command_line")
    assert got == expected


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
    assert '"max_running_requests": 12' in json.dumps(got)
    assert without_run(got) == without_run(expected)


def test_a_keyword_that_is_no_flag_is_named():
    # Expected: TypeError, as Python raises for any unknown keyword, naming it and the command.
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_flag': not a flag of hisparse plan"):
        hisparse.plan(SCENARIO, no_such_flag=1)
    # advise chooses the buffer size itself: it is no flag of advise.
    with pytest.raises(TypeError, match="'device_buffer_size': not a flag of hisparse advise"):
        hisparse.advise(SCENARIO, device_buffer_size=4096)
