#!/usr/bin/env -S /usr/bin/python3
# @brief PyTorch gather + matmul composition of sparse MLA decode attention, timed with CUDA events (median), as
# the baseline `hisparse bench attention` is compared with in the same device run. Prints one line per config.
import argparse
import statistics

import torch


def compose(q, kv, idx, sm_scale):
    k = kv[idx]                                           # [B, K, 576] gather
    s = torch.bmm(q, k.transpose(1, 2)).float() * sm_scale  # [B, H, K]
    s = s.masked_fill((idx < 0).unsqueeze(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).to(torch.bfloat16)
    o = torch.bmm(p, k[..., :512])                        # [B, H, 512]
    return o, lse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(1)
    dev = "cuda"
    slots = 65536
    kv = (torch.rand(slots, 576, device=dev) * 2 - 1).to(torch.bfloat16)
    for b, h, kk in [(64, 128, 2048), (64, 64, 2048), (1, 128, 2048), (128, 128, 2048)]:
        q = (torch.rand(b, h, 576, device=dev) * 2 - 1).to(torch.bfloat16)
        idx = torch.randint(0, slots, (b, kk), device=dev, dtype=torch.int64)
        for _ in range(3):
            compose(q, kv, idx, 1 / 24)
        torch.cuda.synchronize()
        times = []
        for _ in range(args.iters):
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            compose(q, kv, idx, 1 / 24)
            e.record()
            e.synchronize()
            times.append(a.elapsed_time(e) * 1e3)
        us = statistics.median(times)
        flops = 2.0 * b * h * kk * (576 + 512)
        print(f"torch_compose batch {b} heads {h} K {kk} median_us {us:.2f} TFLOP/s {flops / us / 1e6:.1f}")


if __name__ == "__main__":
    main()
