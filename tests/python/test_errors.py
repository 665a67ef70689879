"""Bad arrays and arguments: ValueError naming the argument (and request, step, layer for bad contents)."""

import subprocess
import sys

import numpy as np
import pytest

import hisparse
from package_util import ROOT

TOPK = np.array([[[0, 1], [2, -1]], [[1, 3], [0, 2]]], dtype=np.int32)  # [2 steps, 2 layers, K 2]
SEQ = np.array([4, 5], dtype=np.int32)


@pytest.mark.parametrize("topk,seq,match", [
    (TOPK.astype(np.float32), SEQ, r"topk\[0\]: dtype float32, expected an integer dtype"),
    (TOPK.astype(bool), SEQ, r"topk\[0\]: dtype bool"),
    (TOPK[0], SEQ, r"topk\[0\]: 2-D array of shape \[2, 2\], expected \[steps, layers, K\]"),
    (TOPK, SEQ.astype(np.float64), r"seq_lens\[0\]: dtype float64"),
    (TOPK, SEQ[:1], r"seq_lens\[0\]: 1 entries for the 2 steps of topk\[0\]"),
    (TOPK, SEQ.reshape(2, 1), r"seq_lens\[0\]: 2-D array"),
    (TOPK[:0], SEQ[:0], r"topk\[0\]: no step"),
    (TOPK.astype(np.int64) + 2**40, SEQ, r"topk\[0\]: values .* do not fit int32"),
    ([TOPK, TOPK[:, :1]], [SEQ, SEQ], r"topk\[1\]: \[layers, K\] = \[1, 2\] differs from topk\[0\]'s \[2, 2\]"),
    ([TOPK], SEQ, r"seq_lens: topk is a list"),
    (TOPK, [SEQ], r"seq_lens: topk is one array"),
    ({"not": "arrays"}, SEQ, r"topk: expected a \[steps, layers, K\] integer array"),
    ([], [], r"topk: no request"),
    ([TOPK], [SEQ, SEQ], r"seq_lens: 2 arrays for 1 topk arrays"),
])
def test_bad_arrays(topk, seq, match, tmp_path):
    for call in (lambda: hisparse.replay(topk, [2], ["sglang-lru"], seq_lens=seq),
                 lambda: hisparse.write_trace(tmp_path / "x.hstrace", topk, seq),
                 lambda: hisparse.Trace.from_arrays(topk, seq)):
        with pytest.raises(ValueError, match=match):
            call()
    assert not (tmp_path / "x.hstrace").exists()


@pytest.mark.parametrize("change,match", [
    ((0, 0, 1, 9), r"topk arrays: request 0, step 0, layer 0: position 9 .* >= seq_len 4"),
    ((1, 1, 0, 2), r"topk arrays: request 0, step 1, layer 1: .*2"),     # 2 twice in one list
    ((1, 0, 1, -5), r"topk arrays: request 0, step 1, layer 0: .*-5"),   # negative other than -1
])
def test_bad_contents_name_request_step_layer(change, match):
    s, layer, j, v = change
    bad = TOPK.copy()
    bad[s, layer, j] = v
    with pytest.raises(ValueError, match=match):
        hisparse.replay(bad, [2], ["sglang-lru"], seq_lens=SEQ)


def test_bad_seq_len_and_ids():
    with pytest.raises(ValueError, match=r"topk arrays: request 0, step 0"):
        hisparse.replay(TOPK, [2], seq_lens=np.array([0, 5], dtype=np.int32))
    with pytest.raises(ValueError, match=r"request_ids: ids repeat"):
        hisparse.write_trace("unused", [TOPK, TOPK], [SEQ, SEQ], request_ids=[1, 1])
    with pytest.raises(ValueError, match=r"request_ids\[0\]: 'a' is not an integer"):
        hisparse.Trace.from_arrays([TOPK], [SEQ], request_ids=["a"])


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"buffer_sizes": [0]}, ValueError, r"buffer_sizes: 0 is not an integer"),
    ({"buffer_sizes": []}, ValueError, r"buffer_sizes: empty"),
    ({"buffer_sizes": [2.5]}, ValueError, r"buffer_sizes: 2.5"),
    ({"policies": []}, ValueError, r"policies"),
    ({"threads": 0}, ValueError, r"threads: 0"),
    ({"row_bytes": -1}, ValueError, r"row_bytes: -1"),
    ({"lookahead_mb": 0}, ValueError, r"lookahead_mb: 0"),
    ({"top_k": 0}, ValueError, r"top_k: 0"),
    ({"initial_state": "warm"}, ValueError, r"initial_state: 'warm'"),
    # Values the C++ side rejects are ValueError too (the CLI's message), not RuntimeError.
    ({"policies": ["mru"]}, ValueError, r"unknown swap-in policy 'mru'"),
    ({"buffer_sizes": [1]}, ValueError, r"buffer size 1 \(--buffer-sizes\) is smaller than the trace.s top_k 2"),
])
def test_bad_replay_arguments(kwargs, exc, match):
    args = {"buffer_sizes": [2], "policies": ["sglang-lru"], **kwargs}
    with pytest.raises(exc, match=match):
        hisparse.replay(TOPK, seq_lens=SEQ, **args)


def test_bad_paths_and_formats(tmp_path):
    # A path that does not exist is the built-in FileNotFoundError, for every function that reads one.
    for call in (hisparse.open_trace, hisparse.trace_meta, lambda p: hisparse.replay(p, [2])):
        with pytest.raises(FileNotFoundError, match=r"missing: no such trace file or directory"):
            call(tmp_path / "missing")
    with pytest.raises(ValueError, match="format: 'parquet'"):
        hisparse.write_trace(tmp_path / "t", TOPK, SEQ, format="parquet")
    with pytest.raises(ValueError, match="seq_lens / request_ids: only with topk arrays"):
        hisparse.replay(tmp_path / "t", seq_lens=SEQ)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other").write_text("x")
    with pytest.raises(ValueError, match="not an empty directory"):
        hisparse.write_trace(tmp_path / "full", TOPK, SEQ, format="npy")


def test_import_without_compiled_module():
    """`import hisparse` (and hisparse.capture) work from the sources alone; a compiled function says what to do."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'python')!r})\n"
        "sys.modules['hisparse._core'] = None  # as if it had never been built\n"
        "import hisparse\n"
        "assert hisparse.__file__.startswith(sys.path[0]), hisparse.__file__\n"
        "try:\n"
        "    hisparse.trace_meta('x')\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "hisparse._core is not available" in proc.stdout and "pip install ." in proc.stdout


def test_write_failure_is_oserror(tmp_path):
    """Issue 40: a write the system refuses is OSError with its errno, as Python's own open() raises, not ValueError."""
    import errno
    import os
    if os.path.exists("/dev/full"):
        with pytest.raises(OSError) as e:
            hisparse.write_trace("/dev/full", TOPK, SEQ)   # every write there fails with ENOSPC
        assert e.value.errno == errno.ENOSPC
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError, match="is a directory"):
        hisparse.write_trace(tmp_path / "d", TOPK, SEQ)    # the native format is one file: not over a directory


def test_trace_without_steps_has_no_hit_rate(tmp_path):
    """Issue 40 item 7: a request with 0 steps selects nothing: the hit rate is undefined, refused as the CLI does
    (it used to come back as 1.0)."""
    d = tmp_path / "empty"
    d.mkdir()
    np.save(d / "req_0_topk.npy", np.zeros((0, 2, 2), dtype=np.int32))
    np.save(d / "req_0_seq_lens.npy", np.zeros((0,), dtype=np.int32))
    with pytest.raises(ValueError, match="no decode step"):
        hisparse.replay(d, [2], ["sglang-lru"])
