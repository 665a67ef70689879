#!/usr/bin/env -S /usr/bin/python3
# @brief Python cross-check of the swap-in replay (docs/swap_in.md) and trace statistics, numpy only.
"""Independent Python implementation of the per-(request, layer) buffer policies of docs/swap_in.md, used to
cross-check `hisparse replay` and to fit synthetic traces quickly.

Policies: sglang-lru (the contract: EVICTABLE[M:] ++ loaded-in-miss-order ++ HITS), belady (evict the
non-hit slot whose token is needed furthest in the future), topk-only (buffer = previous step's list),
fifo (evict the earliest-loaded non-hit slot), lfu (fewest uses, ties: earliest loaded).
Counters as in the contract: selected = valid entries, newest = entries equal to n-1, misses = loads,
hits = the rest. hit_rate = (hits + newest) / selected.
"""

import json
import os

import numpy as np

POLICIES = ["sglang-lru", "belady", "topk-only", "fifo", "lfu"]
NEVER = np.iinfo(np.int64).max // 4


def load_npy_dir(d):
    """{request id: (topk int32 [S, L, K], seq_lens int32 [S])}, meta dict."""
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    out = {}
    for name in sorted(os.listdir(d)):
        if name.startswith("req_") and name.endswith("_topk.npy"):
            rid = int(name[4:-9])
            out[rid] = (np.load(os.path.join(d, name)), np.load(os.path.join(d, f"req_{rid}_seq_lens.npy")))
    return out, meta


def _next_occurrence(lists, seq):
    """For one layer: nxt[t][i] = next step > t using lists[t][i] as a slot user (not as that step's newest)."""
    steps = len(lists)
    maxn = int(seq.max()) + 1
    last = np.full(maxn, NEVER, np.int64)
    nxt = [None] * steps
    for t in range(steps - 1, -1, -1):
        T = lists[t]
        nxt[t] = last[T]
        user = T != seq[t] - 1
        last[T[user]] = t
    return nxt, last   # `last` ends as the first slot use of every position


def replay_layer(lists, seq, H, policy, initial="identity"):
    """lists: per step a 1-D int array (valid entries only, recorded order). Returns (selected, newest, misses)."""
    maxn = int(seq.max()) + 1
    slot_token = np.arange(H, dtype=np.int64) if initial == "identity" else np.full(H, -1, np.int64)
    tok2slot = np.full(maxn, -1, np.int64)
    if initial == "identity":
        tok2slot[:H] = np.arange(H)
    lru = np.arange(H)
    stamp = np.arange(H, dtype=np.int64)      # fifo/lfu load order
    count = np.zeros(H, np.int64)
    clock = H
    if policy == "belady":
        nxt, first = _next_occurrence(lists, seq)
        slot_next = np.where(slot_token >= 0, first[np.clip(slot_token, 0, None)], NEVER + 1)
    selected = newest = misses = 0
    for t, T in enumerate(lists):
        n = int(seq[t])
        selected += len(T)
        if n <= H:
            newest += int((T == n - 1).sum())
            continue
        isnew = T == n - 1
        newest += int(isnew.sum())
        U = T[~isnew]
        s = tok2slot[U]
        hit = s >= 0
        miss_tok = U[~hit]
        M = len(miss_tok)
        misses += M
        if policy == "topk-only":
            # The buffer is exactly the previous list: every slot not hit now is dropped.
            slot_hit = np.zeros(H, bool)
            slot_hit[s[hit]] = True
            drop = ~slot_hit & (slot_token >= 0)
            tok2slot[slot_token[drop]] = -1
            slot_token[drop] = -1
            free = np.nonzero(slot_token < 0)[0][:M]
            slot_token[free] = miss_tok
            tok2slot[miss_tok] = free
            continue
        slot_hit = np.zeros(H, bool)
        slot_hit[s[hit]] = True
        if policy == "sglang-lru":
            lh = slot_hit[lru]
            hits_order, evict = lru[lh], lru[~lh]
            victims = evict[:M]
            lru = np.concatenate([evict[M:], victims, hits_order])
        else:
            cand = np.nonzero(~slot_hit)[0]
            if policy == "belady":
                key = -slot_next[cand]                      # furthest next use first (empty = NEVER+1)
                victims = cand[np.argsort(key, kind="stable")[:M]]
            elif policy == "fifo":
                victims = cand[np.argsort(stamp[cand], kind="stable")[:M]]
            elif policy == "lfu":
                order = np.lexsort((stamp[cand], count[cand]))
                victims = cand[order[:M]]
            else:
                raise ValueError(policy)
        old = slot_token[victims]
        tok2slot[old[old >= 0]] = -1
        slot_token[victims] = miss_tok
        tok2slot[miss_tok] = victims
        if policy == "belady":
            nt = nxt[t][~isnew]
            slot_next[s[hit]] = nt[hit]
            slot_next[victims] = nt[~hit]
        stamp[victims] = clock + np.arange(M)
        clock += M
        count[s[hit]] += 1
        count[victims] = 1
    return selected, newest, misses


def layer_lists(topk, l):
    return [row[row >= 0].astype(np.int64) for row in topk[:, l, :]]


def replay_trace(trace, H, policy, layers=None):
    """trace: {rid: (topk, seq)}; returns hit rate over all requests and layers."""
    sel = miss = 0
    for rid, (topk, seq) in trace.items():
        for l in (range(topk.shape[1]) if layers is None else layers):
            a, _, m = replay_layer(layer_lists(topk, l), seq, H, policy)
            sel += a
            miss += m
    return 1.0 - miss / max(sel, 1)


# ------------------------------------------------------------------------------------------------
# statistics
# ------------------------------------------------------------------------------------------------
def trace_stats(trace, k=None, window=32):
    """Per-trace summary: adjacent overlap, sinks, recent-window coverage, distance and reuse histograms."""
    dist_bins = [0, 1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 1 << 30]
    reuse_bins = [1, 2, 3, 5, 9, 17, 33, 65, 129, 257, 1 << 30]
    ov, pos0, rec16, rec64, ws = [], [], [], [], []
    dist = np.zeros(len(dist_bins) - 1)
    reuse = np.zeros(len(reuse_bins) - 1)
    never_back = dropped = 0
    for rid, (topk, seq) in trace.items():
        K = topk.shape[2] if k is None else k
        S, L, _ = topk.shape
        for l in range(L):
            lists = [r[r >= 0] for r in topk[:, l, :K]]
            last = {}
            prev = None
            ovl = []
            for t, T in enumerate(lists):
                if prev is not None:
                    ovl.append(np.isin(T, prev, assume_unique=True).sum() / len(T))
                prev = T
                d = seq[t] - 1 - T
                dist += np.histogram(d, dist_bins)[0]
                pos0.append(bool((T == 0).any()))
                rec16.append(np.isin(seq[t] - 1 - np.arange(16), T).mean())
                rec64.append(np.isin(seq[t] - 1 - np.arange(64), T).mean())
            ov.append(np.mean(ovl))
            # Reuse gap: steps between two consecutive selections of the same position (gap > 1 = came back).
            pos = np.concatenate(lists)
            stp = np.concatenate([np.full(len(T), t) for t, T in enumerate(lists)])
            o = np.lexsort((stp, pos))
            pos, stp = pos[o], stp[o]
            same = pos[1:] == pos[:-1]
            reuse += np.histogram(np.diff(stp)[same], reuse_bins)[0]
            last_occ = np.full(int(seq.max()) + 1, -1)
            last_occ[pos] = stp          # sorted by step within a position: the last write wins
            # Working set: distinct positions selected in the last `window` steps, relative to K.
            for t in range(window, S, window):
                ws.append(len(np.unique(np.concatenate(lists[t - window:t]))) / K)
            # Dropped positions that never come back (their last selection was the step before the drop).
            for t in range(1, S):
                gone = np.setdiff1d(lists[t - 1], lists[t], assume_unique=True)
                dropped += len(gone)
                never_back += int((last_occ[gone] == t - 1).sum())
    return {
        "overlap": float(np.mean(ov)), "overlap_layer_min": float(np.min(ov)), "overlap_layer_max": float(np.max(ov)),
        "overlap_layer_std": float(np.std(ov)),
        "pos0_selected": float(np.mean(pos0)), "recent16_cov": float(np.mean(rec16)),
        "recent64_cov": float(np.mean(rec64)),
        "dist_hist": {f"<{b}": round(float(x), 4) for b, x in zip(dist_bins[1:], dist / dist.sum())},
        "reuse_gap_hist": {f"<{b}": round(float(x), 4) for b, x in zip(reuse_bins[1:], reuse / reuse.sum())},
        "working_set_over_%d_steps" % window: float(np.mean(ws)),
        "dropped_never_back": never_back / max(dropped, 1),
    }
