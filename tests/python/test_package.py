"""The installed package stands on its own: its version, and scenarios and plot scripts from its package data."""

import json
import os
import re
import subprocess
import sys

import hisparse
from package_util import ROOT


def test_version_is_the_cmake_projects():
    # Expected: the version CMakeLists.txt declares, written into the wheel at build time.
    declared = re.search(r"project\(hisparse_lab VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert hisparse.__version__ == declared


def test_scenarios_come_from_the_package_data_outside_the_clone(tmp_path):
    """From a directory without scenarios/ and without $HISPARSE_SCENARIO_DIR, a scenario name resolves to the
    package's own copy (hisparse/data/scenarios), not to the clone the package was built from."""
    code = ("import hisparse, json, os\n"
            "p = hisparse.plan('dsv32-8xh200-1tb', seq_lens=[16384])\n"
            "print(json.dumps({'source': p.json['scenario']['source'], 'site': os.path.dirname(hisparse.__file__)}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HISPARSE_SCENARIO_DIR", "PYTHONPATH")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["source"] == os.path.join(got["site"], "data", "scenarios", "deployments", "dsv32-8xh200-1tb.yaml")
    # The plot scripts plan(plots=True) runs sit beside the scenarios, where sim/report looks for them.
    assert os.path.isfile(os.path.join(got["site"], "data", "scripts", "plot_plan.py"))
    assert os.path.isfile(os.path.join(got["site"], "data", "scripts", "plot_output.py"))
