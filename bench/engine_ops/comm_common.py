"""What the NCCL/DeepEP collector's parent and its stage processes share: the table header, the pinned DeepEP
commit, the grids, the environment the lent machines require, and the percentile rule (collect_comm.py)."""

import argparse
import csv
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback

HEADER = ["op", "library", "commit", "gpu", "driver", "sm_clock_mhz", "params", "batch", "context", "bytes",
          "median_us", "p10_us", "p90_us", "iters", "method"]
DEEPEP_COMMIT = "567632dd59810d77b3cc05553df953cc0f779799"
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
LL_MAX_TOKENS = 128  # SGLang's default num_max_dispatch_tokens_per_rank for DeepEP low-latency mode
LL_HIDDENS = {2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192}  # the hidden sizes DeepEP's LL kernels are built for
KEEP_ALIVE = []  # DeepEP buffers of this worker, held until os._exit
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
STAGES = ("nccl", "ep_normal", "ep_ll")
# Seconds each stage may take at most (process start, NCCL/NVSHMEM init and the grid); the overall budget caps them.
STAGE_BUDGET_S = {"nccl": 120, "ep_normal": 100, "ep_ll": 110}
SMOKE_BUDGET_S = {"nccl": 60, "ep_normal": 70, "ep_ll": 80}
# What a stage usually takes (for the ETA only).
STAGE_TYPICAL_S = {"nccl": 40, "ep_normal": 35, "ep_ll": 45}

for _k, _v in SAFE_ENV.items():
    os.environ[_k] = _v

try:  # one percentile rule for every engine-op table
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from timing import summarize as _summarize  # noqa: E402
except Exception:  # noqa: BLE001 - timing.py is a sibling helper; the rule below is the same
    _summarize = None


def summarize(samples):
    if _summarize is not None:
        return _summarize(samples)
    s = sorted(samples)

    def pct(q):
        return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]
    return {"median_us": statistics.median(s), "p10_us": pct(0.10), "p90_us": pct(0.90), "iters": len(s)}

