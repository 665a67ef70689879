#!/usr/bin/env bash
# @brief Builds DeepEP at its pinned commit (bench/engine_ops/pins.yaml) for sm_90 on the lent GPU machine, against the
# NVSHMEM and NCCL of the nvidia-nvshmem-cu13 / nvidia-nccl-cu13 pip wheels, with no network and no build isolation.
#
#   run from the repository root:   bash bench/engine_ops/build_deepep.sh [OUT_DIR]     (default .engine/build/deepep)
#
# The sources are read from .engine/src/DeepEP (unpacked from .engine/engine_src.tar.xz when only the tarball
# travelled) and copied to OUT_DIR/src, so the staged tree stays pristine; the empty third-party/fmt submodule is filled
# from .engine/src/fmt. `setup.py build_ext --inplace` leaves deep_ep/_C*.so inside OUT_DIR/src: import it with
# PYTHONPATH=OUT_DIR/src. OUT_DIR/paths.txt names the NVSHMEM and NCCL roots (collect_comm.py puts their lib/ on
# LD_LIBRARY_PATH), OUT_DIR/build.log holds the whole compiler output, and OUT_DIR/BUILD_STATUS is written LAST
# ("ok ..." or "failed: <reason>"), so a collector started beside this build can poll for it.
#
# There is no NVSHMEM-free fallback: setup.py at this commit always compiles internode.cu, internode_ll.cu and the
# NVSHMEM backend (its own TODO says "make NVSHMEM and legacy optional"), so without NVSHMEM there is no DeepEP at all,
# and the status says so.
#
# Env: PYTHON (python3), DEEPEP_BUILD_TIMEOUT_S (480: the compile step's limit), MAX_JOBS (32), CUDA_HOME (from nvcc).
# Exit status 0 only when the extension was built and `import deep_ep` worked.
set -uo pipefail

# NVLink multicast must stay off on the shared hosts (KINDS.md); exported here too so nothing started below loses it.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

t0=$(date +%s)
root=$(pwd)
out=${1:-$root/.engine/build/deepep}
case $out in /*) ;; *) out=$root/$out ;; esac
py=${PYTHON:-python3}
limit=${DEEPEP_BUILD_TIMEOUT_S:-480}
pin=567632dd59810d77b3cc05553df953cc0f779799

mkdir -p "$out" || { echo "build_deepep: cannot create $out"; exit 1; }
rm -f "$out/BUILD_STATUS" "$out/BUILD_STATUS.tmp"
log=$out/build.log
: >"$log"

say() { echo "[build_deepep +$(($(date +%s) - t0))s] $*" | tee -a "$log"; }
finish() {  # finish RC REASON...: writes the status file (last), prints the elapsed time, exits with RC
  local rc=$1; shift
  if [[ $rc == 0 ]]; then echo "ok $*" >"$out/BUILD_STATUS.tmp"; else echo "failed: $*" >"$out/BUILD_STATUS.tmp"; fi
  mv -f "$out/BUILD_STATUS.tmp" "$out/BUILD_STATUS"
  if [[ $rc == 0 ]]; then say "OK $* (elapsed $(($(date +%s) - t0)) s)"; else say "FAILED: $* (elapsed $(($(date +%s) - t0)) s)"; fi
  exit "$rc"
}
build_pid=
trap '[[ -n $build_pid ]] && kill -TERM "$build_pid" 2>/dev/null; finish 1 "interrupted by a signal"' INT TERM

[[ -f $root/bench/engine_ops/build_deepep.sh ]] || finish 1 "run from the repository root (no bench/engine_ops here: $root)"
command -v "$py" >/dev/null || finish 1 "no $py"

# 1. Sources: the staged tree, else the tarball that carries it.
src=$root/.engine/src/DeepEP
if [[ ! -f $src/setup.py && -f $root/.engine/engine_src.tar.xz ]]; then
  say "unpacking .engine/engine_src.tar.xz (DeepEP and fmt only)"
  timeout 120 tar -C "$root/.engine" -xJf "$root/.engine/engine_src.tar.xz" src/DeepEP src/fmt >>"$log" 2>&1 ||
    finish 1 "cannot unpack src/DeepEP and src/fmt from .engine/engine_src.tar.xz"
fi
[[ -f $src/setup.py ]] || finish 1 "no DeepEP sources at .engine/src/DeepEP (stage them with bench/engine_ops/stage_sources.sh and carry .engine)"
if [[ -f $src/.pinned && $(cat "$src/.pinned") != "$pin" ]]; then
  say "WARNING: the staged DeepEP is $(cat "$src/.pinned"), not the pinned $pin (the tables will name $pin)"
fi

say "copying the sources to $out/src"
rm -rf "$out/src" && cp -a "$src" "$out/src" || finish 1 "cannot copy $src to $out/src"
if [[ ! -f $out/src/third-party/fmt/include/fmt/format.h ]]; then
  fmt=$root/.engine/src/fmt
  [[ -f $fmt/include/fmt/format.h ]] || finish 1 "fmt headers missing: DeepEP's third-party/fmt is empty and .engine/src/fmt/include is absent"
  rm -rf "$out/src/third-party/fmt" && mkdir -p "$out/src/third-party/fmt" && cp -a "$fmt/include" "$out/src/third-party/fmt/" ||
    finish 1 "cannot copy the fmt headers"
fi

# 2. CUDA: CUDA_HOME, else the nvcc on PATH, else /usr/local/cuda.
if [[ -z ${CUDA_HOME:-} ]]; then
  if nvcc_path=$(command -v nvcc); then CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then CUDA_HOME=/usr/local/cuda
  fi
fi
[[ -n ${CUDA_HOME:-} && -x $CUDA_HOME/bin/nvcc ]] || finish 1 "nvcc not found (set CUDA_HOME)"
# The interpreter's bin/ too: the venv's ninja lives there, and without ninja torch compiles the sources one by one.
pybin=$(dirname "$(command -v "$py")")
export CUDA_HOME PATH=$CUDA_HOME/bin:$pybin:$PATH
say "CUDA_HOME=$CUDA_HOME ($("$CUDA_HOME/bin/nvcc" --version | tail -n 2 | head -n 1))"
# CUDA 13 keeps CUB/Thrust/libcu++ under include/cccl; setup.py hard-codes /usr/local/cuda/include/cccl, which is
# wrong when CUDA lives elsewhere, so the host compiler gets it through CPATH as well.
if [[ -d $CUDA_HOME/include/cccl ]]; then export CPATH=$CUDA_HOME/include/cccl${CPATH:+:$CPATH}; fi

# 3. NVSHMEM and NCCL from the wheels. nvidia.nvshmem is a namespace package (no __file__), so its __path__ is read,
# and each candidate must hold the headers and libraries setup.py links (host .so, static device library, nccl.h and
# the NCCL device API header nccl_device/core.h that DeepEP's NCCL backend includes).
pkgs=$(timeout 120 "$py" - 2>>"$log" <<'PY'
import glob, importlib, os, site, sys

def candidates(name):
    found = []
    try:
        mod = importlib.import_module("nvidia." + name)
        found += list(getattr(mod, "__path__", []) or [])
        if getattr(mod, "__file__", None):
            found.append(os.path.dirname(mod.__file__))
    except Exception as e:  # the wheel may be missing: the search below still looks in site-packages
        print(f"import nvidia.{name}: {type(e).__name__}: {e}", file=sys.stderr)
    dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
    found += [os.path.join(d, "nvidia", name) for d in dirs if d]
    seen, out = set(), []
    for f in found:
        f = os.path.realpath(f)
        if f not in seen and os.path.isdir(f):
            seen.add(f)
            out.append(f)
    return out

def pick(name, needs):
    for c in candidates(name):
        missing = [n for n in needs if not glob.glob(os.path.join(c, n))]
        if not missing:
            return c
        print(f"{name}: {c} lacks {missing}", file=sys.stderr)
    return "-"

print(pick("nvshmem", ["include/nvshmem.h", "lib/libnvshmem_host.so*", "lib/libnvshmem_device.a"]),
      pick("nccl", ["include/nccl.h", "include/nccl_device/core.h", "lib/libnccl.so*"]))
PY
)
read -r nvshmem_dir nccl_dir <<<"${pkgs:-- -}"
say "NVSHMEM root: $nvshmem_dir"
say "NCCL root:    $nccl_dir"
if [[ $nvshmem_dir == - || -z $nvshmem_dir ]]; then
  finish 1 "NVSHMEM not found (nvidia-nvshmem-cu13 with include/nvshmem.h, lib/libnvshmem_host.so*, lib/libnvshmem_device.a); setup.py at $pin cannot build without NVSHMEM, so DeepEP (normal and low-latency) stays unmeasured"
fi
[[ $nccl_dir != - && -n $nccl_dir ]] || finish 1 "NCCL headers not found (nvidia-nccl-cu13 with include/nccl.h and include/nccl_device/core.h, NCCL >= 2.28)"
printf 'nvshmem_dir=%s\nnccl_dir=%s\ncuda_home=%s\ncommit=%s\n' "$nvshmem_dir" "$nccl_dir" "$CUDA_HOME" "$pin" >"$out/paths.txt"

# find_pkgs.py reads EP_<NAME>_ROOT_DIR, then <NAME>_DIR. setup.py passes -L only for NVSHMEM and links NCCL as
# -l:libnccl.so.N, so the NCCL lib dir goes on LIBRARY_PATH for the linker; LD_LIBRARY_PATH serves the import check
# (and NVSHMEM's dlopen of its bootstrap and transport plugins, which sit beside libnvshmem_host).
export EP_NVSHMEM_ROOT_DIR=$nvshmem_dir NVSHMEM_DIR=$nvshmem_dir EP_NCCL_ROOT_DIR=$nccl_dir NCCL_DIR=$nccl_dir
# DeepEP v1's setup.py links `-l:libnvshmem_host.so` when NVSHMEM_DIR is set, but the wheel ships only the
# versioned soname: give the linker an unversioned link of our own (seen failing on 4x H100, 2026-11-28).
mkdir -p "$out/lib"
host_so=$(ls "$nvshmem_dir"/lib/libnvshmem_host.so.* 2>/dev/null | head -1)
[[ -n $host_so && ! -e $nvshmem_dir/lib/libnvshmem_host.so ]] && ln -sfn "$host_so" "$out/lib/libnvshmem_host.so"
# The image's default g++ links libstdc++ statically, which breaks beside torch's shared one (see build_engine.sh).
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
export LIBRARY_PATH=$out/lib:$nvshmem_dir/lib:$nccl_dir/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$out/lib:$nvshmem_dir/lib:$nccl_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# sm_90 only; setup.py allows the aggressive PTX load/store variants only for exactly "9.0" and keeps them off by default.
export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=${MAX_JOBS:-32}
# Versions, for the log: the wheel versions are the ones the built library is tied to.
timeout 60 "$py" - >>"$log" 2>&1 <<'PY'
import importlib.metadata as md, torch
for d in ("nvidia-nvshmem-cu13", "nvidia-nccl-cu13", "torch", "setuptools", "ninja"):
    try:
        print(f"{d}=={md.version(d)}")
    except Exception as e:
        print(f"{d}: {type(e).__name__}")
print("torch.version.cuda", torch.version.cuda, "torch nccl", torch.cuda.nccl.version())
PY
command -v ninja >/dev/null || say "WARNING: no ninja on PATH: torch compiles the 8 sources one by one (slow)"

# 4. Compile (the long step: internode*.cu dominate), bounded by `timeout`.
say "compiling (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST MAX_JOBS=$MAX_JOBS, limit ${limit}s); full output in $log"
# `timeout` is the background job itself: it runs in its own process group and passes a TERM on to the whole group
# (ninja, nvcc, ptxas), so neither the limit nor an interrupt of this script leaves compilers behind.
cd "$out/src" || finish 1 "cannot enter $out/src"
timeout --kill-after=15 "$limit" "$py" setup.py build_ext --inplace >>"$log" 2>&1 &
build_pid=$!
cd "$root" || finish 1 "cannot return to $root"
# A heartbeat so a long compile shows it is alive; the last compiler line tells where it is.
while kill -0 "$build_pid" 2>/dev/null; do
  sleep 20
  kill -0 "$build_pid" 2>/dev/null && say "still compiling: $(grep -E '^\[[0-9]+/[0-9]+\]' "$log" | tail -n 1 | cut -c1-160)"
done
wait "$build_pid"
rc=$?
if [[ $rc != 0 ]]; then
  grep -nE "error|Error|fatal" "$log" | tail -n 25
  [[ $rc == 124 || $rc == 137 ]] && finish 1 "compile timed out after ${limit}s (DEEPEP_BUILD_TIMEOUT_S)"
  finish 1 "setup.py build_ext exited $rc (see $log)"
fi
# EPv2 builds deep_ep/_C*.so; v1 (the pinned commit) builds deep_ep_cpp*.so beside the package.
so=$(ls "$out"/src/deep_ep/_C*.so "$out"/src/deep_ep_cpp*.so 2>/dev/null | head -n 1)
[[ -n $so ]] || finish 1 "build finished but neither deep_ep/_C*.so nor deep_ep_cpp*.so is under $out/src"
say "built $so ($(du -h "$so" | cut -f1))"
if ldd "$so" | grep -q "not found"; then say "WARNING: unresolved libraries: $(ldd "$so" | grep 'not found' | tr -s ' \t' ' ')"; fi

# 5. Import check (loads the NVSHMEM and NCCL libraries and runs DeepEP's NCCL duplicate check). When the NCCL that
# PyTorch loaded differs byte-wise from the wheel's, DeepEP refuses to import; EP_SUPPRESS_NCCL_CHECK=1 skips that
# check, and the status says it was needed (collect_comm.py retries the same way).
check='import deep_ep; print("deep_ep", getattr(deep_ep, "__version__", "v1 (no __version__)"), deep_ep.__file__, "sm90:", getattr(deep_ep.Buffer, "is_sm90_compiled", lambda: "n/a")())'
if PYTHONPATH=$out/src${PYTHONPATH:+:$PYTHONPATH} timeout 180 "$py" -c "$check" >>"$log" 2>&1; then
  tail -n 1 "$log"
  finish 0 "$so"
fi
say "import deep_ep failed; last lines:"; tail -n 8 "$log"
if EP_SUPPRESS_NCCL_CHECK=1 PYTHONPATH=$out/src${PYTHONPATH:+:$PYTHONPATH} timeout 180 "$py" -c "$check" >>"$log" 2>&1; then
  tail -n 1 "$log"
  finish 0 "$so (import needed EP_SUPPRESS_NCCL_CHECK=1: PyTorch's NCCL is not the wheel's)"
fi
finish 1 "built, but import deep_ep fails: $(grep -E 'Error|error' "$log" | tail -n 1 | cut -c1-300)"
