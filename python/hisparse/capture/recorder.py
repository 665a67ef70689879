"""Engine-agnostic assembly of swap-in calls into trace step records.

An engine calls its swap-in once per layer per decode forward with a batch: one row of top-k positions per running
request, identified by its slot (SGLang: req_pool_indices), with the sequence length n of the step. A trace step
needs every layer of one request at one decode step, so each open request keeps one pending [layers, top_k] row
block; when its last layer arrives the step goes to the NativeTraceWriter. Slots are reused by later requests, so a
request is bound to its slot by `begin_request` (SGLang: admission) and released by `end_request` (SGLang:
request_finished); without those calls a slot whose n goes down starts a new request.

Trace request ids are assigned 0, 1, 2, ... in order of first appearance; `<path>.requests.jsonl` (written next to
the trace, atomically at close) maps them to the engine's request keys (SGLang's rid).
"""

from __future__ import annotations

import json
import os
from typing import Dict

import numpy as np

from .native_writer import NativeTraceWriter, TraceWriteError


def to_numpy(x) -> np.ndarray:
    """A torch tensor (any device) or array-like as a host numpy array, without importing torch."""
    if hasattr(x, "detach"):
        x = x.detach()
        if hasattr(x, "cpu"):
            x = x.cpu()
        return x.numpy()
    return np.asarray(x)


class _Open:
    __slots__ = ("trace_id", "key", "pending", "filled", "n_filled", "seq_len", "last_seq_len", "steps", "slot",
                 "wait_layer0")

    def __init__(self, trace_id: int, key, layers: int, top_k: int, slot: int):
        self.trace_id = trace_id
        self.key = key
        self.pending = np.full((layers, top_k), -1, dtype=np.int64)
        self.filled = np.zeros(layers, dtype=bool)
        self.n_filled = 0
        self.seq_len = 0
        self.last_seq_len = 0
        self.steps = 0
        self.slot = slot
        self.wait_layer0 = False  # started mid-forward: skip rows until the next forward's first layer


class TopkRecorder:
    """Collects per-layer swap-in calls and writes a native trace at `path`.

    `layers` is the number of distinct layer ids the swap-in is called with per forward (SGLang: the HiSparse
    pool's layer_num); `top_k` the width of the lists (wider rows are refused, narrower ones padded with -1).
    """

    def __init__(self, path: str, layers: int, top_k: int, initial_state: str = "identity",
                 chunk_bytes: int = 1 << 18, compress: bool = False):
        self.path = path
        self.layers = int(layers)
        self.top_k = int(top_k)
        self.writer = NativeTraceWriter(path, self.layers, self.top_k, initial_state, chunk_bytes, compress)
        self._slots: Dict[int, _Open] = {}
        self._next_id = 0
        self.dropped_requests = 0     # refused by validation (see `errors`)
        self.incomplete_steps = 0     # steps still missing layers when their request ended
        self.errors = []              # first few messages, for the log
        self.finished_requests = 0
        self._map_tmp = f"{path}.requests.jsonl.tmp.{os.getpid()}"
        self._map = open(self._map_tmp, "w")
        self._closed = False

    # -------------------------------------------------------------- request lifetime
    def begin_request(self, slot: int, key=None, wait_layer0: bool = False) -> None:
        slot = int(slot)
        if slot in self._slots:
            self.end_request(slot)
        st = _Open(self._next_id, key, self.layers, self.top_k, slot)
        st.wait_layer0 = wait_layer0
        self._slots[slot] = st
        self._next_id += 1

    def end_request(self, slot: int, status: str = "finished") -> None:
        st = self._slots.pop(int(slot), None)
        if st is None:
            return
        if st.n_filled:
            self.incomplete_steps += 1
        self.writer.end_request(st.trace_id)
        if st.steps:
            self.finished_requests += 1
        self._map.write(json.dumps({"request_id": st.trace_id, "key": None if st.key is None else str(st.key),
                                    "slot": st.slot, "steps": st.steps, "status": status}) + "\n")

    def end_absent(self, present_slots) -> None:
        """Ends every open request whose slot is not in `present_slots` (engines without a finish signal call
        this at the first layer of each forward, so memory follows the running requests only)."""
        present = {int(s) for s in present_slots}
        for slot in [s for s in self._slots if s not in present]:
            self.end_request(slot, status="absent from a forward")

    # -------------------------------------------------------------- data
    def record_layer(self, layer_id: int, slots, seq_lens, topk) -> None:
        """One swap-in call: row i of `topk` ([B, K'] positions, -1 padding) belongs to slot `slots[i]` at
        sequence length `seq_lens[i]`. A row the trace format cannot hold drops its request (logged in
        `errors`) instead of raising, so a server keeps running."""
        layer_id = int(layer_id)
        if not 0 <= layer_id < self.layers:
            raise TraceWriteError(f"{self.path}: layer id {layer_id} outside 0..{self.layers - 1} "
                                  "(set the recorder's layers to the number of swap-in layers)")
        slots = to_numpy(slots).reshape(-1)
        seq_lens = to_numpy(seq_lens).reshape(-1)
        rows = to_numpy(topk)
        if rows.ndim != 2 or rows.shape[0] < slots.size or seq_lens.size < slots.size:
            raise TraceWriteError(f"{self.path}: layer {layer_id}: top-k shape {rows.shape}, {slots.size} slots, "
                                  f"{seq_lens.size} seq_lens (expected [batch, K] with one slot and seq_len per row)")
        if rows.shape[1] > self.top_k:
            raise TraceWriteError(f"{self.path}: layer {layer_id}: rows of width {rows.shape[1]} > top_k {self.top_k}")
        for i in range(slots.size):
            slot, n = int(slots[i]), int(seq_lens[i])
            st = self._slots.get(slot)
            if st is None or (st.n_filled == 0 and st.steps > 0 and n < st.last_seq_len):
                self.begin_request(slot, wait_layer0=True)  # unannounced request, or the slot was reused
                st = self._slots[slot]
            if st.wait_layer0:
                if layer_id != 0:
                    continue
                st.wait_layer0 = False
            if st.n_filled and (st.filled[layer_id] or n != st.seq_len):
                self._drop(st, f"layer {layer_id} at n {n} arrived before the step at n {st.seq_len} had every "
                               f"layer ({st.n_filled} of {self.layers})")
                continue
            if st.n_filled == 0:
                st.seq_len = n
                st.pending.fill(-1)
            width = rows.shape[1]
            st.pending[layer_id, :width] = rows[i]
            st.filled[layer_id] = True
            st.n_filled += 1
            if st.n_filled == self.layers:
                try:
                    self.writer.write_step(st.trace_id, st.pending, st.seq_len)
                except TraceWriteError as e:
                    self._drop(st, str(e))
                    continue
                st.steps += 1
                st.last_seq_len = st.seq_len
                st.filled[:] = False
                st.n_filled = 0

    def _drop(self, st: _Open, why: str) -> None:
        self.dropped_requests += 1
        if len(self.errors) < 16:
            self.errors.append(f"request {st.trace_id} (slot {st.slot}, key {st.key}): {why}")
        # Its steps so far are valid; keep them and start over in this slot, at the next forward, under a new id.
        key = st.key
        self.end_request(st.slot, status="cut: " + why)
        self.begin_request(st.slot, key=key, wait_layer0=True)

    def buffered_bytes(self) -> int:
        return self.writer.buffered_bytes() + sum(s.pending.nbytes for s in self._slots.values())

    # -------------------------------------------------------------- end
    def close(self) -> str:
        if self._closed:
            return self.path
        try:
            for slot in list(self._slots):
                self.end_request(slot, status="open at close")
            self.writer.close()
            self._map.close()
            os.replace(self._map_tmp, self.path + ".requests.jsonl")
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.path

    def abort(self) -> None:
        self._closed = True
        self.writer.abort()
        try:
            self._map.close()
            os.remove(self._map_tmp)
        except OSError:
            pass
