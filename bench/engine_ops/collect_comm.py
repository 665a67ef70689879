#!/usr/bin/env python3
"""Times the communication a decode step runs across the GPUs of one node: NCCL's all-reduce, all-gather and
reduce-scatter (through torch.distributed), and DeepEP's expert dispatch and combine, normal and low-latency (LL).
It writes one op table row per measured point.

    python3 bench/engine_ops/collect_comm.py --ranks 2,4 --models deepseek-v3.2,glm-5.2,deepseek-v4-flash --out DIR

Outputs, in DIR:
  comm_ops.csv  op,library,commit,gpu,driver,sm_clock_mhz,params,batch,context,bytes,median_us,p10_us,p90_us,
                iters,method (one header line)
                rewritten after every stage, so a run cut short keeps what it measured;
  comm.log      every stage's output, with what was skipped or failed and why;
  comm_env.log  nvidia-smi topo -m, nvidia-smi, versions, the environment the stages ran under.

What each row means
  all_reduce      bf16, in place; bytes = the tensor on each rank.
  all_gather      all_gather_into_tensor, bf16; bytes = each rank's INPUT shard (the output is ranks x bytes).
  reduce_scatter  reduce_scatter_tensor, bf16; bytes = each rank's OUTPUT shard (the input is ranks x bytes).
                  With these definitions an all-gather and a reduce-scatter of the same `bytes` move the same data.
                  Sizes: powers of two from 4 KiB to 256 MiB, plus the decode sizes tokens x hidden x 2 for tokens
                  in 1..512 and each model's hidden size. params `dtype=bf16;ranks=R`, batch 0.
  ep_dispatch_normal / ep_combine_normal
                  DeepEP's NVLink (intranode) kernels as SGLang's normal mode calls them: get_dispatch_layout +
                  dispatch (the layout kernel is included, as SGLang runs it before every dispatch; so is the host
                  wait for the receive counts that normal-mode dispatch makes), then combine of the bf16 tokens
                  received. Dispatch is timed with fp8 input (SGLang quantises before dispatch when DeepGEMM runs the
                  experts) and with bf16 input; combine is bf16. batch = tokens per rank, 1..512.
  ep_dispatch_ll / ep_combine_ll
                  low_latency_dispatch with use_fp8=True (as SGLang on Hopper) and low_latency_combine (bf16), with
                  num_max_dispatch_tokens_per_rank 128 (SGLang's default; its env
                  SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK), so batch is 1..128; larger batches are skipped
                  and logged. LL needs NVSHMEM: when its buffer cannot be made, the exception is logged and the
                  normal-mode rows still stand.
  DeepEP params: dtype, experts (routed), hidden, model, ranks, topk. Routing: each token picks topk distinct experts
  uniformly at random (seeded per rank, model and batch), the balanced case; weights are a softmax of the scores.

How it is timed
  Every sample starts with a GPU-side alignment: a one-element NCCL all-reduce (all ranks leave it within
  microseconds of each other) followed by a ~50-200 us GPU sleep, so the host has queued the timed work before the GPU
  reaches it and launch latency stays out of the sample (except where the op itself waits on the host, as
  normal-mode dispatch does).
  Collectives: 10 back-to-back calls captured in one CUDA graph (as SGLang's decode graph runs them), replayed 30
  times after warm-up; a sample is one replay / 10 (method=graph). If capture fails on any rank, all ranks fall back to
  CUDA events around 10 eager calls (method=events) and the reason is logged.
  DeepEP: CUDA events around each call (method=events); dispatch and combine are separate samples.
  Each rank keeps its samples; rank 0 gathers them and takes, sample by sample, the slowest rank (a lockstep step waits
  for it), then the median and the nearest-rank 10th/90th percentiles of those (bench/engine_ops/timing.py's rule).

How it runs
  The parent process never touches a GPU. Each (stage, ranks) pair -- nccl, ep_normal, ep_ll -- runs in its own
  process group (torch.multiprocessing.spawn of one process per GPU, NCCL over a free localhost port) with a time
  budget; a stage that hangs or crashes (NVSHMEM init, a device-side assert) is killed whole and logged, and the next
  one starts. Rows are written as they are measured; a stage that died is restarted once past the point it died on,
  while the overall budget (--time-budget-s) allows. Stages run all-nccl first, then DeepEP (riskiest, LL, last per
  rank count), so a DeepEP build started beside this run (--wait-build-s) has the NCCL stages' time to finish.
  NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are forced for every process.
"""
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
_KEEP_ALIVE = []  # DeepEP buffers of this worker, held until os._exit
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


# ------------------------------------------------------------------------------------------------------------------
# Parent: plans the stages, runs each in its own process group with a budget, merges the rows.
# ------------------------------------------------------------------------------------------------------------------

class Log:
    """Lines to stdout and comm.log at once, each stamped with the run's elapsed seconds."""

    def __init__(self, path):
        self.t0 = time.time()
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def __call__(self, msg, raw=False):
        line = msg if raw else f"[collect_comm +{time.time() - self.t0:6.1f}s] {msg}"
        with self.lock:
            print(line, flush=True)
            self.f.write(line + "\n")


def run_cmd(cmd, timeout=30):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + (r.stderr if r.returncode else "")).strip()
    except Exception as e:  # noqa: BLE001 - a missing tool is logged, not fatal
        return f"<{' '.join(cmd)}: {type(e).__name__}: {e}>"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_models(repo, names, log):
    import yaml
    models = []
    for name in names:
        path = os.path.join(repo, "scenarios", "models", f"{name}.yaml")
        try:
            with open(path) as f:
                y = yaml.safe_load(f)
            models.append({"name": name, "hidden": int(y["hidden_size"]), "topk": int(y["experts_per_token"]),
                           "experts": int(y["routed_experts"])})
            log(f"model {name}: hidden {models[-1]['hidden']}, top-k {models[-1]['topk']}, "
                f"experts {models[-1]['experts']}")
        except Exception as e:  # noqa: BLE001 - one bad model file must not stop the others
            log(f"model {name}: SKIPPED, cannot read {path}: {type(e).__name__}: {e}")
    return models


def gpu_facts(log):
    """driver and max SM clock (nvidia-smi), the GPU count, and library versions, without creating a CUDA context."""
    facts = {"driver": "", "sm_clock_mhz": "", "ngpu": 0}
    out = run_cmd(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader,nounits"])
    lines = [l for l in out.splitlines() if l.count(",") >= 2 and not l.startswith("<")]
    if lines:
        name, driver, clock = [x.strip() for x in lines[0].split(",")[:3]]
        facts.update(driver=driver, sm_clock_mhz=clock, ngpu=len(lines), smi_name=name)
    else:
        log(f"nvidia-smi query failed: {out[:300]}")
    try:
        import torch
        facts["ngpu_torch"] = torch.cuda.device_count()
        facts["torch"] = torch.__version__
        facts["torch_cuda"] = torch.version.cuda
        v = torch.cuda.nccl.version()
        facts["nccl"] = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
    except Exception as e:  # noqa: BLE001
        log(f"torch facts: {type(e).__name__}: {e}")
    return facts


def wheel_lib_dirs():
    """lib/ of the NVSHMEM and NCCL wheels (namespace packages), for LD_LIBRARY_PATH: NVSHMEM dlopens its bootstrap
    and transport plugins by name."""
    import importlib.util
    dirs = []
    for name in ("nvidia.nvshmem", "nvidia.nccl"):
        try:
            spec = importlib.util.find_spec(name)
            for p in (spec.submodule_search_locations or []) if spec else []:
                if os.path.isdir(os.path.join(p, "lib")):
                    dirs.append(os.path.join(p, "lib"))
        except Exception:  # noqa: BLE001
            pass
    return dirs


def write_env_log(path, facts, args, build_dir):
    with open(path, "w") as f:
        f.write(f"# collect_comm.py environment, {datetime.datetime.now().isoformat(timespec='seconds')}\n")
        f.write(f"argv: {' '.join(sys.argv)}\npython: {sys.version}\nfacts: {json.dumps(facts)}\n")
        for cmd in (["nvidia-smi", "topo", "-m"], ["nvidia-smi"], ["nvidia-smi", "nvlink", "-s"],
                    ["nvcc", "--version"], ["ls", "/sys/class/infiniband"]):
            f.write(f"\n$ {' '.join(cmd)}\n{run_cmd(cmd)}\n")
        try:
            import importlib.metadata as md
            f.write("\npackages:\n")
            for d in ("torch", "triton", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13", "nvidia-ml-py", "pyyaml"):
                try:
                    f.write(f"  {d}=={md.version(d)}\n")
                except Exception:  # noqa: BLE001
                    f.write(f"  {d}: not installed\n")
        except Exception as e:  # noqa: BLE001
            f.write(f"packages: {e}\n")
        f.write("\nenvironment (NCCL_*, NVSHMEM_*, TORCH_*, CUDA_*, EP_*):\n")
        for k in sorted(os.environ):
            if k.startswith(("NCCL_", "NVSHMEM_", "TORCH_", "CUDA_", "EP_", "LD_LIBRARY_PATH", "PYTHONPATH")):
                f.write(f"  {k}={os.environ[k]}\n")
        status = os.path.join(build_dir, "BUILD_STATUS")
        f.write(f"\nDeepEP build ({build_dir}): "
                f"{open(status).read().strip() if os.path.exists(status) else 'no BUILD_STATUS (yet)'}\n")


def merge_rows(part_paths, out_csv):
    """All stages' rows into one table, written to a temporary file and renamed into place."""
    rows = []
    for p in part_paths:
        if os.path.exists(p):
            with open(p, newline="") as f:
                rows += [r for r in csv.DictReader(f) if r.get("op")]
    tmp = out_csv + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=HEADER, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out_csv)
    return rows


def stream_output(proc, log, prefix):
    for line in iter(proc.stdout.readline, ""):
        log(f"{prefix} {line.rstrip()}", raw=True)


def kill_group(proc, log, why):
    """Ends the stage's process group (its spawn parent and every rank), TERM first, then KILL."""
    log(f"stopping stage process group {proc.pid}: {why}")
    for sig, wait in ((signal.SIGTERM, 8), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_for_build(build_dir, wait_s, deadline, log):
    """Waits (bounded) for build_deepep.sh's BUILD_STATUS; returns its text or None."""
    status = os.path.join(build_dir, "BUILD_STATUS")
    limit = min(time.time() + wait_s, deadline)
    announced = False
    while not os.path.exists(status) and time.time() < limit:
        if not announced:
            log(f"waiting up to {limit - time.time():.0f}s for the DeepEP build ({status})")
            announced = True
        time.sleep(5)
    if os.path.exists(status):
        with open(status) as f:
            return f.read().strip()
    return None


def deep_ep_env(env, build_dir, wait_s, deadline, work, log):
    """The DeepEP stages' environment, or (None, reason) when no deep_ep can be imported. The build (waited for,
    bounded, when it runs beside this collector) goes first on PYTHONPATH only when it produced the extension, so a
    failed build never hides an installed deep_ep; the wheels' lib/ go on LD_LIBRARY_PATH."""
    import importlib.util
    status = wait_for_build(build_dir, wait_s, deadline, log)
    pkg = os.path.join(build_dir, "src", "deep_ep")
    have_so = os.path.isdir(pkg) and any(f.startswith("_C") and f.endswith(".so") for f in os.listdir(pkg))
    installed = importlib.util.find_spec("deep_ep") is not None
    log(f"DeepEP build status: {status or 'none'}; built extension: {'yes' if have_so else 'no'}; "
        f"installed deep_ep: {'yes' if installed else 'no'}")
    if not have_so and not installed:
        return None, f"no deep_ep (build status: {status or 'no BUILD_STATUS'})"
    ep_env = dict(env)
    ep_env.setdefault("EP_JIT_CACHE_DIR", os.path.join(work, "ep_jit_cache"))
    if status and "EP_SUPPRESS_NCCL_CHECK" in status:
        ep_env["EP_SUPPRESS_NCCL_CHECK"] = "1"
    lib_dirs = wheel_lib_dirs()
    paths_txt = os.path.join(build_dir, "paths.txt")
    if have_so and os.path.exists(paths_txt):
        for line in open(paths_txt):
            k, _, v = line.strip().partition("=")
            if k in ("nvshmem_dir", "nccl_dir") and v and v != "-":
                lib_dirs.insert(0, os.path.join(v, "lib"))
    old = [p for p in ep_env.get("LD_LIBRARY_PATH", "").split(":") if p]
    if lib_dirs:
        ep_env["LD_LIBRARY_PATH"] = ":".join(dict.fromkeys(lib_dirs + old))
    if have_so:
        ep_env["PYTHONPATH"] = ":".join([os.path.join(build_dir, "src")] + [p for p in ep_env.get("PYTHONPATH", "")
                                                                          .split(":") if p])
    return ep_env, None


def parent_main(args):
    repo = os.getcwd()
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "comm.log"))
    work = args.work_dir or os.path.join("/tmp", f"collect_comm.{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    deadline = start + args.time_budget_s
    log(f"start: ranks {args.ranks}, models {args.models}, stages {args.stages}, smoke {args.smoke}, "
        f"budget {args.time_budget_s}s, work dir {work}")

    facts = gpu_facts(log)
    build_dir = os.path.abspath(args.deepep_build)
    try:
        write_env_log(os.path.join(args.out, "comm_env.log"), facts, args, build_dir)
    except Exception as e:  # noqa: BLE001
        log(f"comm_env.log: {type(e).__name__}: {e}")
    ngpu = facts.get("ngpu_torch") or facts.get("ngpu") or 0
    log(f"GPUs: {ngpu} x {facts.get('smi_name', '?')}, driver {facts['driver']}, max SM clock "
        f"{facts['sm_clock_mhz']} MHz, torch {facts.get('torch')}, NCCL {facts.get('nccl')}")

    ranks = []
    for r in [int(x) for x in args.ranks.split(",") if x.strip()]:
        if r < 2 or r > ngpu:
            log(f"ranks {r}: SKIPPED ({ngpu} GPUs visible; need 2 <= ranks <= GPUs)")
        else:
            ranks.append(r)
    models = load_models(repo, [m for m in args.models.split(",") if m.strip()], log)
    stages = [s for s in args.stages.split(",") if s in STAGES]
    plan = [(s, r) for s in stages for r in ranks]  # all nccl first, then normal, then LL
    if not plan:
        log("nothing to run")
        merge_rows([], os.path.join(args.out, "comm_ops.csv"))
        return 1
    eta = sum(STAGE_TYPICAL_S[s] for s, _ in plan)
    log(f"plan: {', '.join(f'{s}@{r}' for s, r in plan)}; typically ~{eta}s plus any wait for the DeepEP build; "
        f"hard stop at +{args.time_budget_s}s")

    # The stages' environment; the DeepEP stages get the build's paths once it is known (deep_ep_env).
    env = dict(os.environ, PYTHONUNBUFFERED="1", **SAFE_ENV)
    ep_env, ep_missing = None, None
    parts, summary = [], []
    for stage, r in plan:
        name = f"{stage}@{r}"
        if stage.startswith("ep_") and ep_env is None and ep_missing is None:
            ep_env, ep_missing = deep_ep_env(env, build_dir, args.wait_build_s, deadline, work, log)
        if stage.startswith("ep_") and ep_missing:
            log(f"{name}: SKIPPED, {ep_missing}")
            summary.append(f"{name}: skipped ({ep_missing})")
            continue
        left = deadline - time.time()
        budget = min((SMOKE_BUDGET_S if args.smoke else STAGE_BUDGET_S)[stage], left - 5)
        if budget < 25:
            log(f"{name}: SKIPPED, only {left:.0f}s of the overall budget left")
            summary.append(f"{name}: skipped (time)")
            continue
        part = os.path.join(work, f"{stage}_r{r}.csv")
        parts.append(part)
        attempts, outcome = 0, ""
        while True:
            attempts += 1
            t_stage = time.time()
            rc, note = run_stage(args, stage, r, models, facts, ep_env if stage.startswith("ep_") else env, work,
                                 part, budget, log, attempts)
            merge_rows(parts, os.path.join(args.out, "comm_ops.csv"))
            took = time.time() - t_stage
            outcome = f"{name}: {'ok' if rc == 0 else 'FAILED'} in {took:.0f}s{(' - ' + note) if note else ''}"
            log(outcome)
            left = deadline - time.time()
            # One restart, budget allowing: past the point it died on when it had measured something (else it would
            # die the same way); for LL, a quick death before any point (NVSHMEM set-up) gets one more try without
            # NVSHMEM's IB proxy transport.
            if rc == 0 or attempts >= 2 or left < 40:
                break
            if "(init)" in note and not (stage == "ep_ll" and took < 60):
                break
            budget = min(budget, left - 5)
            how = "with NVSHMEM_REMOTE_TRANSPORT=none" if "(init)" in note else "past the failed point"
            log(f"{name}: restarting {how} ({budget:.0f}s)")
        summary.append(outcome)

    rows = merge_rows(parts, os.path.join(args.out, "comm_ops.csv"))
    try:
        status = os.path.join(build_dir, "BUILD_STATUS")
        with open(os.path.join(args.out, "comm_env.log"), "a") as f:
            f.write(f"\nat the end: DeepEP build status "
                    f"{open(status).read().strip() if os.path.exists(status) else 'none'}; stages:\n")
            f.write("".join(f"  {line}\n" for line in summary))
    except Exception:  # noqa: BLE001
        pass
    counts = {}
    for row in rows:
        ranks_kv = dict(kv.split("=", 1) for kv in row["params"].split(";") if "=" in kv).get("ranks", "?")
        counts[(row["op"], ranks_kv)] = counts.get((row["op"], ranks_kv), 0) + 1
    log(f"done in {time.time() - start:.0f}s: {len(rows)} rows in {os.path.join(args.out, 'comm_ops.csv')}")
    for (op, rk), n in sorted(counts.items()):
        log(f"  {op:<20} ranks {rk}: {n} rows")
    for line in summary:
        log(f"  {line}")
    return 0 if rows else 1


def run_stage(args, stage, world, models, facts, env, work, part, budget, log, attempt):
    """One stage in its own process group; returns (exit status, note)."""
    progress = part + ".progress"
    done_file = part + ".done"
    skip = set()
    if attempt > 1 and os.path.exists(progress):
        last = open(progress).read().strip()
        done = set(open(done_file).read().split()) if os.path.exists(done_file) else set()
        if last and last not in done:
            skip.add(last)
            log(f"{stage}@{world}: skipping the point it died on: {last}")
    for p in (progress,):
        if os.path.exists(p):
            os.remove(p)
    cfg = {"stage": stage, "world": world, "models": models, "facts": facts, "part": part, "progress": progress,
           "done_file": done_file, "skip": sorted(skip), "smoke": args.smoke, "seed": args.seed,
           "deadline": time.time() + budget - 8, "port": free_port(), "budget": budget, "attempt": attempt}
    cfg_path = part + f".cfg{attempt}.json"
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    stage_env = dict(env)
    if stage == "ep_ll" and attempt > 1:
        # A second LL attempt skips NVSHMEM's proxy (IB) transport, which a node without NICs cannot start.
        stage_env.setdefault("NVSHMEM_REMOTE_TRANSPORT", "none")
    log(f"{stage}@{world}: attempt {attempt}, budget {budget:.0f}s")
    cmd = [sys.executable, os.path.abspath(__file__), "--stage-config", cfg_path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env=stage_env, start_new_session=True)
    reader = threading.Thread(target=stream_output, args=(proc, log, f"  [{stage}@{world}]"), daemon=True)
    reader.start()
    note = ""
    try:
        rc = proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        kill_group(proc, log, f"over its {budget:.0f}s budget")
        rc, note = 124, f"killed after {budget:.0f}s"
    finally:
        if proc.poll() is None:
            kill_group(proc, log, "still running")
        # Ranks that outlived the spawn parent share its process group: end them too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        reader.join(timeout=5)
    last = open(progress).read().strip() if os.path.exists(progress) else ""
    if rc != 0:
        note = (note + "; " if note else "") + f"exit {rc}, last point '{last or 'init'}'"
        measured = os.path.exists(done_file) and open(done_file).read().split()
        if not last or last == "init" or not measured:
            note += " (init)"  # died before measuring anything
        time.sleep(3)  # let the driver reclaim the killed ranks' GPU memory before the next stage starts
    return rc, note


# ------------------------------------------------------------------------------------------------------------------
# Stage process: spawns one worker per GPU.
# ------------------------------------------------------------------------------------------------------------------

def stage_main(cfg_path):
    with open(cfg_path) as f:
        cfg = json.load(f)
    import torch.multiprocessing as mp
    try:
        mp.spawn(_worker, args=(cfg,), nprocs=cfg["world"], join=True)
    except Exception as e:  # noqa: BLE001 - the parent reads the exit status; the reason goes to the log
        print(f"stage {cfg['stage']}@{cfg['world']} failed: {type(e).__name__}: {str(e)[-2000:]}", flush=True)
        return 1
    return 0


class Ctx:
    """What a worker needs: its rank, the group, the deadline, and (rank 0) the row writer."""

    def __init__(self, cfg, rank, torch, dist):
        self.cfg, self.rank, self.world = cfg, rank, cfg["world"]
        self.torch, self.dist = torch, dist
        self.smoke = cfg["smoke"]
        self.done = set(open(cfg["done_file"]).read().split()) if os.path.exists(cfg["done_file"]) else set()
        self.skip = set(cfg["skip"])
        self.flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.sync_t = torch.zeros(1, dtype=torch.float32, device="cuda")
        self.gpu = torch.cuda.get_device_name(rank)
        self.t0 = time.time()
        self.rows_written = 0
        if rank == 0:
            new = not os.path.exists(cfg["part"])
            self.part = open(cfg["part"], "a", newline="")
            self.writer = csv.DictWriter(self.part, fieldnames=HEADER)
            if new:
                self.writer.writeheader()
                self.part.flush()

    def log(self, msg, all_ranks=False):
        if self.rank == 0 or all_ranks:
            print(f"r{self.rank} +{time.time() - self.t0:5.1f}s {msg}", flush=True)

    def agree(self, ok):
        """True only if `ok` holds on every rank (a MIN all-reduce): keeps the ranks on the same path."""
        self.flag.fill_(1 if ok else 0)
        self.dist.all_reduce(self.flag, op=self.dist.ReduceOp.MIN)
        return bool(self.flag.item())

    def time_left(self):
        return self.agree(time.time() < self.cfg["deadline"])

    def begin(self, key):
        """Records the point about to run, so a restart can step over it if it kills the stage."""
        if self.rank == 0:
            with open(self.cfg["progress"], "w") as f:
                f.write(key)
                f.flush()
                os.fsync(f.fileno())

    def end(self, key, rows):
        if self.rank == 0:
            for row in rows:
                self.writer.writerow(row)
            self.part.flush()
            os.fsync(self.part.fileno())
            with open(self.cfg["done_file"], "a") as f:
                f.write(key + "\n")
            self.rows_written += len(rows)
        self.done.add(key)

    def wanted(self, key):
        if key in self.done:
            return False
        if key in self.skip:
            self.log(f"{key}: SKIPPED (it killed the previous attempt)")
            return False
        return True

    def align(self, sleep_cycles):
        """GPU-side start line: a one-element all-reduce, then a sleep that lets the host queue the timed work."""
        self.dist.all_reduce(self.sync_t)
        if sleep_cycles and hasattr(self.torch.cuda, "_sleep"):
            self.torch.cuda._sleep(sleep_cycles)

    def slowest(self, samples):
        """Rank 0 gets, sample by sample, the slowest rank's time; others get None."""
        torch = self.torch
        t = torch.tensor(samples, dtype=torch.float64, device="cuda")
        parts = [torch.empty_like(t) for _ in range(self.world)]
        self.dist.all_gather(parts, t)
        if self.rank != 0:
            return None
        return summarize(torch.stack(parts).amax(dim=0).tolist())

    def row(self, op, library, commit, params, batch, nbytes, stats, method):
        return {"op": op, "library": library, "commit": commit, "gpu": self.gpu,
                "driver": self.cfg["facts"].get("driver", ""),
                "sm_clock_mhz": self.cfg["facts"].get("sm_clock_mhz", ""),
                "params": ";".join(f"{k}={params[k]}" for k in sorted(params)), "batch": batch, "context": 0,
                "bytes": nbytes, "median_us": f"{stats['median_us']:.3f}", "p10_us": f"{stats['p10_us']:.3f}",
                "p90_us": f"{stats['p90_us']:.3f}", "iters": stats["iters"], "method": method}


def _worker(local_rank, cfg):
    for k, v in SAFE_ENV.items():
        os.environ[k] = v
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(cfg["port"])
    rank = local_rank
    ctx = None
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(local_rank)
        kw = dict(backend="nccl", init_method=f"tcp://127.0.0.1:{cfg['port']}", world_size=cfg["world"], rank=rank,
                  timeout=datetime.timedelta(seconds=max(60, int(cfg["budget"]))))
        try:  # eager NCCL communicator creation; older torch has no device_id
            dist.init_process_group(**kw, device_id=torch.device("cuda", local_rank))
        except TypeError:
            dist.init_process_group(**kw)
        ctx = Ctx(cfg, rank, torch, dist)
        ctx.begin("init")
        ctx.log(f"{cfg['stage']}: {cfg['world']} ranks up on {ctx.gpu} (attempt {cfg['attempt']}, "
                f"{cfg['deadline'] - time.time():.0f}s to go)")
        {"nccl": run_nccl, "ep_normal": run_ep_normal, "ep_ll": run_ep_ll}[cfg["stage"]](ctx)
        torch.cuda.synchronize()
        dist.barrier()
        ctx.begin("")  # finished: nothing to step over
        ctx.log(f"{cfg['stage']}: finished, {ctx.rows_written} rows")
    except BaseException as e:  # noqa: BLE001 - the exact exception is the log's most useful line
        print(f"r{rank} {cfg['stage']}: FAILED: {type(e).__name__}: {e}\n{traceback.format_exc()}", flush=True)
        sys.stdout.flush()
        os._exit(1)  # no teardown: NCCL/NVSHMEM destructors can hang after a failure
    sys.stdout.flush()
    # Skip interpreter teardown (NVSHMEM finalize and NCCL destructors have hung at exit): the rows are on disk.
    os._exit(0)


# ------------------------------------------------------------------------------------------------------------------
# NCCL collectives
# ------------------------------------------------------------------------------------------------------------------

def nccl_sizes(models, smoke):
    if smoke:
        return [1 << 20]
    sizes = {1 << p for p in range(12, 29)}  # 4 KiB .. 256 MiB
    for m in models:
        for t in TOKENS:
            sizes.add(t * m["hidden"] * 2)
    return sorted(sizes)


def time_graph(ctx, fn, calls, replays, warmup):
    """Samples of one call inside a graph of `calls` calls, or (None, reason) when capture failed on any rank."""
    torch = ctx.torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the communicator is warm, and lazy allocations happen, before capture
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph, err = torch.cuda.CUDAGraph(), None
    try:
        # thread_local: CUDA calls of other threads (NCCL's watchdog) must not invalidate this capture
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            for _ in range(calls):
                fn()
    except Exception as e:  # noqa: BLE001 - the ranks agree below, then fall back together
        err = f"{type(e).__name__}: {str(e)[:300]}"
    torch.cuda.synchronize()
    if not ctx.agree(err is None):
        del graph
        return None, err or "capture failed on another rank"
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        ctx.align(100_000)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    return samples, None


def time_eager(ctx, fn, calls, replays, warmup):
    torch = ctx.torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(replays):
        ctx.align(200_000)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return samples


def collective(torch, dist, op, n, world):
    """One call of `op` on n bf16 elements per rank (see the module doc for what n is per op); the tensors live as
    long as the returned function. Zeros: repeated in-place sums stay finite, and values do not change the timing."""
    if op == "all_reduce":
        x = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        return lambda: dist.all_reduce(x)
    if op == "all_gather":
        x = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        y = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
        return lambda: dist.all_gather_into_tensor(y, x)
    x = torch.zeros(world * n, dtype=torch.bfloat16, device="cuda")
    y = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    return lambda: dist.reduce_scatter_tensor(y, x)


def run_nccl(ctx):
    torch, dist, world = ctx.torch, ctx.dist, ctx.world
    v = torch.cuda.nccl.version()
    commit = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
    sizes = nccl_sizes(ctx.cfg["models"], ctx.smoke)
    ops = ("all_reduce", "all_gather", "reduce_scatter")
    calls, replays, warmup = 10, (8 if ctx.smoke else 30), 3
    points = [(op, n) for n in sizes for op in ops]
    ctx.log(f"nccl {commit}: {len(points)} points ({len(sizes)} sizes x 3 ops, {sizes[0]}..{sizes[-1]} B), "
            f"graph of {calls} calls x {replays} replays")
    use_graph, graph_failures = True, 0
    t_start, n_done = time.time(), 0
    for i, (op, nbytes) in enumerate(points):
        key = f"{op}:{nbytes}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        fn = collective(torch, dist, op, nbytes // 2, world)
        samples, method = None, "graph"
        if use_graph:
            samples, why = time_graph(ctx, fn, calls, replays, warmup)
            if samples is None:
                graph_failures += 1
                ctx.log(f"{key}: graph capture failed ({why}); timing eager calls with events")
                if graph_failures >= 2:
                    use_graph = False
                    ctx.log("two capture failures: events for the rest of this stage")
        if samples is None:
            samples, method = time_eager(ctx, fn, calls, replays, warmup), "events"
        stats = ctx.slowest(samples)
        rows = []
        if ctx.rank == 0:
            rows.append(ctx.row(op, "nccl", commit, {"dtype": "bf16", "ranks": world}, 0, nbytes, stats, method))
        ctx.end(key, rows)
        fn = None  # frees this point's tensors (up to ranks x 256 MiB) before the next
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {op:<14} {nbytes:>10} B  median {stats['median_us']:9.2f} us  "
                    f"p10 {stats['p10_us']:9.2f}  p90 {stats['p90_us']:9.2f}  ({method}; "
                    f"ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------------------------
# DeepEP
# ------------------------------------------------------------------------------------------------------------------

def import_deep_ep(ctx):
    """deep_ep, retried without its NCCL duplicate check when that check is what refuses (logged)."""
    try:
        import deep_ep
        return deep_ep
    except AssertionError as e:
        if "NCCL" not in str(e):
            raise
        ctx.log(f"import deep_ep refused by its NCCL check ({e}); retrying with EP_SUPPRESS_NCCL_CHECK=1", True)
        for m in [m for m in sys.modules if m == "deep_ep" or m.startswith("deep_ep.")]:
            del sys.modules[m]
        os.environ["EP_SUPPRESS_NCCL_CHECK"] = "1"
        import deep_ep
        return deep_ep


def routing(ctx, deep_ep, tokens, model, salt):
    """Uniform top-k without replacement (the top-k of i.i.d. uniform scores), seeded per rank, model and batch."""
    torch = ctx.torch
    g = torch.Generator(device="cuda")
    g.manual_seed(ctx.cfg["seed"] + 100_003 * ctx.rank + 1_009 * tokens + salt)
    scores = torch.rand(tokens, model["experts"], generator=g, device="cuda")
    top = scores.topk(model["topk"], dim=-1)
    idx = top.indices.to(deep_ep.topk_idx_t).contiguous()
    weights = torch.softmax(top.values, dim=-1).to(torch.float32).contiguous()
    return idx, weights, g


def time_events_calls(ctx, calls, warmup, iters, sleep_cycles):
    """Runs `calls` (a list of zero-argument functions executed in order each iteration, the later ones may use what
    the earlier returned through closures) and times each separately with events; returns a list of sample lists."""
    torch = ctx.torch
    for _ in range(warmup):
        for c in calls:
            c()
    torch.cuda.synchronize()
    samples = [[] for _ in calls]
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in calls]
    for _ in range(iters):
        for (start, end), c in zip(events, calls):
            ctx.align(sleep_cycles)
            start.record()
            c()
            end.record()
        events[-1][1].synchronize()
        for k, (start, end) in enumerate(events):
            samples[k].append(start.elapsed_time(end) * 1e3)
    return samples


def ep_models(ctx, ll):
    ok = []
    for m in ctx.cfg["models"]:
        why = None
        if m["experts"] % ctx.world:
            why = f"{m['experts']} experts do not split over {ctx.world} ranks"
        elif m["hidden"] % 128:
            why = f"hidden {m['hidden']} is not a multiple of 128 (fp8 scales)"
        elif ll and m["hidden"] not in LL_HIDDENS:
            why = f"hidden {m['hidden']} is not one DeepEP's LL kernels are compiled for ({sorted(LL_HIDDENS)})"
        elif ll and m["topk"] > 11:
            why = f"top-k {m['topk']} above the LL kernels' 11"
        if why:
            ctx.log(f"{m['name']}: SKIPPED for {'LL' if ll else 'normal'} mode: {why}")
        else:
            ok.append(m)
    if ctx.smoke:
        ok = ok[:1]
    return ok


def run_ep_normal(ctx):
    torch, world = ctx.torch, ctx.world
    deep_ep = import_deep_ep(ctx)
    models = ep_models(ctx, ll=False)
    if not models:
        return
    group = ctx.dist.new_group(list(range(world)))
    # The NVLink buffer SGLang would size: the larger of the dispatch/combine configs' hints for bf16 tokens of the
    # widest model.
    hidden_bytes = max(m["hidden"] for m in models) * 2
    try:
        configs = (deep_ep.Buffer.get_dispatch_config(world), deep_ep.Buffer.get_combine_config(world))
        nvl_bytes = max(cfg.get_nvl_buffer_size_hint(hidden_bytes, world) for cfg in configs)
    except Exception as e:  # noqa: BLE001
        nvl_bytes = int(1e9)
        ctx.log(f"size hint unavailable ({type(e).__name__}: {e}); NVLink buffer of 1 GB")
    ctx.log(f"deep_ep normal mode: Buffer(num_nvl_bytes={nvl_bytes}), {deep_ep.Buffer.num_sms} SMs, "
            f"models {[m['name'] for m in models]}")
    buffer = deep_ep.Buffer(group, int(nvl_bytes), 0, low_latency_mode=False, explicitly_destroy=True)
    tokens_list = [64] if ctx.smoke else TOKENS
    warmup, iters = 3, (5 if ctx.smoke else 30)
    points = [(m, t) for m in models for t in tokens_list]
    t_start, n_done = time.time(), 0
    for i, (m, t) in enumerate(points):
        key = f"{m['name']}:{t}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        hidden, experts = m["hidden"], m["experts"]
        idx, weights, g = routing(ctx, deep_ep, t, m, salt=7 * i)
        x_bf16 = (torch.randn(t, hidden, generator=g, device="cuda") * 0.1).to(torch.bfloat16)
        # fp8 tokens with per-128-channel fp32 scales, the scales column-major as SGLang's quantiser lays them out
        x_fp8 = (x_bf16.to(torch.float8_e4m3fn),
                 torch.rand(hidden // 128, t, generator=g, device="cuda").add_(0.5).t())
        state = {}

        def dispatch(x):
            n_rank, _, n_expert, in_rank, _ = buffer.get_dispatch_layout(idx, experts)
            recv_x, _, recv_w, _, handle, _ = buffer.dispatch(
                x, num_tokens_per_rank=n_rank, is_token_in_rank=in_rank, num_tokens_per_expert=n_expert,
                topk_idx=idx, topk_weights=weights)
            state["recv"], state["handle"] = recv_x, handle

        def combine():
            buffer.combine(state["combine_x"], state["combine_handle"])

        def dispatch_bf16_and_keep():
            dispatch(x_bf16)
            state["combine_x"], state["combine_handle"] = state["recv"], state["handle"]

        # One bf16 dispatch first gives combine its received tokens and handle.
        dispatch_bf16_and_keep()
        torch.cuda.synchronize()
        n_recv = state["combine_x"].shape[0]
        s_fp8, s_bf16, s_comb = time_events_calls(
            ctx, [lambda: dispatch(x_fp8), lambda: dispatch(x_bf16), combine], warmup, iters, 400_000)
        base = {"experts": experts, "hidden": hidden, "model": m["name"], "ranks": world, "topk": m["topk"]}
        stats = [ctx.slowest(s) for s in (s_fp8, s_bf16, s_comb)]
        rows = []
        if ctx.rank == 0:
            rows = [ctx.row("ep_dispatch_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="fp8"), t, 0, stats[0],
                            "events"),
                    ctx.row("ep_dispatch_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[1],
                            "events"),
                    ctx.row("ep_combine_normal", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[2],
                            "events")]
        ctx.end(key, rows)
        state.clear()
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {m['name']:<18} tokens {t:>4} (rank 0 received {n_recv:>5})  "
                    f"dispatch fp8 {stats[0]['median_us']:8.1f} us  bf16 {stats[1]['median_us']:8.1f} us  "
                    f"combine {stats[2]['median_us']:8.1f} us  (ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.synchronize()
    # No buffer.destroy(): NVSHMEM finalize / IPC teardown can hang, and the worker leaves with os._exit right after
    # a barrier, when the driver frees everything; the reference is kept so no destructor runs before that.
    _KEEP_ALIVE.append(buffer)


def run_ep_ll(ctx):
    torch, world = ctx.torch, ctx.world
    deep_ep = import_deep_ep(ctx)
    models = ep_models(ctx, ll=True)
    if not models:
        return
    big = [t for t in TOKENS if t > LL_MAX_TOKENS]
    if big and not ctx.smoke:
        ctx.log(f"LL: batches {big} skipped: above num_max_dispatch_tokens_per_rank={LL_MAX_TOKENS} "
                f"(SGLang's default)")
    group = ctx.dist.new_group(list(range(world)))
    # One NVSHMEM buffer for all models (NVSHMEM is initialised once per process), sized for the largest, and as many
    # QPs per rank as the most local experts (DeepEP's LL kernels check that count).
    rdma_bytes = max(deep_ep.Buffer.get_low_latency_rdma_size_hint(LL_MAX_TOKENS, m["hidden"], world, m["experts"])
                     for m in models)
    qps = max(m["experts"] // world for m in models)
    ctx.log(f"deep_ep LL mode: Buffer(num_rdma_bytes={rdma_bytes}, num_qps_per_rank={qps}), "
            f"NVSHMEM_REMOTE_TRANSPORT={os.environ.get('NVSHMEM_REMOTE_TRANSPORT', '<default>')}, "
            f"models {[m['name'] for m in models]}")
    try:
        buffer = deep_ep.Buffer(group, 0, int(rdma_bytes), low_latency_mode=True, num_qps_per_rank=qps,
                                allow_nvlink_for_low_latency_mode=True, explicitly_destroy=True)
    except Exception as e:
        ctx.log(f"LL buffer (NVSHMEM) cannot be created: {type(e).__name__}: {e}", True)
        raise
    ctx.log("LL buffer ready")
    tokens_list = [64] if ctx.smoke else [t for t in TOKENS if t <= LL_MAX_TOKENS]
    warmup, iters = 3, (5 if ctx.smoke else 30)
    points = [(m, t) for m in models for t in tokens_list]
    t_start, n_done, current = time.time(), 0, None
    combine_in = None
    for i, (m, t) in enumerate(points):
        key = f"{m['name']}:{t}"
        if not ctx.wanted(key):
            continue
        if not ctx.time_left():
            ctx.log(f"out of stage time: {len(points) - i} points not measured (from {key})")
            break
        ctx.begin(key)
        hidden, experts = m["hidden"], m["experts"]
        if current != m["name"]:
            # The LL buffer's layout depends on hidden and experts: zero its signalling area for the new shape.
            buffer.clean_low_latency_buffer(LL_MAX_TOKENS, hidden, experts)
            torch.cuda.synchronize()
            ctx.dist.barrier()
            combine_in = None
            torch.cuda.empty_cache()
            # What the experts hand back: bf16, one slot per (local expert, source rank x max tokens).
            combine_in = torch.randn(experts // world, LL_MAX_TOKENS * world, hidden, device="cuda",
                                     dtype=torch.bfloat16)
            current = m["name"]
        idx, weights, g = routing(ctx, deep_ep, t, m, salt=7 * i + 3)
        x = (torch.randn(t, hidden, generator=g, device="cuda") * 0.1).to(torch.bfloat16)
        state = {}

        def dispatch():
            _, _, handle, _, _ = buffer.low_latency_dispatch(x, idx, LL_MAX_TOKENS, experts, use_fp8=True,
                                                             async_finish=False, return_recv_hook=False)
            state["handle"] = handle

        def combine():
            buffer.low_latency_combine(combine_in, idx, weights, state["handle"], async_finish=False,
                                       return_recv_hook=False)

        s_disp, s_comb = time_events_calls(ctx, [dispatch, combine], warmup, iters, 400_000)
        base = {"experts": experts, "hidden": hidden, "model": m["name"], "ranks": world, "topk": m["topk"]}
        stats = [ctx.slowest(s) for s in (s_disp, s_comb)]
        rows = []
        if ctx.rank == 0:
            rows = [ctx.row("ep_dispatch_ll", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="fp8"), t, 0, stats[0],
                            "events"),
                    ctx.row("ep_combine_ll", "deep_ep", DEEPEP_COMMIT, dict(base, dtype="bf16"), t, 0, stats[1],
                            "events")]
        ctx.end(key, rows)
        state.clear()
        n_done += 1
        if ctx.rank == 0:
            rate = (time.time() - t_start) / n_done
            ctx.log(f"[{i + 1}/{len(points)}] {m['name']:<18} tokens {t:>4}  dispatch {stats[0]['median_us']:8.1f} us"
                    f"  combine {stats[1]['median_us']:8.1f} us  (ETA {rate * (len(points) - i - 1):.0f}s)")
    torch.cuda.synchronize()
    # No buffer.destroy(): NVSHMEM finalize / IPC teardown can hang, and the worker leaves with os._exit right after
    # a barrier, when the driver frees everything; the reference is kept so no destructor runs before that.
    _KEEP_ALIVE.append(buffer)


# ------------------------------------------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,4", help="rank counts, comma-separated (each <= the visible GPUs)")
    ap.add_argument("--models", default="deepseek-v3.2,glm-5.2,deepseek-v4-flash",
                    help="scenarios/models/<name>.yaml files, comma-separated")
    ap.add_argument("--out", help="output folder (comm_ops.csv, comm.log, comm_env.log)")
    ap.add_argument("--stages", default=",".join(STAGES), help="nccl, ep_normal, ep_ll (comma-separated)")
    ap.add_argument("--smoke", action="store_true", help="one size / one batch of each op: a quick check")
    ap.add_argument("--time-budget-s", type=float, default=420,
                    help="the whole run stops starting work after this (default 420: 7 minutes)")
    ap.add_argument("--wait-build-s", type=float, default=0,
                    help="before the first DeepEP stage, wait up to this long for build_deepep.sh's BUILD_STATUS "
                         "(use when the build runs beside this collector)")
    ap.add_argument("--deepep-build", default=".engine/build/deepep",
                    help="build_deepep.sh's output folder (its src/ goes first on PYTHONPATH)")
    ap.add_argument("--work-dir", help="scratch folder for per-stage rows and configs (default /tmp/collect_comm.PID)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--stage-config", help=argparse.SUPPRESS)  # internal: run one stage from this JSON
    a = ap.parse_args(argv)
    if not a.stage_config and not a.out:
        ap.error("--out is required")
    return a


if __name__ == "__main__":
    _args = parse_args()
    if _args.stage_config:
        sys.exit(stage_main(_args.stage_config))
    sys.exit(parent_main(_args))
