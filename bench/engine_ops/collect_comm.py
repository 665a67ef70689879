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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from comm_common import *  # noqa: E402,F401,F403 - the shared constants and summarize

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
    src = os.path.join(build_dir, "src")
    # v2 puts deep_ep/_C*.so in the package; v1 (the pinned commit) builds deep_ep_cpp*.so beside it.
    have_so = (os.path.isdir(pkg) and any(f.startswith("_C") and f.endswith(".so") for f in os.listdir(pkg))) or (
        os.path.isdir(src) and any(f.startswith("deep_ep_cpp") and f.endswith(".so") for f in os.listdir(src)))
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
        from comm_stage import stage_main
        sys.exit(stage_main(_args.stage_config))
    sys.exit(parent_main(_args))
