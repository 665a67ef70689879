"""Incremental writer of the native top-k trace format, version 1 (traces/FORMAT.md), in pure Python + numpy.

A live server interleaves requests, but the format stores each request's chunks contiguously, in index order. So
each open request keeps its current chunk in memory and spills finished chunks to its own spool file; when the
request ends, its spool is appended to the main temporary file and deleted. At close the index chunk and footer
are appended, the header is written over its placeholder, and the file is renamed into place: a final path never
holds a half-written trace.

Memory bound (what this object holds, whatever the capture's length):
  per open request: previous-step sorted sets (layers x <= top_k int32, the delta-coding state the format needs),
  one chunk buffer (< chunk_bytes + one encoded step), a few counters;
  per finished request: one index entry (three integers).
Everything else is on disk. `buffered_bytes()` reports the first two terms.

Chunks are stored uncompressed (codec 0, which the format and the C++ reader accept) unless `compress=True`, which
needs the `zstandard` module (Debian's python3-zstandard, or pip); `hisparse trace convert` recompresses a captured
file with zstd afterwards.
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from typing import Dict, List

import numpy as np

MAGIC = b"HSTRACE\x1a"
CHUNK_MAGIC = b"HSCK"
END_MAGIC = b"HSTREND\x1a"
VERSION = 1
HEADER_BYTES = 48
CHUNK_HEADER_BYTES = 40
KIND_STEPS = 1
KIND_INDEX = 2
CODEC_NONE = 0
CODEC_ZSTD = 1
FLAG_INITIAL_EMPTY = 1
TAG_PERMUTED = 1
TAG_PADDING_MIXED = 2

# traces/trace_limits.h: the C++ reader refuses anything beyond these.
MAX_LAYERS = 4096
MAX_TOP_K = 1 << 20
MAX_STEP_ENTRIES = 1 << 26
MAX_SEQ_LEN = 1 << 24
MAX_CHUNK_RAW = 1 << 28

_SENTINEL = np.int64(1) << 40  # larger than any position; sorts padding last


class TraceWriteError(ValueError):
    """A record the native format cannot hold; the message names the file, request, step and layer."""


ZSTD_MISSING = ("compression needs the zstandard module (Debian: apt-get install python3-zstandard; "
                "or pip install zstandard); without it, capture uncompressed and run `hisparse trace convert`")


def zstd_compressor(level: int, path: str):
    """A zstd compressor at `level`; TraceWriteError naming `path` when the optional module is missing."""
    try:
        import zstandard
    except ImportError as e:
        raise TraceWriteError(f"{path}: {ZSTD_MISSING}") from e
    return zstandard.ZstdCompressor(level=level, write_content_size=True)


def zigzag(v: int) -> int:
    return (v << 1) if v >= 0 else ((-v) << 1) - 1


def varint_bytes(values: np.ndarray) -> bytes:
    """LEB128 of every value of a uint64 array, back to back (vectorised: one pass per output byte position)."""
    v = np.ascontiguousarray(values, dtype=np.uint64)
    if v.size == 0:
        return b""
    nbytes = np.ones(v.shape, dtype=np.int64)
    for k in range(1, 10):
        nbytes += v >= np.uint64(1) << np.uint64(7 * k)
    ends = np.cumsum(nbytes)
    starts = ends - nbytes
    out = np.zeros(int(ends[-1]), dtype=np.uint8)
    for k in range(10):
        sel = nbytes > k
        if not sel.any():
            break
        chunk = (v[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (nbytes[sel] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[sel] + k] = (chunk | more).astype(np.uint8)
    return out.tobytes()


def _varint(v: int) -> bytes:
    return varint_bytes(np.array([v], dtype=np.uint64))


def _gaps(sorted_values: np.ndarray) -> np.ndarray:
    """Ascending values as gaps minus one (FORMAT.md): consecutive entries cost a zero."""
    if sorted_values.size == 0:
        return sorted_values.astype(np.uint64)
    return (np.diff(sorted_values.astype(np.int64), prepend=-1) - 1).astype(np.uint64)


class _Request:
    __slots__ = ("request_id", "prev", "prev_seq_len", "steps", "raw", "chunk_first_step", "chunk_steps",
                 "spool_path", "spooled")

    def __init__(self, request_id: int, layers: int, spool_path: str):
        self.request_id = request_id
        self.prev = np.empty(0, dtype=np.int64)  # previous step's sets, keyed layer * 2^40 + position
        self.prev_seq_len = 0
        self.steps = 0
        self.raw = bytearray()
        self.chunk_first_step = 0
        self.chunk_steps = 0
        self.spool_path = spool_path
        self.spooled = 0


class NativeTraceWriter:
    """Writes `path` (a native trace) from step records that may arrive interleaved across requests.

    `write_step(request_id, positions, seq_len)` appends the next step of a request (steps are numbered 0, 1, ...
    per request in arrival order); `end_request(request_id)` moves a finished request into the file (also done for
    every open request by `close()`). A request id may be used once. On error the offending record is refused with
    TraceWriteError and nothing is written for it; `abort()` (or leaving a `with` block by an exception) removes
    every temporary file.
    """

    def __init__(self, path: str, layers: int, top_k: int, initial_state: str = "identity",
                 chunk_bytes: int = 1 << 18, compress: bool = False, zstd_level: int = 3):
        if not (1 <= layers <= MAX_LAYERS and 1 <= top_k <= MAX_TOP_K and layers * top_k <= MAX_STEP_ENTRIES):
            raise TraceWriteError(f"{path}: cannot write layers {layers} x top_k {top_k} "
                                  f"(limits {MAX_LAYERS} x {MAX_TOP_K}, {MAX_STEP_ENTRIES} entries per step)")
        if initial_state not in ("identity", "empty"):
            raise TraceWriteError(f"{path}: initial_state '{initial_state}' (expected identity or empty)")
        if not (1 <= chunk_bytes <= MAX_CHUNK_RAW // 2):
            raise TraceWriteError(f"{path}: chunk_bytes {chunk_bytes} out of range 1..{MAX_CHUNK_RAW // 2}")
        if os.path.exists(path) and not os.path.isfile(path):
            # The header is written over its placeholder at close, so the trace needs a seekable regular file; writing
            # in place (a FIFO) cannot work, and renaming over a device (as root, /dev/null) would replace it.
            raise TraceWriteError(f"{path}: exists and is not a regular file (a device, FIFO or directory); the capture "
                                  f"writer writes a regular file only")
        self.path = path
        self.layers = layers
        self.top_k = top_k
        self.initial_state = initial_state
        self.chunk_bytes = chunk_bytes
        self._zstd = None
        if compress:  # asked for explicitly: without the module that is an error, not a silent stored file
            self._zstd = zstd_compressor(zstd_level, path)
        self.tmp_path = f"{path}.tmp.{os.getpid()}"
        self.spool_dir = f"{path}.spool.{os.getpid()}"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        os.makedirs(self.spool_dir, exist_ok=True)
        self._out = open(self.tmp_path, "wb")
        self._out.write(b"\0" * HEADER_BYTES)  # placeholder; the real header is written at close
        self._written = HEADER_BYTES
        self._open: Dict[int, _Request] = {}
        self._seen: set = set()
        self._index: List[tuple] = []  # (request_id, offset, steps)
        self._closed = False

    # ------------------------------------------------------------------ public API
    def write_step(self, request_id: int, positions, seq_len: int) -> None:
        self._check_open()
        request_id = int(request_id)
        seq_len = int(seq_len)
        req = self._open.get(request_id)
        if req is None:
            if request_id in self._seen:
                raise TraceWriteError(f"{self.path}: request {request_id} was ended already (ids are used once)")
            if not -(1 << 63) <= request_id < (1 << 63):
                raise TraceWriteError(f"{self.path}: request id {request_id} does not fit int64")
            req = _Request(request_id, self.layers, os.path.join(self.spool_dir, f"req_{len(self._seen)}.chunks"))
        where = f"{self.path}: request {request_id}, step {req.steps}"
        rows = np.asarray(positions)
        if rows.dtype.kind not in "iu":
            raise TraceWriteError(f"{where}: positions have dtype {rows.dtype} (expected integers)")
        if rows.shape != (self.layers, self.top_k):
            if rows.ndim == 2 and rows.shape[0] == self.layers and rows.shape[1] < self.top_k:
                pad = np.full((self.layers, self.top_k - rows.shape[1]), -1, dtype=np.int64)
                rows = np.concatenate([rows.astype(np.int64), pad], axis=1)
            else:
                raise TraceWriteError(f"{where}: positions have shape {rows.shape} "
                                      f"(expected [layers {self.layers}, top_k {self.top_k}])")
        rows = rows.astype(np.int64, copy=False)
        if not 1 <= seq_len <= MAX_SEQ_LEN:
            raise TraceWriteError(f"{where}: seq_len {seq_len} out of range 1..{MAX_SEQ_LEN}")
        encoded = self._encode_step(req, rows, seq_len, where)  # validates before touching req's state
        if request_id not in self._open:
            self._open[request_id] = req
            self._seen.add(request_id)
        req.raw += encoded
        req.steps += 1
        req.chunk_steps += 1
        if len(req.raw) >= self.chunk_bytes:
            self._spill(req)

    def end_request(self, request_id: int) -> None:
        """Appends the request's chunks to the file; later steps with this id are refused."""
        self._check_open()
        req = self._open.pop(int(request_id), None)
        if req is None:
            return
        self._spill(req)
        if req.steps == 0:
            return
        offset = self._written
        with open(req.spool_path, "rb") as spool:
            shutil.copyfileobj(spool, self._out, 1 << 20)
        self._written += req.spooled
        os.remove(req.spool_path)
        self._index.append((req.request_id, offset, req.steps))

    def open_requests(self) -> List[int]:
        return list(self._open)

    def buffered_bytes(self) -> int:
        """Bytes held in memory for open requests: chunk buffers plus the delta-coding state."""
        total = 0
        for req in self._open.values():
            total += len(req.raw) + req.prev.nbytes
        return total

    def close(self) -> None:
        """Ends every open request (in the order they started), writes index, footer and header, renames."""
        if self._closed:
            return
        try:
            for rid in list(self._open):
                self.end_request(rid)
            idx = bytearray(_varint(len(self._index)))
            if self._index:
                vals = []
                for rid, off, steps in self._index:
                    vals += [zigzag(rid), off, steps]
                idx += varint_bytes(np.array(vals, dtype=np.uint64))
            index_offset = self._written
            self._emit_chunk(KIND_INDEX, 0, 0, 0, bytes(idx), to=self._out)
            self._out.write(struct.pack("<Q", index_offset) + END_MAGIC)
            self._out.seek(0)
            self._out.write(self._header())
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
            os.replace(self.tmp_path, self.path)
            shutil.rmtree(self.spool_dir, ignore_errors=True)
            self._closed = True
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Removes the temporary file and spools; the final path is never created."""
        self._closed = True
        try:
            self._out.close()
        except Exception:
            pass
        for p in (self.tmp_path,):
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
        shutil.rmtree(self.spool_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False

    # ------------------------------------------------------------------ internals
    def _check_open(self):
        if self._closed:
            raise TraceWriteError(f"{self.path}: writer already closed")

    def _header(self) -> bytes:
        flags = FLAG_INITIAL_EMPTY if self.initial_state == "empty" else 0
        h = MAGIC + struct.pack("<IIiiIIQI", VERSION, HEADER_BYTES, self.layers, self.top_k, flags, 0, 0, 0)
        return h + struct.pack("<I", zlib.crc32(h))

    def _emit_chunk(self, kind: int, request_id: int, first_step: int, n_steps: int, raw: bytes, to) -> int:
        codec, stored = CODEC_NONE, raw
        if self._zstd is not None:
            codec, stored = CODEC_ZSTD, self._zstd.compress(raw)
        h = CHUNK_MAGIC + struct.pack("<BBHqQIII", kind, codec, 0, request_id, first_step, n_steps, len(raw),
                                      len(stored))
        crc = zlib.crc32(stored, zlib.crc32(h))
        to.write(h + struct.pack("<I", crc))
        to.write(stored)
        n = CHUNK_HEADER_BYTES + len(stored)
        if to is self._out:
            self._written += n
        return n

    def _spill(self, req: _Request) -> None:
        if req.chunk_steps == 0:
            return
        with open(req.spool_path, "ab") as spool:
            req.spooled += self._emit_chunk(KIND_STEPS, req.request_id, req.chunk_first_step, req.chunk_steps,
                                            bytes(req.raw), to=spool)
        req.chunk_first_step += req.chunk_steps
        req.chunk_steps = 0
        req.raw = bytearray()

    def _encode_step(self, req: _Request, rows: np.ndarray, seq_len: int, where: str) -> bytes:
        """Validates one step (docs/traces.md rules) and codes it against the request's previous step."""
        valid = rows >= 0
        if (rows < -1).any():
            l, i = np.argwhere(rows < -1)[0]
            raise TraceWriteError(f"{where}, layer {l}: entry {i} is {rows[l, i]} "
                                  "(expected a position in [0, seq_len) or -1 for padding)")
        if (rows >= seq_len).any():
            l, i = np.argwhere(rows >= seq_len)[0]
            raise TraceWriteError(f"{where}, layer {l}: position {rows[l, i]} (entry {i}) is >= seq_len {seq_len}")
        keyed = np.where(valid, rows, _SENTINEL)
        order = np.sort(keyed, axis=1)
        dup = (order[:, 1:] == order[:, :-1]) & (order[:, 1:] < _SENTINEL)
        if dup.any():
            l, i = np.argwhere(dup)[0]
            raise TraceWriteError(f"{where}, layer {l}: position {order[l, i]} is selected twice")
        counts = valid.sum(axis=1)
        values = self._step_values(req, rows, valid, order, counts, seq_len)
        encoded = varint_bytes(values)
        if len(encoded) > MAX_CHUNK_RAW:
            raise TraceWriteError(f"{where}: one step encodes to {len(encoded)} bytes, above {MAX_CHUNK_RAW}")
        req.prev = self._pending_prev
        req.prev_seq_len = seq_len
        return encoded

    def _step_values(self, req, rows, valid, order, counts, seq_len) -> np.ndarray:
        """The varint values of one step in file order, all layers at once.

        Each layer's sorted set is keyed as layer * 2^40 + position, so the layers' sets concatenated form one
        ascending array; set differences against the previous step are then two searchsorted calls, and
        per-layer runs (ranks, gaps) come from the layer ids of each element.
        """
        L, K = rows.shape
        shift = np.int64(1) << 40
        layer_base = (np.arange(L, dtype=np.int64) * shift)[:, None]
        cur_mask = order < _SENTINEL
        cur_keys = (order + layer_base)[cur_mask]                  # ascending
        cur_layer = np.repeat(np.arange(L), counts)
        prev_keys = req.prev                                       # ascending keys of the previous step
        prev_counts = np.bincount((prev_keys >> 40).astype(np.int64), minlength=L) if prev_keys.size else \
            np.zeros(L, dtype=np.int64)
        prev_start = np.cumsum(prev_counts) - prev_counts
        cur_start = np.cumsum(counts) - counts

        def member(a, b):  # a[i] in b (both ascending)
            if b.size == 0 or a.size == 0:
                return np.zeros(a.size, dtype=bool)
            idx = np.minimum(np.searchsorted(b, a), b.size - 1)
            return b[idx] == a

        rm_idx = np.nonzero(~member(prev_keys, cur_keys))[0]
        rm_layer = (prev_keys[rm_idx] >> 40).astype(np.int64)
        rm_rank = rm_idx - prev_start[rm_layer]
        add_sel = ~member(cur_keys, prev_keys)
        add_layer = cur_layer[add_sel]
        add_pos = cur_keys[add_sel] - add_layer * shift

        def grouped_gaps(v, lay):
            if v.size == 0:
                return v.astype(np.uint64)
            prev = np.concatenate(([-1], v[:-1]))
            first = np.concatenate(([True], lay[1:] != lay[:-1]))
            return (v - np.where(first, -1, prev) - 1).astype(np.uint64)

        def index_in_group(lay, n_per_layer):
            start = np.cumsum(n_per_layer) - n_per_layer
            return np.arange(lay.size) - start[lay]

        # Row-order valid entries: permutation flags and ranks.
        row_layer, row_slot = np.nonzero(valid)
        row_keys = rows[row_layer, row_slot] + row_layer * shift
        desc = np.zeros(L, dtype=bool)
        if row_keys.size > 1:
            d = (row_keys[1:] < row_keys[:-1]) & (row_layer[1:] == row_layer[:-1])
            desc = np.bincount(row_layer[1:][d], minlength=L) > 0
        has_pad = counts < K
        first_pad = np.argmax(~valid, axis=1)
        last_valid = K - 1 - np.argmax(valid[:, ::-1], axis=1)
        mixed = has_pad & (counts > 0) & (first_pad < last_valid)

        R = np.bincount(rm_layer, minlength=L)
        A = np.bincount(add_layer, minlength=L)
        P = np.where(mixed, K - counts, 0)
        Q = np.where(desc, counts, 0)
        seg = 3 + R + A + P + Q
        start = 1 + np.cumsum(seg) - seg
        out = np.zeros(1 + int(seg.sum()), dtype=np.uint64)
        out[0] = zigzag(seq_len - req.prev_seq_len)
        out[start] = (desc * TAG_PERMUTED) | (mixed * TAG_PADDING_MIXED)
        out[start + 1] = R
        out[start[rm_layer] + 2 + index_in_group(rm_layer, R)] = grouped_gaps(rm_rank, rm_layer)
        out[start + 2 + R] = A
        out[start[add_layer] + 3 + R[add_layer] + index_in_group(add_layer, A)] = grouped_gaps(add_pos, add_layer)
        if mixed.any():
            pl, pi = np.nonzero(~valid & mixed[:, None])
            out[start[pl] + 3 + R[pl] + A[pl] + index_in_group(pl, P)] = grouped_gaps(pi.astype(np.int64), pl)
        if desc.any():
            sel = desc[row_layer]
            ql = row_layer[sel]
            ranks = np.searchsorted(cur_keys, row_keys[sel]) - cur_start[ql]
            out[start[ql] + 3 + R[ql] + A[ql] + P[ql] + index_in_group(ql, Q)] = ranks.astype(np.uint64)
        self._pending_prev = cur_keys
        return out
