"""SGLang's HiSparse V2 swap-in: its Triton plan and serve kernels, timed and recorded for the slot-for-slot check.

The kernels are imported from the pinned sglang source (`.engine/src/sglang`, commit in pins.yaml) and launched
with SGLang's grids: plan one program per request, serve one per (request, top-k lane). State is set up as the
coordinator keeps it: `device_locs` −1 on the evicted prefix [0, E), `host_locs` valid everywhere, `slot_pos`
holding the buffer's residents. A miss rate is produced by making a share of each request's evicted top-k entries
resident beforehand. The plan kernel updates `slot_pos` in place, so each timed call first restores it; the restore
(a device copy) is timed alone and subtracted, and the row says so.

V1 (`load_cache_to_device_buffer`, hisparse.cuh) is a JIT kernel of SGLang's own build system; it was measured at
block 960 and other block sizes on both GPUs on 2026-11-25 (scenarios/measurements/sglang_swapin_*.csv) and is not
re-timed here.
"""

import sys

import numpy as np
import torch
import triton

from timing import time_op

ROW_BYTES = 656  # DeepSeek-V3.2 / GLM-5 fp8 latent row (the bytes each miss moves)


def _load(sglang_src):
    sys.path.insert(0, f"{sglang_src}/python/sglang/kernels/ops/kvcache")
    import hisparse_v2
    return hisparse_v2


class V2State:
    """Tensors of one layer's V2 swap-in for `batch` requests of `seq` positions, evicted prefix [0, evicted_end)."""

    def __init__(self, batch, seq, nslot, topk, evicted_end, row_bytes=ROW_BYTES, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.batch, self.seq, self.nslot, self.topk, self.E = batch, seq, nslot, topk, evicted_end
        dev = "cuda"
        self.req_pool_indices = torch.arange(batch, device=dev, dtype=torch.int64)
        pos = torch.arange(seq, device=dev, dtype=torch.int32)
        self.device_locs = torch.where(pos < evicted_end, -1, pos).repeat(batch, 1).contiguous()
        # Host rows wrap over a 65,536-row pinned pool: enough to defeat caches, small enough to allocate per case.
        self.host_rows = min(batch * seq, 65536)
        self.host_locs = (torch.arange(batch * seq, device=dev, dtype=torch.int64) % self.host_rows).view(
            batch, seq).contiguous()
        self.slot_pos = torch.full((batch, 1, nslot), -1, device=dev, dtype=torch.int32)
        self.pos2slot = torch.full((batch, seq), -1, device=dev, dtype=torch.int32)
        self.scratch = torch.zeros(batch, 2 * nslot + topk, device=dev, dtype=torch.int32)
        self.plan = torch.zeros(batch, topk, device=dev, dtype=torch.int32)
        self.num_real = torch.tensor([batch], device=dev, dtype=torch.int32)
        self.result = torch.zeros(batch, topk, device=dev, dtype=torch.int32)
        self.temp_slots = (torch.arange(batch * nslot, device=dev, dtype=torch.int64)).view(batch, nslot).contiguous()
        self.device_kv = torch.empty(batch * nslot, row_bytes, device=dev, dtype=torch.uint8)
        self.host_kv = torch.randint(0, 255, (self.host_rows, row_bytes), dtype=torch.uint8).pin_memory()
        self.host_ptrs = torch.tensor([self.host_kv.data_ptr()], device=dev, dtype=torch.int64)
        self.host_stride = torch.tensor([row_bytes], device=dev, dtype=torch.int64)
        self.row_bytes = row_bytes
        self.gen = g

    def random_topk(self, miss_rate):
        """Distinct top-k per request: all from the evicted prefix, with `1 − miss_rate` of them made resident."""
        idx = torch.stack([torch.randperm(self.E, device="cuda", generator=self.gen)[:self.topk]
                           for _ in range(self.batch)]).int()
        resident = int(round(self.topk * (1.0 - miss_rate)))
        self.slot_pos.fill_(-1)
        if resident:
            self.slot_pos[:, 0, :resident] = idx[:, :resident]
        return idx.contiguous()


def plan(mod, st, topk_idx):
    mod.swap_in_plan_kernel[(st.batch,)](
        st.req_pool_indices, topk_idx, st.device_locs, st.host_locs, st.slot_pos, st.pos2slot, st.scratch, st.plan,
        st.num_real, 0, 1, st.device_locs.stride(0), st.host_locs.stride(0), st.pos2slot.stride(0),
        TOPK=st.topk, NSLOT=st.nslot)


def serve(mod, st, topk_idx):
    mod.swap_in_serve_kernel[(st.batch, st.topk)](
        st.device_locs, st.req_pool_indices, topk_idx, st.host_locs, st.host_ptrs, st.host_stride, st.device_kv,
        st.result, st.temp_slots, st.plan, st.num_real, 0, st.device_locs.stride(0), st.host_locs.stride(0),
        st.device_kv.stride(0), TOPK=st.topk, NSLOT=st.nslot, BLOCK_KV=triton.next_power_of_2(st.row_bytes))


def collect(sglang_src, batches, log, budget, nslot=4096, topk=2048, seq=32768):
    mod = _load(sglang_src)
    for miss in (0.0, 0.05, 0.2, 0.5):
        for batch in batches:
            if budget.expired():
                log("hisparse v2: time budget spent, stopping")
                return
            try:
                st = V2State(batch, seq, nslot, topk, evicted_end=seq - 256)
                idx = st.random_topk(miss)
                saved = st.slot_pos.clone()
                restore = lambda: st.slot_pos.copy_(saved)  # noqa: E731
                t_restore, _ = time_op(restore)

                def plan_call():
                    restore()
                    plan(mod, st, idx)
                t_plan, why = time_op(plan_call)
                for key in ("median_us", "p10_us", "p90_us"):
                    t_plan[key] = max(0.0, t_plan[key] - t_restore["median_us"])
                t_plan["note"] = f"slot_pos restore ({t_restore['median_us']:.2f} us) subtracted" + (
                    f"; {why}" if why else "")
                restore()
                plan(mod, st, idx)
                t_serve, why = time_op(lambda: serve(mod, st, idx))
            except Exception as e:  # noqa: BLE001
                log(f"hisparse v2 b{batch} miss{miss}: FAILED {e!r}"[:400])
                continue
            params = dict(H=nslot, K=topk, miss=miss, row_bytes=ROW_BYTES, seq=seq)
            yield "swapin_v2_plan", params, batch, t_plan
            yield "swapin_v2_serve", params, batch, t_serve
            del st
            torch.cuda.empty_cache()


def record_plan_steps(sglang_src, cases):
    """Runs the plan kernel for several steps of several cases and returns numpy arrays for the CPU check.

    Each case: (batch, seq, nslot, topk, evicted_end, steps, seed). Entries mix evicted positions, resident ones
    (≥ E) and −1 padding, so every branch of the plan is exercised.
    """
    mod = _load(sglang_src)
    out = {}
    for c, (batch, seq, nslot, topk, evicted_end, steps, seed) in enumerate(cases):
        st = V2State(batch, seq, nslot, topk, evicted_end, row_bytes=64, seed=seed)
        g = torch.Generator().manual_seed(seed)
        topks, plans, states = [], [], []
        hot = torch.randperm(evicted_end, generator=g)[:max(nslot, topk) * 2]  # a reused set makes hits happen
        for _ in range(steps):
            rows = []
            for _r in range(batch):
                n_ev = int(topk * 0.8)
                from_hot = hot[torch.randperm(hot.numel(), generator=g)[:n_ev]]
                res = evicted_end + torch.randperm(seq - evicted_end, generator=g)[:topk - n_ev - 2]
                row = torch.cat([from_hot, res, torch.tensor([-1, -1])]).int()
                rows.append(row[torch.randperm(topk, generator=g)])
            idx = torch.stack(rows).cuda().contiguous()
            plan(mod, st, idx)
            torch.cuda.synchronize()
            topks.append(idx.cpu().numpy())
            plans.append(st.plan.cpu().numpy().copy())
            states.append(st.slot_pos[:, 0].cpu().numpy().copy())
        pre = f"v2_case{c}_"
        out[pre + "dims"] = np.array([batch, seq, nslot, topk, evicted_end, steps], dtype=np.int64)
        out[pre + "topk"] = np.stack(topks).astype(np.int32)
        out[pre + "plan"] = np.stack(plans).astype(np.int32)
        out[pre + "slot_pos"] = np.stack(states).astype(np.int32)
    return out
