#!/usr/bin/env bash
# @brief The one command for the GPU machine: build for sm_90 (or use a prebuilt bundle), run the GPU tests,
# `hisparse validate` (>= 10,000 random cases per operation + generated traces), compute-sanitizer memcheck and
# racecheck on the kernels, and the benchmarks. Under $OUT (default out/gpu_check): gpu_check.log (every step's
# full output), device.log, bench.csv, step.csv (few files: the lent machine returns at most 8); a summary table last.
#   scripts/gpu_check.sh [--prebuilt DIR] [--cases N] [--quick]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out/gpu_check}
prebuilt="" cases=10000 quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) prebuilt=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
logs=$(mktemp -d)
: >"$out/gpu_check.log"
summary=()
record() {  # record NAME RC NOTE
  local verdict=PASS
  [ "$2" -ne 0 ] && verdict="FAIL(rc=$2)"
  summary+=("$(printf '%-22s %-12s %s' "$1" "$verdict" "$3")")
}
step() {  # step NAME TIMEOUT CMD... ; output to $logs/NAME.log, appended to $out/gpu_check.log
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "=== $name: $*" | tee "$logs/$name.log"
  timeout "$limit" "$@" >>"$logs/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$logs/$name.log"
  tail -n 25 "$logs/$name.log"
  cat "$logs/$name.log" >>"$out/gpu_check.log"
  return $rc
}

nvidia-smi >"$out/device.log" 2>&1 || true
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "device: ${device:-unknown}"

if [ -n "$prebuilt" ]; then
  bin=$(cd "$prebuilt" && pwd)/bin
  export LD_LIBRARY_PATH="$(cd "$prebuilt" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # cuBLASLt is not in the bundle (scripts/gpu_bundle.sh): the machine's CUDA toolkit, or PyTorch's copy.
  for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null); do
    [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
  done
  if ! "$bin/hisparse" --help >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(cd "$prebuilt" && pwd)/lib_std"
  fi
  "$bin/hisparse" --help >/dev/null 2>&1; record build $? "prebuilt bundle $prebuilt"
else
  step build 900 bash -c "cmake -S '$root' -B '$root/build/gpu' -DHISPARSE_CUDA=ON -DHISPARSE_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90a && cmake --build '$root/build/gpu' -j$(nproc) --target hisparse test_cuda"
  record build $? "sm_90, build/gpu"
  bin=$root/build/gpu/bin
  mkdir -p "$bin"
  cp "$root/build/gpu/apps/hisparse" "$root/build/gpu/tests/test_cuda" "$bin/" 2>/dev/null
fi
export HISPARSE_CLI=$bin/hisparse
cli=$bin/hisparse

step tests 90 "$bin/test_cuda"
record "gpu tests" $? "$(grep -o 'test cases:.*' "$logs/tests.log" | tail -1)"

vcases=$cases; [ $quick -eq 1 ] && vcases=500
step validate 420 "$cli" validate --backend cuda --cases "$vcases" --seed 1 --trace gen:default \
  --only swap-in swap-in-trace gather backup
record validate $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/validate.log" | tail -1)"
ocases=$((vcases / 4)); [ $ocases -lt 100 ] && ocases=100
step validate_ops 200 "$cli" validate --backend cuda --cases "$ocases" --seed 11 --only attention indexer indexer-fp8 topk
record "validate attn/idx/topk" $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/validate_ops.log" | tail -1)"
step validate_trace2 40 "$cli" validate --backend cuda --cases 0 --seed 2 --trace gen:low-overlap:shuffle:empty \
  --only swap-in-trace
record "validate trace 2" $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/validate_trace2.log" | tail -1)"
# The HiSparse V2 swap-in kernel (cuda/swap_in_v2.cu): random states and a generated trace at two buffer sizes.
v2cases=$((vcases / 5)); [ $v2cases -lt 100 ] && v2cases=100
step validate_v2 200 "$cli" validate --backend cuda --cases "$v2cases" --seed 31 --trace gen:default --only swap-in-v2
record "validate swap-in-v2" $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/validate_v2.log" | tail -1)"
# Every kernel variant --kernel-config can select is validated too, not only the defaults (the random cases draw
# batches up to 72, so each swap-in variant meets both small and large batches). One value per key that changes
# which code runs; docs/kernels.md lists the keys.
vvcases=$((vcases / 8)); [ $vvcases -lt 50 ] && vvcases=50
for variant in swap_in.cluster=0 swap_in.cluster=1 swap_in.cluster=2 swap_in.cluster=4 swap_in.cluster=16 \
               swap_in.cluster_max_batch=-1 swap_in.large_batch_cluster=1 swap_in.table_bits=0 swap_in.table_bits=2 \
               swap_in.pdl=0 swap_in.phase_timer=1 topk.blocks_per_sm=1 topk.min_chunk=512 topk.min_chunk=65536; do
  case $variant in
    topk.*) ops="topk" trace="" ;;
    *) ops="swap-in swap-in-trace" trace="--trace gen:tiny" ;;
  esac
  name="validate_$(echo "$variant" | tr -c 'A-Za-z0-9\n' '_')"
  step "$name" 120 "$cli" validate --backend cuda --kernel-config "$variant" --cases "$vvcases" --seed 21 $trace \
    --only $ops
  record "validate $variant" $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/$name.log" | tail -1)"
done
# The host pool's three layouts (gather per layer, backup all layers) and the DeltaKV reconstruction (issue 32).
step validate_io 200 "$cli" validate --backend cuda --cases "$ocases" --seed 12 --only gather-layout backup-layout deltakv
record "validate layouts/deltakv" $? "$(grep -o 'validate: [0-9]* cases.*' "$logs/validate_io.log" | tail -1)"
# A retired environment knob must be refused, not silently ignored.
step retired_env 20 env HISPARSE_SWAP_IN_CLUSTER=4 "$cli" validate --backend cuda --cases 1 --only swap-in
rc=$?; [ $rc -ne 0 ] && grep -q "no longer read" "$logs/retired_env.log"; record "retired env refused" $? "exit $rc"

iters=20; [ $quick -eq 1 ] && iters=5
step bench 150 "$cli" bench all --iters $iters --csv "$out/bench.csv"
record bench $? "$(grep -o 'bench: .*targets missed' "$logs/bench.log" | tail -1)"
step bench_io 150 "$cli" bench layouts --iters $iters --csv "$out/bench_io.csv"
record "bench layouts" $? "$(grep -c '' "$out/bench_io.csv" 2>/dev/null) CSV lines"
step bench_deltakv 60 "$cli" bench deltakv --iters $iters --csv "$out/bench_deltakv.csv"
record "bench deltakv" $? "$(grep -c '' "$out/bench_deltakv.csv" 2>/dev/null) CSV lines"
# Every op of a decode layer (the per-op calibration's input; `hisparse bench step --fit step.csv` fits it).
step_batches=1,2,3,4,6,8,12,16,24,32,48,64,96,128,160,192,224,256; [ $quick -eq 1 ] && step_batches=1,8,64,256
step bench_step 200 "$cli" bench step --batches $step_batches --contexts 2K,4K,8K,16K,32K,64K --csv "$out/step.csv"
record "bench step" $? "$(grep -c '' "$out/step.csv" 2>/dev/null) CSV lines"


if command -v compute-sanitizer >/dev/null; then
  step memcheck 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
    "$cli" validate --backend cuda --cases 60 --seed 3 --trace gen:tiny --only swap-in swap-in-trace gather backup
  record memcheck $? "$(grep -o 'ERROR SUMMARY.*' "$logs/memcheck.log" | tail -1)"
  step racecheck 100 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
    "$cli" validate --backend cuda --cases 12 --seed 4 --only swap-in gather backup
  record racecheck $? "$(grep -o 'RACECHECK SUMMARY.*\|ERROR SUMMARY.*' "$logs/racecheck.log" | tail -1)"
  step v2_sanitize 100 bash -c "compute-sanitizer --tool memcheck --error-exitcode 9 '$cli' validate --backend cuda \
      --cases 40 --seed 6 --only swap-in-v2 && compute-sanitizer --tool racecheck --racecheck-report all \
      --error-exitcode 9 '$cli' validate --backend cuda --cases 10 --seed 6 --only swap-in-v2"
  record "swap-in-v2 sanitizers" $? "$(grep -o 'ERROR SUMMARY.*\|RACECHECK SUMMARY.*' "$logs/v2_sanitize.log" | tail -1)"
  step synccheck 40 compute-sanitizer --tool synccheck --error-exitcode 9 \
    "$cli" validate --backend cuda --cases 24 --seed 5 --only swap-in
  record synccheck $? "$(grep -o 'ERROR SUMMARY.*' "$logs/synccheck.log" | tail -1)"
else
  record sanitizer 1 "compute-sanitizer not found"
fi

echo
echo "==== benchmark table (${device:-unknown}) ===="
sed -n '/^op /,$p' "$logs/bench.log" | grep -v '^===' || true
echo
echo "==== gpu_check summary (${device:-unknown}) ===="
printf '%s\n' "${summary[@]}"
for s in "${summary[@]}"; do case "$s" in *FAIL*) exit 1 ;; esac; done
exit 0
