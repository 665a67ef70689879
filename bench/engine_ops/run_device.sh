#!/usr/bin/env bash
# @brief One lent-GPU call of the engine-op collector: build (or unpack a carried build), time the DeepGEMM and SGLang
# groups while FlashMLA compiles, then FlashMLA and the engine-kernel record; pack the build for the next GPU.
# Everything lands in $OUT. QUICK=1 runs the smoke grid. Carry .engine/engine_src.tar.xz (and
# .engine/engine_build.tar.xz from an earlier call, if any).
#   run:  bash bench/engine_ops/run_device.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
root=$(pwd); O=${OUT:?}; here=$root/bench/engine_ops
export DG_JIT_CACHE_DIR=$root/.engine/build/dg_cache
mkdir -p "$DG_JIT_CACHE_DIR"
q=${QUICK:+--quick}
B1=${BUDGET1:-250}; B2=${BUDGET2:-120}
t0=$(date +%s)
if [[ -f .engine/engine_build.tar.xz ]]; then
  bash "$here/build_engine.sh" unpack >"$O/build.log" 2>&1 || echo "unpack failed"
  fm_pid=
  if ! ls .engine/src/FlashMLA/flash_mla/*.so >/dev/null 2>&1; then
    (bash "$here/build_engine.sh" flashmla >"$O/build_flashmla.log" 2>&1; echo "flashmla rc=$?" >>"$O/build_flashmla.log") &
    fm_pid=$!
  fi
else
  (bash "$here/build_engine.sh" flashmla >"$O/build_flashmla.log" 2>&1; echo "flashmla rc=$?" >>"$O/build_flashmla.log") &
  fm_pid=$!
  timeout 240 bash "$here/build_engine.sh" deepgemm >"$O/build_deepgemm.log" 2>&1; echo "deepgemm build rc=$?"
  tail -3 "$O/build_deepgemm.log"
fi
echo "build phase 1: $(( $(date +%s) - t0 )) s"
# One process per group: a crash inside a library (a segfault takes the interpreter) loses only that group.
for g in ${GROUPS1:-smoke,hisparse,indexer,dense,moe}; do
  for gg in ${g//,/ }; do
    b=BUDGET_$gg; b=${!b:-$B1}
    timeout $(( b + 60 )) python3 -X faulthandler "$here/collect_gpu.py" --out "$O" --append --groups "$gg" \
      --budget-s "$b" $q >>"$O/collect1.out" 2>&1; echo "collect $gg rc=$? ($b s budget)"
  done
done
grep -E "group |FAILED|Fatal|File \"" "$O/collect1.out" | cut -c1-300 | tail -40
if [[ -n $fm_pid ]]; then wait "$fm_pid"; tail -3 "$O/build_flashmla.log"; fi
echo "flashmla ready: $(( $(date +%s) - t0 )) s"
for gg in ${GROUPS2-attention checks}; do
  b=BUDGET_$gg; b=${!b:-$B2}
  timeout $(( b + 60 )) python3 -X faulthandler "$here/collect_gpu.py" --out "$O" --append --groups "$gg" \
    --budget-s "$b" $q >>"$O/collect2.out" 2>&1; echo "collect $gg rc=$? ($b s budget)"
done
grep -E "group |FAILED|engine check|Fatal|File \"" "$O/collect2.out" | cut -c1-300 | tail -40
bash "$here/build_engine.sh" pack 2>&1 | tail -2
wc -l "$O/engine_ops.csv"; ls -la "$O"
echo "total: $(( $(date +%s) - t0 )) s"
