"""hisparse.validate: the CLI's validation; without a GPU (or without the CUDA backend) a clear RuntimeError."""

import re

import pytest

import hisparse
from package_util import arrays, cli, run_cli  # noqa: F401 (fixtures)


def test_cuda_without_gpu_raises_clearly():
    status = hisparse.cuda_status()
    if status["available"]:
        pytest.skip(f"a GPU is present ({status['device']}): scripts/gpu_check_python.sh tests validate there")
    expected = "no CUDA backend" if not status["built"] else "no usable CUDA GPU"
    with pytest.raises(RuntimeError, match=expected):
        hisparse.validate()
    assert status["why"], "cuda_status must say why there is no GPU"


def test_cpu_harness_summary_matches_cli(cli):
    only = ["swap-in", "gather", "backup", "topk"]
    got = hisparse.validate("cpu", cases=3, seed=4, only=only)
    proc = run_cli(cli, "validate", "--backend", "cpu", "--cases", "3", "--seed", "4", "--only", *only)
    total = re.search(r"validate: (\d+) cases, (\d+) mismatches: (PASS|FAIL)", proc.stdout)
    assert total, proc.stdout
    assert (got["cases"], got["mismatches"], got["passed"]) == (int(total[1]), int(total[2]), total[3] == "PASS")
    assert got["cases"] > 0 and got["passed"]
    # Each row of the CLI's table (operation, variant, cases, values, mismatches, rejected) is a row of the summary.
    table = re.findall(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+$", proc.stdout, re.M)
    rows = [(r["operation"], r["variant"], r["cases"], r["values"], r["mismatched_cases"], r["rejected_both"])
            for r in got["operations"]]
    assert rows == [(o, v, int(c), int(n), int(m), int(x)) for o, v, c, n, m, x in table]
    assert {r[0] for r in rows} == set(only)


def test_quiet_unless_verbose(capfd):
    # Expected: verbose=False prints nothing on either stream (the CLI's per-operation lines go to stderr only when
    # asked for); verbose=True prints the operation's start and end lines.
    hisparse.validate("cpu", cases=2, only="topk")
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)
    hisparse.validate("cpu", cases=2, only="topk", verbose=True)
    out, err = capfd.readouterr()
    assert "validate: topk ..." in err and "validate: topk done in" in err, err


def test_bad_arguments():
    with pytest.raises(ValueError, match="backend"):
        hisparse.validate("tpu")
    with pytest.raises(ValueError, match="cases"):
        hisparse.validate("cpu", cases=-1)
    with pytest.raises(ValueError, match="--only nonsense: unknown operation"):
        hisparse.validate("cpu", cases=1, only="nonsense")


def test_cuda_summary_matches_cli(cli):
    """On a GPU machine (scripts/gpu_check_python.sh run): the kernels against the reference, as the CLI does."""
    status = hisparse.cuda_status()
    if not status["available"]:
        pytest.skip(f"no usable GPU here ({status['why']}); this test runs on the GPU machine")
    only = ["swap-in", "gather", "backup", "topk"]
    got = hisparse.validate("cuda", cases=40, seed=9, only=only)
    proc = run_cli(cli, "validate", "--backend", "cuda", "--cases", "40", "--seed", "9", "--only", *only)
    total = re.search(r"validate: (\d+) cases, (\d+) mismatches: (PASS|FAIL)", proc.stdout)
    assert got["passed"] and total[3] == "PASS"
    assert (got["cases"], got["mismatches"]) == (int(total[1]), int(total[2]))
    assert got["device"] == status["device"] and got["device"]
