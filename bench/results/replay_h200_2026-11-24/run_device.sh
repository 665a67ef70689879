#!/usr/bin/env bash
# @brief Second device run of 2026-11-24 (issue 16 and 18): the CPU replay's whole command on ONE core of the GPU
# host (the DeepSeek-shaped 1-request trace, medians of 9), and the page replay (`--page-size 16`) on the CPU and
# with --backend cuda compared byte for byte. Run from the repository root with build/gpu_bundle carried.
set -uo pipefail
bundle=${BUNDLE:-$PWD/build/gpu_bundle}
export LD_LIBRARY_PATH=$bundle/lib:/usr/local/cuda/lib64
B=$bundle/bin
out=${OUT:-/tmp/replay_out}
mkdir -p "$out"
log=$out/replay_one_core.log
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$log"
"$B/hisparse" trace gen --out /tmp/t1 --format npy --preset dsv32 --requests 1 --steps 100 >/dev/null 2>&1
for i in $(seq 1 9); do
  taskset -c 2 "$B/hisparse" replay --trace /tmp/t1 --buffer-sizes 4096 --policy sglang-lru --quiet --no-plots \
    --threads 1 --out /tmp/o1 2>&1 | grep -E "^speed" | tee -a "$log"
done
echo "median:" $(grep -oE "in [0-9.]+ s: [0-9.]+ M" "$log" | awk '{print $4}' | sort -n | sed -n 5p) "M entries/s" | tee -a "$log"
for i in $(seq 1 3); do
  taskset -c 2 "$B/hisparse" replay --trace /tmp/t1 --buffer-sizes 2048,3072,4096,6144,8192 --policy sglang-lru --quiet \
    --no-plots --threads 1 --out /tmp/o5 2>&1 | grep -E "^speed" | tee -a "$log"
done
# Pages of 16 tokens: the same trace through PageTraceSource, CPU vs CUDA.
plog=$out/page_replay.log
"$B/hisparse" replay --trace /tmp/t1 --page-size 16 --buffer-sizes 16384,32768 --policy sglang-lru --quiet --no-plots \
  --threads 8 --out /tmp/p_cpu 2>&1 | grep -E "^(page replay|speed|sglang)" | tee "$plog"
"$B/hisparse" replay --trace /tmp/t1 --page-size 16 --buffer-sizes 16384,32768 --policy sglang-lru --quiet --no-plots \
  --threads 8 --backend cuda --out /tmp/p_cuda 2>&1 | grep -E "^(page replay|speed|sglang|cuda)" | tee -a "$plog"
cmp /tmp/p_cpu/replay.json /tmp/p_cuda/replay.json && echo "page replay.json identical (cpu vs cuda)" | tee -a "$plog"
cmp /tmp/p_cpu/replay.csv /tmp/p_cuda/replay.csv && echo "page replay.csv identical (cpu vs cuda)" | tee -a "$plog"
