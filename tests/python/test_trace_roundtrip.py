"""Traces between numpy and files: arrays -> native -> arrays and arrays -> .npy -> arrays give the arrays back."""

import json

import numpy as np
import pytest

import hisparse
from package_util import arrays, cli, run_cli  # noqa: F401 (fixtures)


def assert_same(trace, topk, seq_lens, ids):
    assert trace.request_ids == ids
    assert len(trace.topk) == len(topk)
    for got_t, got_s, t, s in zip(trace.topk, trace.seq_lens, topk, seq_lens):
        assert got_t.dtype == np.int32 and got_s.dtype == np.int32
        np.testing.assert_array_equal(got_t, t)
        np.testing.assert_array_equal(got_s, s)


def test_native_round_trip(arrays, tmp_path):
    topk, seq_lens = arrays
    path = tmp_path / "t.hstrace"
    hisparse.write_trace(path, topk, seq_lens, request_ids=[5, 2, 9], initial_state="empty")
    assert path.read_bytes()[:8] == b"HSTRACE\x1a"
    trace = hisparse.open_trace(path)
    assert_same(trace, topk, seq_lens, [5, 2, 9])
    assert (trace.format, trace.initial_state, trace.top_k, trace.layers) == ("native", "empty", 32, 3)
    meta = hisparse.trace_meta(path)
    assert meta["request_ids"] == [5, 2, 9]
    assert (meta["layers"], meta["top_k"], meta["initial_state"], meta["format"]) == (3, 32, "empty", "native")


def test_npy_round_trip_and_numpy_reads_the_files(arrays, tmp_path):
    topk, seq_lens = arrays
    path = tmp_path / "t_npy"
    hisparse.write_trace(path, topk, seq_lens, format="npy")
    # numpy itself reads what was written: an independent reader of the same files.
    for i, (t, s) in enumerate(zip(topk, seq_lens)):
        np.testing.assert_array_equal(np.load(path / f"req_{i}_topk.npy"), t)
        np.testing.assert_array_equal(np.load(path / f"req_{i}_seq_lens.npy"), s)
    assert json.loads((path / "meta.json").read_text())["top_k"] == 32
    assert_same(hisparse.open_trace(path), topk, seq_lens, [0, 1, 2])


def test_int64_input_stays_int64_in_npy(arrays, tmp_path):
    topk, seq_lens = arrays
    path = tmp_path / "t64"
    hisparse.write_trace(path, [t.astype(np.int64) for t in topk], [s.astype(np.int64) for s in seq_lens],
                         format="npy")
    assert np.load(path / "req_0_topk.npy").dtype == np.int64
    assert np.load(path / "req_0_seq_lens.npy").dtype == np.int64
    trace = hisparse.open_trace(path)
    assert (trace.topk_dtype_bytes, trace.seq_lens_dtype_bytes) == (8, 8)
    assert_same(trace, topk, seq_lens, [0, 1, 2])
    # ... and a Trace read from it writes the same element sizes again.
    trace.write(tmp_path / "again", format="npy")
    assert (path / "req_2_topk.npy").read_bytes() == (tmp_path / "again" / "req_2_topk.npy").read_bytes()


def test_cli_converts_what_python_wrote(arrays, cli, tmp_path):
    topk, seq_lens = arrays
    hisparse.write_trace(tmp_path / "py.hstrace", topk, seq_lens)
    run_cli(cli, "trace", "convert", "--in", tmp_path / "py.hstrace", "--out", tmp_path / "cli_npy", "--format", "npy")
    assert_same(hisparse.open_trace(tmp_path / "cli_npy"), topk, seq_lens, [0, 1, 2])


def test_top_k_override_packs_lists(tmp_path):
    topk = np.full((2, 1, 4), -1, dtype=np.int32)
    topk[0, 0, :2] = [7, 3]
    topk[1, 0, :3] = [1, 9, 3]
    seq = np.array([10, 11], dtype=np.int32)
    trace = hisparse.Trace.from_arrays(topk, seq, top_k=3)
    trace.write(tmp_path / "k3.hstrace")
    back = hisparse.open_trace(tmp_path / "k3.hstrace")
    assert back.top_k == 3
    np.testing.assert_array_equal(back.topk[0][:, 0, :], [[7, 3, -1], [1, 9, 3]])
    with pytest.raises(ValueError, match="valid"):
        hisparse.open_trace(tmp_path / "k3.hstrace", top_k=2)


def test_single_request_arrays(tmp_path):
    topk = np.array([[[0, 1]], [[1, 2]]], dtype=np.int32)
    seq = np.array([3, 4], dtype=np.int32)
    hisparse.write_trace(tmp_path / "one.hstrace", topk, seq)
    back = hisparse.open_trace(tmp_path / "one.hstrace")
    np.testing.assert_array_equal(back.topk[0], topk)
    assert back.steps == 2


def test_nothing_is_left_behind_on_error(tmp_path):
    bad = np.array([[[0, 0]]], dtype=np.int32)  # a position twice
    with pytest.raises(ValueError, match="topk arrays: request 0, step 0, layer 0"):
        hisparse.write_trace(tmp_path / "bad.hstrace", bad, np.array([4], dtype=np.int32))
    assert list(tmp_path.iterdir()) == []
