"""Capture hooks against stand-ins of SGLang's and vLLM's HiSparse swap-in call sites (no server is run here).

The stand-ins keep the real method names, parameter names and order, tensor shapes and the request-lifetime
calls (SGLang: hisparse_coordinator.HiSparseCoordinator; vLLM: v1/attention/backends/mla/hisparse.py). The check
of issue 19: what the capture wrote replays identically to the arrays it captured.
"""
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from capture_util import (REPO, assert_same_trace, chunk_headers, read_npy_trace, replay_table, run_cli,
                          write_npy_trace)
from hisparse.capture import sglang as sglang_hook
from hisparse.capture import vllm as vllm_hook
from hisparse.capture.native_writer import CODEC_ZSTD

LAYERS, TOP_K, H = 3, 16, 24


class FakeSGLangCoordinator:
    """SGLang's HiSparseCoordinator as the capture sees it: same methods and argument layout."""

    def __init__(self, layer_num=LAYERS, top_k=TOP_K, device_buffer_size=H):
        self.top_k = top_k
        self.device_buffer_size = device_buffer_size
        self.mem_pool_device = types.SimpleNamespace(layer_num=layer_num)
        self.num_real_reqs = np.zeros(1, dtype=np.int32)
        self.calls = []

    def alloc_device_buffer(self, req):
        self.calls.append(("alloc", req.rid))

    def admit_request_direct(self, req):
        self.alloc_device_buffer(req)

    def host_token_len(self, kv_allocated_len):
        return kv_allocated_len

    def request_finished(self, req):
        self.calls.append(("finished", req.rid))

    def swap_in_selected_pages(self, req_pool_indices, compressed_seq_lens, top_k_result, layer_id):
        self.calls.append(("swap_in", layer_id))
        return np.asarray(top_k_result) * 2 + 1  # stands for the device locations


class Req:
    def __init__(self, rid, slot, n0):
        self.rid, self.req_pool_idx = rid, slot
        self.kv = types.SimpleNamespace(kv_allocated_len=n0)


def selection(rng, n, k):
    """A top-k list as an indexer hands it: score order, the newest token often included, -1 padding when n < k."""
    c = min(n, k)
    sel = rng.choice(n, size=c, replace=False)
    if n - 1 not in sel and rng.random() < 0.7:
        sel[0] = n - 1
    row = np.full(k, -1, dtype=np.int64)
    row[:c] = sel
    return row


def run_sglang_session(coord, rng, padding_rows=0):
    """Five requests through two slots... five slots, admitted and finished at different steps (slots reused);
    every forward calls the swap-in once per layer with the whole batch. Returns the truth per admission order."""
    plan = [  # (rid, slot, admit at forward, n at admission, decode steps)
        ("a", 0, 0, 10, 9), ("b", 3, 0, 30, 14), ("c", 1, 2, 5, 6), ("d", 0, 10, 40, 7), ("e", 2, 4, 18, 12)]
    truth = {}
    running = {}
    order = []
    for f in range(25):
        for rid, slot, at, n0, steps in plan:
            if at == f:
                req = Req(rid, slot, n0)
                coord.alloc_device_buffer(req)
                running[rid] = [req, n0, steps]
                order.append(rid)
                truth[rid] = ([], [])
        batch = [rid for rid in running if running[rid][2] > 0]
        if not batch:
            continue
        slots = np.array([running[r][0].req_pool_idx for r in batch] + [7] * padding_rows, dtype=np.int64)
        for r in batch:
            running[r][1] += 1
        seq = np.array([running[r][1] for r in batch] + [99] * padding_rows, dtype=np.int64)
        coord.num_real_reqs[0] = len(batch)
        rows = {r: np.stack([selection(rng, running[r][1], TOP_K) for _ in range(LAYERS)]) for r in batch}
        for layer in range(LAYERS):
            topk = np.stack([rows[r][layer] for r in batch] + [np.zeros(TOP_K, dtype=np.int64)] * padding_rows)
            out = coord.swap_in_selected_pages(slots, seq, topk, layer)
            np.testing.assert_array_equal(out, topk * 2 + 1)  # passed through unchanged
        for r in batch:
            truth[r][0].append(rows[r])
            truth[r][1].append(running[r][1])
            running[r][2] -= 1
            if running[r][2] == 0:
                coord.request_finished(running[r][0])
    return {order.index(rid): (np.array(t), np.array(s)) for rid, (t, s) in truth.items()}


@pytest.fixture(autouse=True)
def _stop_captures():
    yield
    sglang_hook.stop()
    vllm_hook.stop()


def test_sglang_capture_replays_identically_to_the_captured_arrays(tmp_path):
    path = str(tmp_path / "sglang.hstr")
    sglang_hook.install(path, cls=FakeSGLangCoordinator)
    coord = FakeSGLangCoordinator()
    truth = run_sglang_session(coord, np.random.default_rng(5), padding_rows=2)
    assert sglang_hook.stop() == path
    assert not hasattr(FakeSGLangCoordinator, "_hisparse_orig_swap_in_selected_pages")  # unpatched

    run_cli("trace", "convert", "--in", path, "--out", tmp_path / "back", "--format", "npy")
    assert_same_trace(read_npy_trace(str(tmp_path / "back")), truth)
    reference = write_npy_trace(str(tmp_path / "arrays"), truth)
    got = replay_table(path, str(tmp_path / "captured.csv"), "16,20,24")
    want = replay_table(reference, str(tmp_path / "arrays.csv"), "16,20,24")
    assert len(got) > 100 and got == want

    mapping = {m["request_id"]: m for m in map(json.loads, open(path + ".requests.jsonl"))}
    assert {i: m["key"] for i, m in mapping.items()} == dict(enumerate("abced"))  # ids in admission order
    assert all(m["status"] == "finished" and m["steps"] == len(truth[i][1]) for i, m in mapping.items())


def write_fake_sglang(site) -> str:
    """The stand-in as the module SGLang defines (sglang.srt.managers.hisparse_coordinator) under `site`."""
    pkg = site / "sglang" / "srt" / "managers"
    pkg.mkdir(parents=True)
    for d in (pkg.parent.parent, pkg.parent, pkg):
        (d / "__init__.py").write_text("")
    src = open(__file__).read()
    start = src.index("class FakeSGLangCoordinator")
    end = src.index("class Req:")
    (pkg / "hisparse_coordinator.py").write_text("import types\nimport numpy as np\nLAYERS, TOP_K, H = 3, 16, 24\n\n"
                                                 + src[start:end].replace("FakeSGLangCoordinator",
                                                                          "HiSparseCoordinator"))
    return str(site)


def run_server_stand_in(tmp_path, site, **env):
    """A fresh Python process started as docs/capture.md says (autoload/ first on PYTHONPATH, HISPARSE_CAPTURE*),
    which imports the engine's module and runs a session; the arrays it passed are saved to truth.npz."""
    script = f"""
import sys
import numpy as np
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import sglang.srt.managers.hisparse_coordinator as engine
assert getattr(engine.HiSparseCoordinator.swap_in_selected_pages, "_hisparse_wrapped", False), "not patched"
from test_capture_hooks import run_sglang_session
truth = run_sglang_session(engine.HiSparseCoordinator(), np.random.default_rng(13))
np.savez({str(tmp_path / "truth.npz")!r}, **{{f"topk_{{i}}": t for i, (t, _) in truth.items()}},
         **{{f"seq_{{i}}": s for i, (_, s) in truth.items()}})
"""
    autoload = os.path.join(REPO, "python", "hisparse", "capture", "autoload")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([autoload, site] + sys.path), **env)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment)


def test_autoload_captures_a_fresh_server_process_with_zstd(tmp_path):
    """The documented way in, end to end: sitecustomize installs the hook, the engine's import patches the class,
    exit finalises the file; HISPARSE_CAPTURE_ZSTD=1 makes every chunk zstd, and the file replays identically to
    the arrays the stand-in engine passed."""
    pytest.importorskip("zstandard", reason="python3-zstandard (scripts/setup.sh) is not installed")
    site = write_fake_sglang(tmp_path / "site")
    res = run_server_stand_in(tmp_path, site, HISPARSE_CAPTURE=str(tmp_path / "cap_{pid}.hstr"),
                              HISPARSE_CAPTURE_ZSTD="1")
    assert res.returncode == 0, res.stderr
    [path] = [str(p) for p in tmp_path.glob("cap_*.hstr")]
    assert {codec for _, codec, _, _ in chunk_headers(path)} == {CODEC_ZSTD}
    saved = np.load(tmp_path / "truth.npz")
    truth = {i: (saved[f"topk_{i}"], saved[f"seq_{i}"]) for i in range(5)}
    run_cli("trace", "convert", "--in", path, "--out", tmp_path / "back", "--format", "npy")
    assert_same_trace(read_npy_trace(str(tmp_path / "back")), truth)
    got = replay_table(path, str(tmp_path / "captured.csv"), "16,24")
    want = replay_table(write_npy_trace(str(tmp_path / "arrays"), truth), str(tmp_path / "arrays.csv"), "16,24")
    assert len(got) > 50 and got == want


def test_autoload_refuses_zstd_without_the_module(tmp_path):
    """HISPARSE_CAPTURE_ZSTD=1 where zstandard cannot be imported stops the process at start with the reason,
    before the engine runs and before any file is written."""
    site = write_fake_sglang(tmp_path / "site")
    (tmp_path / "site" / "zstandard.py").write_text("raise ImportError('zstandard hidden by the test')\n")
    res = run_server_stand_in(tmp_path, site, HISPARSE_CAPTURE=str(tmp_path / "cap.hstr"), HISPARSE_CAPTURE_ZSTD="1")
    assert res.returncode != 0
    assert "hisparse capture:" in res.stderr and "needs the zstandard module" in res.stderr, res.stderr
    assert not list(tmp_path.glob("cap*")) and not (tmp_path / "truth.npz").exists()


def test_sglang_hook_installs_when_the_module_is_imported(tmp_path, monkeypatch):
    """HISPARSE_CAPTURE + the import hook patch the class SGLang defines, at import, by module path."""
    monkeypatch.syspath_prepend(write_fake_sglang(tmp_path / "site"))
    monkeypatch.setenv("HISPARSE_CAPTURE", str(tmp_path / "env_{pid}.hstr"))
    monkeypatch.setenv("HISPARSE_CAPTURE_MAX_REQUESTS", "5")
    for m in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, m)
    cap = sglang_hook.install_from_env()
    import sglang.srt.managers.hisparse_coordinator as real_module  # the engine's import triggers the patch

    assert getattr(real_module.HiSparseCoordinator.swap_in_selected_pages, "_hisparse_wrapped", False)
    truth = run_sglang_session(real_module.HiSparseCoordinator(), np.random.default_rng(9))
    final = str(tmp_path / f"env_{os.getpid()}.hstr")
    assert not cap.active and os.path.exists(final)  # finalised by MAX_REQUESTS, without stop()
    run_cli("trace", "convert", "--in", final, "--out", tmp_path / "back", "--format", "npy")
    assert_same_trace(read_npy_trace(str(tmp_path / "back")), truth)


def test_capture_errors_never_reach_the_engine(tmp_path, caplog):
    path = str(tmp_path / "broken.hstr")
    sglang_hook.install(path, cls=FakeSGLangCoordinator)
    coord = FakeSGLangCoordinator()
    rows = np.zeros((1, TOP_K), dtype=np.int64)
    out = coord.swap_in_selected_pages(np.array([0]), np.array([5]), rows, 17)  # layer id beyond layer_num
    np.testing.assert_array_equal(out, rows * 2 + 1)
    assert "capture stopped" in caplog.text and "layer id 17" in caplog.text
    assert sglang_hook.stop() is None
    assert os.listdir(tmp_path) == []  # nothing half-written


class FakeSGLangCoordinatorLater(FakeSGLangCoordinator):
    """Later SGLang versions' swap-in: parameters added after layer_id (position space, speculative steps)."""

    def swap_in_selected_pages(self, req_pool_indices, compressed_seq_lens, top_k_result, layer_id,
                               token_position_space="compressed", num_steps=1):
        return super().swap_in_selected_pages(req_pool_indices, compressed_seq_lens, top_k_result, layer_id)


def test_later_sglang_signature_records_single_steps_and_refuses_multi_step(tmp_path, caplog):
    path = str(tmp_path / "later.hstr")
    sglang_hook.install(path, cls=FakeSGLangCoordinatorLater)
    truth = run_sglang_session(FakeSGLangCoordinatorLater(), np.random.default_rng(6))
    assert sglang_hook.stop() == path
    run_cli("trace", "convert", "--in", path, "--out", tmp_path / "back", "--format", "npy")
    assert_same_trace(read_npy_trace(str(tmp_path / "back")), truth)

    # Several speculative steps in one call are not one decode step: the capture stops, the engine goes on.
    sglang_hook.install(str(tmp_path / "spec.hstr"), cls=FakeSGLangCoordinatorLater)
    coord = FakeSGLangCoordinatorLater()
    coord.alloc_device_buffer(Req("s", 0, 8))
    coord.num_real_reqs[0] = 1
    rows = np.where(np.arange(TOP_K) < 9, np.arange(TOP_K), -1)[None, :]  # a valid list: n 9 < K, -1 padded
    out = coord.swap_in_selected_pages(np.array([0]), np.array([9]), rows, 0, "compressed", 2)
    np.testing.assert_array_equal(out, rows * 2 + 1)
    assert "num_steps=2" in caplog.text and "capture stopped" in caplog.text
    assert sglang_hook.stop() is None
    assert not (tmp_path / "spec.hstr").exists()


def test_invalid_rows_cut_the_request_and_the_rest_is_kept(tmp_path):
    path = str(tmp_path / "cut.hstr")
    sglang_hook.install(path, cls=FakeSGLangCoordinator, layers=1)
    coord = FakeSGLangCoordinator(layer_num=1, top_k=4)
    coord.alloc_device_buffer(Req("x", 0, 3))
    coord.num_real_reqs[0] = 1
    coord.swap_in_selected_pages(np.array([0]), np.array([4]), np.array([[0, 1, 3, -1]]), 0)
    coord.swap_in_selected_pages(np.array([0]), np.array([5]), np.array([[0, 0, 3, -1]]), 0)  # duplicate
    coord.swap_in_selected_pages(np.array([0]), np.array([6]), np.array([[5, 1, -1, -1]]), 0)
    sglang_hook.stop()
    back = run_cli("trace", "convert", "--in", path, "--out", tmp_path / "b", "--format", "npy")
    got = read_npy_trace(str(tmp_path / "b"))
    assert [len(s) for _, (_, s) in sorted(got.items())] == [1, 1]  # before the cut, after it
    assert "selected twice" in open(path + ".requests.jsonl").read()


class FakeVllmCoordinator:
    """vLLM's per-layer HiSparseCoordinator.swap_in as the capture sees it (keyword-only arguments)."""

    def __init__(self):
        self.calls = 0

    def swap_in(self, *, kv_cache, req_id_per_token, block_table, topk_indices, block_size, slot_mapping,
                return_valid_counts=False, produce_plan=False):
        self.calls += 1
        return kv_cache, np.asarray(topk_indices) + 1000


def test_vllm_capture_recovers_n_from_the_block_table(tmp_path):
    block_size = 4
    path = str(tmp_path / "vllm.hstr")
    vllm_hook.install(path, cls=FakeVllmCoordinator, layers=LAYERS)
    coords = [FakeVllmCoordinator() for _ in range(LAYERS)]
    rng = np.random.default_rng(11)
    # Three requests with disjoint KV blocks; rows are condensed when one finishes (its row goes away).
    reqs = {"p": [0, 9, 6], "q": [1, 20, 10], "r": [2, 12, 4]}  # row, n at start, decode steps
    blocks = {name: list(range(100 * (i + 1), 100 * (i + 1) + 20)) for i, name in enumerate(reqs)}
    truth = {name: ([], []) for name in reqs}
    for f in range(10):
        live = [r for r in reqs if reqs[r][2] > 0]
        if not live:
            break
        for i, r in enumerate(live):
            reqs[r][0] = i  # condensed rows
            reqs[r][1] += 1
        table = np.full((8, 20), -1, dtype=np.int64)
        for r in live:
            table[reqs[r][0]] = blocks[r]
        rows = np.array([reqs[r][0] for r in live] + [-1])  # one CUDA-graph padding token
        n = np.array([reqs[r][1] for r in live])
        newest = np.array([blocks[r][(reqs[r][1] - 1) // block_size] * block_size + (reqs[r][1] - 1) % block_size
                           for r in live] + [-1])
        sel = {r: np.stack([selection(rng, reqs[r][1], TOP_K) for _ in range(LAYERS)]) for r in live}
        for layer, coord in enumerate(coords):
            topk = np.stack([sel[r][layer] for r in live] + [np.full(TOP_K, -1)])
            _, out = coord.swap_in(kv_cache="kv", req_id_per_token=rows, block_table=table, topk_indices=topk,
                                   block_size=block_size, slot_mapping=newest, produce_plan=True)
            np.testing.assert_array_equal(out, topk + 1000)
        coords[0].swap_in(kv_cache="kv", req_id_per_token=rows, block_table=table, topk_indices=topk,
                          block_size=block_size, slot_mapping=None)  # mixed batch: not recorded
        for r in live:
            truth[r][0].append(sel[r])
            truth[r][1].append(reqs[r][1])
            reqs[r][2] -= 1
    assert vllm_hook.stop() == path
    run_cli("trace", "convert", "--in", path, "--out", tmp_path / "back", "--format", "npy")
    expected = {i: (np.array(truth[r][0]), np.array(truth[r][1])) for i, r in enumerate(["p", "q", "r"])}
    assert_same_trace(read_npy_trace(str(tmp_path / "back")), expected)
    got = replay_table(path, str(tmp_path / "c.csv"), "16,24")
    want = replay_table(write_npy_trace(str(tmp_path / "arrays"), expected), str(tmp_path / "a.csv"), "16,24")
    assert got == want


def test_newest_position_inversion():
    table = np.array([[5, 9, 2], [7, 1, -1]])
    got = vllm_hook.newest_positions(table, np.array([0, 1, 1]), np.array([2 * 4 + 3, 1 * 4 + 0, 99 * 4]), 4)
    np.testing.assert_array_equal(got, [2 * 4 + 3, 1 * 4 + 0, -1])
