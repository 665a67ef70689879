"""The pure-Python native trace writer: lossless against the C++ reader, strict, bounded, crash-safe."""
import os
import struct
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from capture_util import REPO, assert_same_trace, chunk_headers, read_npy_trace, replay_table, run_cli
from hisparse.capture.native_writer import CODEC_NONE, CODEC_ZSTD, NativeTraceWriter, TraceWriteError, varint_bytes


def random_rows(rng, layers, top_k, n, sorted_rows, mixed_padding):
    rows = np.full((layers, top_k), -1, dtype=np.int64)
    for l in range(layers):
        c = int(rng.integers(0, min(top_k, n) + 1))
        sel = rng.choice(n, size=c, replace=False)
        if sorted_rows:
            sel = np.sort(sel)
        where = np.sort(rng.choice(top_k, size=c, replace=False)) if mixed_padding else np.arange(c)
        rows[l, where] = sel
    return rows


def test_varint_matches_leb128():
    values = [0, 1, 127, 128, 255, 300, 16383, 16384, 2**32 + 5, 2**63 + 7, 2**64 - 1]
    expected = b""
    for v in values:
        while v >= 0x80:
            expected += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        expected += bytes([v])
    assert varint_bytes(np.array(values, dtype=np.uint64)) == expected


@pytest.mark.parametrize("chunk_bytes", [1, 200, 1 << 18])
def test_interleaved_requests_read_back_exactly(tmp_path, chunk_bytes):
    rng = np.random.default_rng(7)
    layers, top_k = 3, 12
    truth = {rid: ([], []) for rid in (11, -4, 0, 2**40)}
    path = str(tmp_path / "t.hstr")
    with NativeTraceWriter(path, layers, top_k, chunk_bytes=chunk_bytes) as w:
        n = {rid: int(rng.integers(3, 30)) for rid in truth}
        for i in range(60):  # round-robin with a random skip: requests interleave step by step
            for rid in truth:
                if rng.random() < 0.3 or (rid == 11 and i > 30):
                    continue
                n[rid] += int(rng.integers(0, 3))  # n may stay equal or jump, as the format allows
                rows = random_rows(rng, layers, top_k, n[rid], sorted_rows=i % 2 == 0, mixed_padding=i % 3 == 0)
                w.write_step(rid, rows, n[rid])
                truth[rid][0].append(rows)
                truth[rid][1].append(n[rid])
            if i == 30:
                w.end_request(11)  # ends early: later steps under id 11 would be refused
                with pytest.raises(TraceWriteError, match="ended already"):
                    w.write_step(11, np.full((layers, top_k), -1), 5)
    run_cli("trace", "convert", "--in", path, "--out", tmp_path / "npy", "--format", "npy")
    assert_same_trace(read_npy_trace(str(tmp_path / "npy")), {k: (np.array(a), np.array(b)) for k, (a, b) in truth.items()})
    assert not os.path.exists(path + f".tmp.{os.getpid()}")
    assert not os.path.exists(path + f".spool.{os.getpid()}")


def test_header_declares_initial_state_and_width(tmp_path):
    path = str(tmp_path / "e.hstr")
    with NativeTraceWriter(path, 2, 4, initial_state="empty") as w:
        w.write_step(0, [[0, 1, -1, -1], [2, -1, -1, -1]], 3)
    info = run_cli("trace", "info", "--trace", path)
    assert "empty" in info and "top_k 4" in info, info


@pytest.mark.parametrize("rows, n, match", [
    ([[0, 0, -1]], 5, "selected twice"),
    ([[0, 5, -1]], 5, "is >= seq_len 5"),
    ([[0, -2, -1]], 5, "expected a position in"),
    ([[0, 1]], 0, "seq_len 0 out of range"),
    ([[0, 1, 2], [0, 1, 2]], 5, "shape"),
    ([[0.5, 1, 2]], 5, "dtype"),
])
def test_invalid_steps_are_refused_and_leave_no_file(tmp_path, rows, n, match):
    path = str(tmp_path / "bad.hstr")
    w = NativeTraceWriter(path, 1, 3)
    w.write_step(1, [[0, 1, -1]], 4)
    with pytest.raises(TraceWriteError, match=match):
        w.write_step(2, np.array(rows), n)
    w.abort()
    assert os.listdir(tmp_path) == []


def test_writer_limits_are_checked():
    with pytest.raises(TraceWriteError, match="layers 0"):
        NativeTraceWriter("/tmp/never.hstr", 0, 4)
    with pytest.raises(TraceWriteError, match="initial_state"):
        NativeTraceWriter("/tmp/never.hstr", 1, 4, initial_state="full")


def test_long_capture_keeps_buffers_bounded(tmp_path):
    """Memory held does not grow with the number of steps: chunk buffer + one step + delta state."""
    layers, top_k, chunk = 4, 64, 4096
    def capture(steps):
        w = NativeTraceWriter(str(tmp_path / f"long{steps}.hstr"), layers, top_k, chunk_bytes=chunk)
        most = 0
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for s in range(steps):
            n = 1000 + s
            # A window that slides by a step-dependent stride: every step removes and adds entries.
            dense = np.arange(top_k)[None, :] * 3 + np.arange(layers)[:, None] + (s * 7) % 500
            w.write_step(0, dense, n)
            most = max(most, w.buffered_bytes())
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        w.close()
        return most, peak

    most_short, peak_short = capture(100)
    most_long, peak_long = capture(1000)
    state = layers * top_k * 8  # previous-step sets (int64)
    one_step = layers * (2 + 3 * top_k) * 3  # generous: every entry removed and added, 3 bytes each
    assert most_long <= chunk + one_step + state
    assert most_long <= most_short * 1.5 + one_step
    assert peak_long < 2 * peak_short + 65536, (peak_short, peak_long)


def test_crash_mid_capture_leaves_no_final_file(tmp_path):
    path = tmp_path / "crash.hstr"
    script = f"""
import os, sys, numpy as np
sys.path.insert(0, {os.path.join(REPO, 'python')!r})
from hisparse.capture.native_writer import NativeTraceWriter
w = NativeTraceWriter({str(path)!r}, 2, 8, chunk_bytes=64)
for s in range(50):
    w.write_step(s % 3, np.tile(np.arange(8), (2, 1)), 10 + s)
w.end_request(0)
os._exit(3)  # killed before close(): no rename happens
"""
    res = subprocess.run([sys.executable, "-c", script])
    assert res.returncode == 3
    assert not path.exists()
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers and all(".tmp." in p or ".spool." in p for p in leftovers), leftovers
    # A half-written temporary file is not a trace: the reader refuses it with a message.
    tmp = next(p for p in tmp_path.iterdir() if ".tmp." in p.name)
    res = subprocess.run([os.environ.get("HISPARSE_CLI") or os.path.join(REPO, "build/release/apps/hisparse"),
                          "trace", "info", "--trace", str(tmp)], capture_output=True, text=True)
    assert res.returncode != 0


def test_exception_inside_with_block_removes_everything(tmp_path):
    path = tmp_path / "x.hstr"
    with pytest.raises(RuntimeError):
        with NativeTraceWriter(str(path), 1, 2) as w:
            w.write_step(0, [[0, 1]], 2)
            raise RuntimeError("server stopped")
    assert list(tmp_path.iterdir()) == []


def test_zstd_capture_is_the_same_trace_in_compressed_chunks(tmp_path):
    """compress=True: every chunk (steps and index) is zstd; the C++ reader gets back exactly the steps written,
    and the replay of the compressed file equals the uncompressed one's row for row."""
    pytest.importorskip("zstandard", reason="python3-zstandard (scripts/setup.sh) is not installed")
    rng = np.random.default_rng(21)
    layers, top_k = 4, 32
    truth = {rid: ([], []) for rid in range(5)}
    paths = {c: str(tmp_path / f"{c}.hstr") for c in ("stored", "zstd")}
    writers = {c: NativeTraceWriter(paths[c], layers, top_k, chunk_bytes=512, compress=c == "zstd") for c in paths}
    n = {rid: 40 + 9 * rid for rid in truth}
    for step in range(30):
        for rid in truth:
            n[rid] += 1
            # A selection that drifts slowly (a sliding band below n - 1, then the newest token): compressible, as
            # real ones are. The band's top, 30 + 9 + 4 + 3, stays below n - 1 >= 40 + step.
            rows = np.stack([np.append(np.arange(top_k - 1) + step // 3 + rid + layer, n[rid] - 1)
                             for layer in range(layers)])
            for w in writers.values():
                w.write_step(rid, rows, n[rid])
            truth[rid][0].append(rows)
            truth[rid][1].append(n[rid])
    for w in writers.values():
        w.close()

    stored, zstd = chunk_headers(paths["stored"]), chunk_headers(paths["zstd"])
    assert len(zstd) > 10 and {c for _, c, _, _ in stored} == {CODEC_NONE} and {c for _, c, _, _ in zstd} == {CODEC_ZSTD}
    assert [(k, r) for k, _, r, _ in zstd] == [(k, r) for k, _, r, _ in stored]  # same chunks, only the codec differs
    assert os.path.getsize(paths["zstd"]) < 0.8 * os.path.getsize(paths["stored"])
    want = {k: (np.array(a), np.array(b)) for k, (a, b) in truth.items()}
    for c, path in paths.items():
        run_cli("trace", "convert", "--in", path, "--out", tmp_path / f"{c}_npy", "--format", "npy")
        assert_same_trace(read_npy_trace(str(tmp_path / f"{c}_npy")), want)
    assert (replay_table(paths["zstd"], str(tmp_path / "z.csv"), "32,40")
            == replay_table(paths["stored"], str(tmp_path / "s.csv"), "32,40"))


def test_compression_without_zstandard_is_refused_before_any_file(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # `import zstandard` now raises ImportError
    with pytest.raises(TraceWriteError, match=r"z\.hstr: compression needs the zstandard module"):
        NativeTraceWriter(str(tmp_path / "z.hstr"), 1, 4, compress=True)
    assert os.listdir(tmp_path) == []
    NativeTraceWriter(str(tmp_path / "plain.hstr"), 1, 4).abort()  # uncompressed needs nothing


def test_a_fifo_or_directory_target_is_refused_and_left_alone(tmp_path):
    # A FIFO (or a device) cannot take a header patched at close, and a rename would replace it: refused, untouched.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        with pytest.raises(TraceWriteError, match="is not a regular file"):
            NativeTraceWriter(str(target), layers=2, top_k=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    assert not os.path.isfile(fifo)
