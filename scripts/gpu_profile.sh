#!/usr/bin/env bash
# @brief Per-kernel Nsight Compute summaries (duration, throughput, stall reasons) of the benchmarked kernels, for
# finding where a missed speed target loses its time. On the GPU machine, after scripts/gpu_bundle.sh:
#   scripts/gpu_profile.sh build/gpu_bundle [op...]     (ops: swap-in gather backup topk attention; default all)
# Writes $OUT/profile_<op>.txt.
set -uo pipefail
bundle=$(cd "${1:?bundle dir}" && pwd); shift
out=${OUT:-out/profile}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$bundle/bin/hisparse" --help >/dev/null 2>&1 || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$bundle/lib_std"
cli=$bundle/bin/hisparse
ops=("$@")
[ ${#ops[@]} -eq 0 ] && ops=(swap-in gather backup topk attention)
sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
          --section MemoryWorkloadAnalysis)
for op in "${ops[@]}"; do
  case "$op" in
    swap-in) filter=(-k regex:swap_in -s 8 -c 3) ;;
    gather) filter=(-k regex:gather -s 2 -c 3) ;;
    backup) filter=(-k regex:backup -s 2 -c 3) ;;
    topk) filter=(-c 40) ;;
    attention) filter=(-k regex:sparse_attention -s 6 -c 4) ;;
    *) echo "gpu_profile: unknown op $op" >&2; exit 2 ;;
  esac
  echo "=== profile $op"
  timeout 240 ncu "${filter[@]}" "${sections[@]}" "$cli" bench "$op" --iters 3 $([ "$op" = swap-in ] && echo --no-sweep) >"$out/profile_$op.txt" 2>&1
  echo "rc=$? $(grep -c 'Duration' "$out/profile_$op.txt") kernels"
  grep -E '^  [a-z_].*\(|Duration' "$out/profile_$op.txt" | head -40
done
