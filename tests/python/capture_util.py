"""Helpers of the capture tests: the hisparse CLI, .npy trace directories, replay per-step tables."""
import os
import struct
import subprocess

import numpy as np
import pytest

from hisparse.capture.native_writer import CHUNK_HEADER_BYTES, CHUNK_MAGIC, END_MAGIC, HEADER_BYTES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hisparse_cli() -> str:
    cli = os.environ.get("HISPARSE_CLI") or os.path.join(REPO, "build", "release", "apps", "hisparse")
    if not os.access(cli, os.X_OK):
        pytest.skip(f"hisparse CLI not built at {cli} (set HISPARSE_CLI)")
    return cli


def run_cli(*args) -> str:
    res = subprocess.run([hisparse_cli(), *map(str, args)], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"hisparse {' '.join(map(str, args))} failed ({res.returncode}):\n{res.stderr}")
    return res.stdout


def write_npy_trace(directory: str, truth: dict, initial_state: str = "identity") -> str:
    """truth: request id -> (topk [steps, layers, K], seq_lens [steps]); written as the .npy trace format."""
    os.makedirs(directory, exist_ok=True)
    for rid, (topk, seq) in truth.items():
        np.save(os.path.join(directory, f"req_{rid}_topk.npy"), np.asarray(topk, dtype=np.int32))
        np.save(os.path.join(directory, f"req_{rid}_seq_lens.npy"), np.asarray(seq, dtype=np.int32))
    with open(os.path.join(directory, "meta.json"), "w") as f:
        f.write('{"initial_state": "%s"}' % initial_state)
    return directory


def read_npy_trace(directory: str) -> dict:
    out = {}
    for name in os.listdir(directory):
        if name.endswith("_topk.npy"):
            rid = int(name[len("req_"):-len("_topk.npy")])
            out[rid] = (np.load(os.path.join(directory, name)),
                        np.load(os.path.join(directory, f"req_{rid}_seq_lens.npy")))
    return out


def replay_table(trace: str, out_csv: str, buffers: str, top_k=None) -> list:
    args = ["replay", "--trace", trace, "--buffer-sizes", buffers, "--policy", "sglang-lru,belady,fifo",
            "--per-step-csv", out_csv]
    if top_k:
        args += ["--top-k", top_k]
    run_cli(*args)
    with open(out_csv) as f:
        lines = f.read().splitlines()
    # A native file holds requests in the order they ended, a .npy directory in ascending id; each request's
    # replay is independent of the others, so rows are compared as a set keyed by (policy, H, request, ...).
    return lines[:1] + sorted(lines[1:])


def assert_same_trace(got: dict, truth: dict):
    assert sorted(got) == sorted(truth)
    for rid, (topk, seq) in truth.items():
        g_topk, g_seq = got[rid]
        np.testing.assert_array_equal(g_seq, np.asarray(seq), err_msg=f"request {rid} seq_lens")
        np.testing.assert_array_equal(g_topk, np.asarray(topk), err_msg=f"request {rid} top-k rows")


def chunk_headers(path: str) -> list:
    """(kind, codec, raw bytes, stored bytes) of every chunk, walked from the header to the footer."""
    data = open(path, "rb").read()
    at, out = HEADER_BYTES, []
    while data[at:at + 4] == CHUNK_MAGIC:
        kind, codec, _, _, _, _, raw, stored = struct.unpack_from("<BBHqQIII", data, at + 4)
        out.append((kind, codec, raw, stored))
        at += CHUNK_HEADER_BYTES + stored
    assert at + 16 == len(data) and data[at + 8:] == END_MAGIC, f"{path}: no footer after {len(out)} chunks"
    return out
