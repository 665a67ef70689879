"""The settings table from Python (hisparse.settings(), sim/api/settings_table.h): every setting is a keyword of
hisparse.plan by its name (advise: all but H, the ratio and the running cap, which it chooses), mtp_draft_tokens,
mtp_acceptance, swap_in_kernel, attention_table and hisparse_prefetch included; and a value out of range gets the same
message, naming the setting, the value and the range, from the keyword, the CLI's flag and a field file's overrides;
and every flag of plan, advise and simulate is a keyword of its Python function."""

import importlib
import re

import pytest

import hisparse
from hisparse import commands
from hisparse._native import core
from package_util import cli, run_cli  # noqa: F401 (fixtures)

simulate_module = importlib.import_module("hisparse.simulate")  # the module (hisparse.simulate is the function)

SCENARIO = "dsv32-8xh200-1tb"
ROWS = hisparse.settings()
CHOSEN = 1  # the settings advise chooses (sim/api/settings_table.h, kSettingGroupChosen)


def natural(row, text):
    """A table example as a Python caller would write it: ints, floats, False; byte sizes and names as strings."""
    if row["kind"] == "int":
        return int(text)
    if row["kind"] == "float":
        return float(text)
    if row["kind"] == "bool":
        return text == "true"
    return text


def plan_request(**options):
    """The PlanRequest hisparse.plan would run for `options` (built, not run)."""
    return commands._request("plan", core().PlanRequest(), commands._PLAN, SCENARIO, options)


def test_the_table_holds_the_settings_python_could_not_pass():
    # Issue 41: these were CLI flags only (or, hisparse_prefetch, YAML only).
    names = {row["name"] for row in ROWS}
    assert {"mtp_draft_tokens", "mtp_acceptance", "swap_in_kernel", "attention_table", "hisparse_prefetch"} <= names
    assert all(row["help"] and row["flag"] == row["name"].replace("_", "-") for row in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[row["name"] for row in ROWS])
def test_every_setting_is_a_keyword(row):
    # Expectation: the keyword leaves the request's setup with the example's value (read back through the table),
    # which an empty setup does not hold.
    value = natural(row, row["example"])
    request = plan_request(**{row["name"]: value})
    got = core().get_setting(request.setup, row["name"])
    assert got != core().get_setting(core().PlanRequest().setup, row["name"])
    if row["kind"] in ("float", "bytes"):
        assert float(got) == (2 ** 30 if row["kind"] == "bytes" else value)
    elif row["kind"] == "bool":
        assert got == "false"
    else:
        assert got == str(value)
    # advise takes it too, unless it is one advise chooses
    if row["groups"] & CHOSEN:
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{row['name']}'"):
            hisparse.advise(SCENARIO, **{row["name"]: value})


def test_sglang_alias_and_a_false_switch():
    # kv_cache_dtype is SGLang's name of kv_dtype, fp8_e4m3 its spelling of fp8; hisparse_prefetch=False is a value,
    # not a flag left out, and the provenance line says so.
    request = plan_request(kv_cache_dtype="fp8_e4m3", hisparse_prefetch=False)
    assert request.setup.overrides.kv_dtype == "fp8"
    assert request.setup.overrides.hisparse_prefetch is False
    assert "--hisparse-prefetch false" in request.command_line


FIELD = """name: {name}
title: a test run
source:
  publication: "test"
  url: ""
  date: 2026-11-20
  quote: "none"
deployment: dsv32-8xh200-1tb
workload:
  input_tokens: 1000
  output_tokens: 200
overrides:
  {name}: {value}
points:
  - id: a
    metric: tpot_ms
    mode: full
    concurrency: 1
    published: 10
    tolerance_pct: 10
"""

RANGED = [row for row in ROWS if row["out_of_range"]]


@pytest.mark.parametrize("row", RANGED, ids=[row["name"] for row in RANGED])
def test_out_of_range_is_the_same_error_from_python_cli_and_yaml(cli, tmp_path, row):
    # Expectation: "<setting> <value>: expected <range>" from each front, the setting in that front's spelling and
    # the range the table declares: the keyword raises ValueError, `plan --<flag>` and `fidelity --field` (a field
    # file's overrides:) exit non-zero.
    name, bad = row["name"], row["out_of_range"]
    tail = core().setting_range_error(name, "", bad)  # " <value>: expected <range>"
    assert tail.endswith(f": expected {row['range']}")
    with pytest.raises(ValueError) as python:
        plan_request(**{name: natural(row, bad)})
    assert str(python.value) == f"hisparse.plan(): {name}{tail}"
    flag = run_cli(cli, "plan", "--scenario", SCENARIO, "--" + row["flag"], bad, check=False)
    assert flag.returncode != 0
    assert f"plan: --{row['flag']}{tail}" in flag.stderr
    field = tmp_path / f"{name}.yaml"
    field.write_text(FIELD.format(name=name, value=bad))
    yaml = run_cli(cli, "fidelity", "--field", field, "--no-simulate", "--fits", "none", "--out", tmp_path / "o",
                   check=False)
    assert yaml.returncode != 0
    assert f"{field} (line 13): overrides.{name}{tail}" in yaml.stderr


# Every flag of `hisparse plan / advise / simulate --help` is a keyword of the Python function (or one of its own
# arguments), so the table of settings and each command's own flags reach Python. Left out, each with its reason:
PYTHON_OWN = {"scenario", "out", "no_plots", "verbose", "help"}  # scenario positional; out=, plots=, verbose=
NOT_KEYWORDS = {
    ("simulate", "cost"): "deprecated alias of --cost-params, which is a keyword",
    ("simulate", "workload"): "simulate's second positional argument",
    ("simulate", "overlap"): "simulate's own overlap= (none, two-batch or both)",
}
OPTION = re.compile(r"^  (?:-\w \[ )?--([a-z0-9-]+)")


def cli_flags(cli, command):
    """The options `hisparse <command> --help` lists (each option line starts two spaces in; wrapped help does not)."""
    text = run_cli(cli, command, "--help").stdout
    return sorted({m.group(1) for m in map(OPTION.match, text.splitlines()) if m})


def accepts(command, key):
    """True unless building the request with `key` raises TypeError (a keyword that is no flag): a ValueError for the
    placeholder value still means the keyword is taken."""
    try:
        if command == "simulate":
            simulate_module._request(SCENARIO, "synthetic_poisson", None, {key: "1"})
        else:
            table = commands._PLAN if command == "plan" else commands._ADVISE
            request = core().PlanRequest() if command == "plan" else core().AdviseRequest()
            commands._request(command, request, table, SCENARIO, {key: "1"})
    except TypeError:
        return False
    except ValueError:
        pass
    return True


@pytest.mark.parametrize("command", ["plan", "advise", "simulate"])
def test_every_cli_flag_is_a_python_keyword(cli, command):
    # Expectation: the help lists the settings and the command's own flags (at least 40 for each command), and
    # every one of them not left out above is taken as a keyword; a made-up flag is not (the check can fail).
    flags = cli_flags(cli, command)
    assert len(flags) >= 40 and "top-k" in flags and "miss-fraction" in flags
    keywords = [f.replace("-", "_") for f in flags
                if f.replace("-", "_") not in PYTHON_OWN and (command, f.replace("-", "_")) not in NOT_KEYWORDS]
    assert [k for k in keywords if not accepts(command, k)] == []
    assert not accepts(command, "no_such_flag")
