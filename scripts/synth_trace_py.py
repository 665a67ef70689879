#!/usr/bin/env -S /usr/bin/python3
# @brief numpy port of the synthetic trace model of traces/trace_generator.cpp (statistically, not bit-exact).
"""Same model as `hisparse trace gen` (GeneratorOptions): per layer the sinks, the recent window (newest
token included) and `topic` positions; each step keeps about `overlap * top_k` of the previous selection
and draws the rest around a few topic centres (triangular, +-topic_width, centres jump with probability
topic_drift per step) or, with probability uniform_fraction, uniformly over [sinks, n - recent_window).

Used to fit the generator's parameters to real traces quickly; final numbers come from the C++ generator.
The random streams differ from the C++ ones (numpy PCG64 here), so traces are not identical, only alike.

Extra, not in the C++ generator (set recency_fraction > 0 to use it): a share of new positions drawn at a
log-uniform distance d in [recent_window, recency_max] before the newest token -- the recency decay seen
in real attention (density ~ 1/d).
"""

import numpy as np

DEFAULTS = dict(requests=2, steps=64, layers=8, top_k=2048, prompt_len=16384, overlap=0.85, sinks=4,
                recent_window=64, topics=8, topic_width=512.0, topic_drift=0.02, uniform_fraction=0.25,
                layer_spread=0.1, seed=1, recency_fraction=0.0, recency_max=1024.0)


def generate(**kw):
    """Returns {rid: (topk int32 [steps, layers, top_k] ascending, -1 padded, seq_lens int32 [steps])}."""
    o = dict(DEFAULTS)
    o.update(kw)
    K, L, S = o["top_k"], o["layers"], o["steps"]
    out = {}
    for r in range(o["requests"]):
        topk = np.full((S, L, K), -1, np.int32)
        seq = (o["prompt_len"] + np.arange(S)).astype(np.int32)   # as the C++ generator: n = prompt_len + t
        for l in range(L):
            rng = np.random.default_rng([o["seed"], r, l])
            ovl = float(np.clip(o["overlap"] + o["layer_spread"] * (rng.random() - 0.5), 0, 1))
            centres = rng.random(o["topics"]) * o["prompt_len"]
            topic = np.zeros(0, np.int64)
            for t in range(S):
                n = int(seq[t])
                k = min(K, n)
                sinks = min(o["sinks"], n)
                win_lo = max(sinks, n - o["recent_window"])
                fixed = sinks + (n - win_lo)
                if n <= K or fixed >= k:
                    row = np.concatenate([np.arange(sinks), np.arange(max(win_lo, n - (k - sinks)), n)])[:k]
                    topic = np.zeros(0, np.int64)
                else:
                    jump = rng.random(len(centres)) < o["topic_drift"]
                    centres[jump] = rng.random(int(jump.sum())) * win_lo
                    budget = k - fixed
                    target = int(round(ovl * k)) - sinks - max(0, n - win_lo - 1)
                    keep = int(np.clip(target, 0, min(budget, len(topic))))
                    topic = rng.permutation(topic)[:keep]
                    need = budget - keep
                    span = win_lo - sinks
                    taken = set(topic.tolist())
                    new = []
                    while need > 0 and len(taken) < span:
                        m = 2 * need + 8
                        u = rng.random(m)
                        p = sinks + rng.integers(0, span, m)            # uniform share
                        rf = o["recency_fraction"]
                        uf = o["uniform_fraction"]
                        if len(centres):
                            c = centres[rng.integers(0, len(centres), m)]
                            q = np.floor(c + (rng.random(m) + rng.random(m) - 1.0) * o["topic_width"])
                            use_t = (u >= uf + rf) & (q >= sinks) & (q < win_lo)
                            p = np.where(use_t, q.astype(np.int64), p)
                        if rf > 0:
                            lo, hi = np.log(max(o["recent_window"], 1)), np.log(max(o["recency_max"], o["recent_window"] + 1))
                            d = np.exp(lo + (hi - lo) * rng.random(m)).astype(np.int64)
                            q = n - 1 - d
                            use_r = (u >= uf) & (u < uf + rf) & (q >= sinks) & (q < win_lo)
                            p = np.where(use_r, q, p)
                        for x in p.tolist():
                            if x not in taken:
                                taken.add(x)
                                new.append(x)
                                need -= 1
                                if need == 0:
                                    break
                    topic = np.concatenate([topic, np.array(new, np.int64)])
                    row = np.concatenate([np.arange(sinks), topic, np.arange(win_lo, n)])
                row = np.sort(row)
                topk[t, l, :len(row)] = row
        out[r] = (topk, seq)
    return out
