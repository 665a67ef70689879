#!/usr/bin/env bash
# @brief On a GPU machine, with the bundle of scripts/gpu_bundle.sh: times every op of GLM-5's decode layer at EP 8
# and EP 16 (`hisparse bench step --model glm-5`), the rows `hisparse bench step --fit` turns into
# scenarios/calibration/<gpu>-step-glm5-ep<N>-<date>.yaml. Writes $OUT/step_glm5_ep{8,16}.csv and their logs.
#   run:  bash scripts/gpu_bench_step_glm.sh        (carry build/gpu_bundle)
set -u
b=$(pwd)/build/gpu_bundle
out=${OUT:-out/bench_step_glm}
mkdir -p "$out"
export LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64:$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null)
"$b/bin/hisparse" --help >/dev/null 2>&1 || export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$b/lib_std
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/device.log"
for ep in 8 16; do
  timeout 280 "$b/bin/hisparse" bench step --model glm-5 --ep $ep \
      --batches 1,2,3,4,6,8,12,16,24,32,48,64,96,128,160,192,224,256 --contexts 2K,4K,8K,16K,32K,64K \
      --csv "$out/step_glm5_ep$ep.csv" >"$out/bench_step_ep$ep.log" 2>&1
  echo "ep$ep rc=$?"
  tail -3 "$out/bench_step_ep$ep.log"
done
