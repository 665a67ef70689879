"""Helpers of the package's tests (test_replay_cli.py, test_trace_roundtrip.py, ...): the CLI and seeded traces."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli_path():
    """The `hisparse` binary the module is compared with: $HISPARSE_CLI, else the release build."""
    path = pathlib.Path(os.environ.get("HISPARSE_CLI", ROOT / "build" / "release" / "apps" / "hisparse"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no hisparse CLI at {path}: build it (scripts/build.sh release) or set HISPARSE_CLI")
    return path


def run_cli(cli, *args, check=True):
    """Runs the CLI from the source tree (so it finds scenarios/ as the module does); returns the CompletedProcess."""
    proc = subprocess.run([str(cli), *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cli} {' '.join(map(str, args))}: exit {proc.returncode}\n{proc.stderr}")
    return proc


def make_request(rng, steps, layers, k, n0, keep=0.7, pad_share=0.1):
    """One request's top-k lists: each step keeps about `keep` of the previous list (so buffers get hits), draws the
    rest anew from [0, n), lists come in random (score-like) order and some end in -1 padding."""
    topk = np.full((steps, layers, k), -1, dtype=np.int32)
    seq_lens = (n0 + np.arange(steps)).astype(np.int32)
    prev = [None] * layers
    for s in range(steps):
        n = int(seq_lens[s])
        for layer in range(layers):
            valid = k - (int(rng.integers(1, k // 4 + 1)) if rng.random() < pad_share else 0)
            valid = min(valid, n)
            kept = []
            if prev[layer] is not None:
                old = prev[layer]
                kept = list(rng.choice(old, size=min(len(old), int(valid * keep)), replace=False))
            pool = np.setdiff1d(np.arange(n), kept, assume_unique=False)
            fresh = rng.choice(pool, size=valid - len(kept), replace=False)
            row = np.array(kept + list(fresh), dtype=np.int32)
            rng.shuffle(row)
            topk[s, layer, :valid] = row
            prev[layer] = row
    return topk, seq_lens




# Fixtures of the package's tests (imported by name into each test module; conftest.py belongs to the capture tests).
@pytest.fixture(scope="session")
def cli():
    return cli_path()


@pytest.fixture
def arrays():
    """Three requests of different lengths, 3 layers, K 32, contexts from 40 to 200 tokens (seeded)."""
    rng = np.random.default_rng(20261124)
    reqs = [make_request(rng, steps, 3, 32, n0) for steps, n0 in ((24, 40), (9, 150), (17, 90))]
    return [t for t, _ in reqs], [s for _, s in reqs]
