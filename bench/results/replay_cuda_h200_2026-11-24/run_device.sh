#!/usr/bin/env bash
# @brief The device run behind README.md (issue 16, GPU half): generates the 64-request DeepSeek-shaped trace,
# replays it on the CPU (16 threads) and with --backend cuda, compares replay.json byte for byte, runs the GPU
# replay tests, and times the whole command (medians). Run from the repository root on the GPU machine with the
# bundle from scripts/gpu_bundle.sh carried; logs go to $OUT (at most 8 files come back).
set -uo pipefail
bundle=${BUNDLE:-$PWD/build/gpu_bundle}
export LD_LIBRARY_PATH=$bundle/lib:/usr/local/cuda/lib64
B=$bundle/bin
out=${OUT:-/tmp/replay_cuda_out}
mkdir -p "$out"
reps=${REPS:-5}
log=$out/replay_cuda.log
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2; } >"$out/device.log" 2>&1
cat "$out/device.log"

# The trace: `trace gen --preset dsv32 --requests 64 --steps 100` takes ~110 s single-threaded (measured on the
# H200, bench/results/replay_h200_2026-11-23/gen.log); the same shape is made here by 16 generators of 4 requests
# in parallel (seeds 1..16), whose files are renamed to request ids 0..63.
t=/tmp/t64
rm -rf "$t" /tmp/g_*; mkdir -p "$t"
t0=$(date +%s.%N)
for g in $(seq 0 15); do
  "$B/hisparse" trace gen --out /tmp/g_$g --format npy --preset ${PRESET:-dsv32} --requests 4 --steps ${STEPS:-100} --seed $((g + 1)) \
    >/tmp/g_$g.log 2>&1 &
done
wait
for g in $(seq 0 15); do
  cat /tmp/g_$g.log >>"$out/gen.log"
  for j in 0 1 2 3; do
    for kind in topk seq_lens; do mv /tmp/g_$g/req_${j}_$kind.npy "$t/req_$((g * 4 + j))_$kind.npy"; done
  done
  [ -f /tmp/g_$g/meta.json ] && cp /tmp/g_$g/meta.json "$t/meta.json"
done
echo "gen (16 parallel generators) $(awk "BEGIN{print $(date +%s.%N) - $t0}") s; $(ls $t | wc -l) files, $(du -sb $t | cut -f1) bytes" | tee -a "$out/gen.log"

run() {  # run NAME SIZES ARGS...: one timed command, its output appended to the log
  local name=$1 sizes=$2; shift 2
  local a=$(date +%s.%N)
  "$B/hisparse" replay --trace "$t" --buffer-sizes $sizes --policy sglang-lru --quiet --no-plots "$@" >/tmp/run.txt 2>&1
  local rc=$?
  local b=$(date +%s.%N)
  { echo "== $name: hisparse replay --trace $t --buffer-sizes $sizes --policy sglang-lru --quiet --no-plots $*"; \
    grep -E "^(speed|cuda|replay:|error)" /tmp/run.txt; [ $rc -ne 0 ] && cat /tmp/run.txt; \
    echo "rc $rc, process wall $(awk "BEGIN{print $b - $a}") s"; } | tee -a "$log"
}
run cpu16 4096 --backend cpu --threads 16 --out /tmp/o_cpu
for i in $(seq 1 "$reps"); do run "cuda16 #$i" 4096 --backend cuda --threads 16 --out /tmp/o_cuda; done
cmp /tmp/o_cpu/replay.json /tmp/o_cuda/replay.json && echo "replay.json identical (cpu 16 threads vs cuda)" | tee -a "$log"
cmp /tmp/o_cpu/replay.csv /tmp/o_cuda/replay.csv && echo "replay.csv identical (cpu 16 threads vs cuda)" | tee -a "$log"
for th in 1 4 8; do for i in 1 2 3; do run "cuda threads $th #$i" 4096 --backend cuda --threads $th --out /tmp/o_cuda_$th; done; done
for i in 1 2 3; do run "cuda16 5 sizes #$i" 2048,3072,4096,6144,8192 --backend cuda --threads 16 --out /tmp/o_cuda5; done
run "cpu16 5 sizes" 2048,3072,4096,6144,8192 --backend cpu --threads 16 --out /tmp/o_cpu5
cmp /tmp/o_cpu5/replay.json /tmp/o_cuda5/replay.json && echo "replay.json identical, 5 sizes (cpu vs cuda)" | tee -a "$log"
[ -x "$B/test_cuda" ] && timeout 240 "$B/test_cuda" -tc='*replay*' 2>&1 | tail -n 30 | tee "$out/test_replay_cuda.log"
grep -E "^(== |speed|cuda \(|rc )" "$log" | sed -e 's/hisparse replay --trace .* --no-plots/.../' | tail -n 60
