#!/usr/bin/env bash
# @brief Device run for issue 8: build (CUDA), GPU tests, `hisparse validate` of attention/indexer (bf16 and fp8
# keys)/topk over CASES random cases each, the benchmarks, the PyTorch baseline in the same run, and
# compute-sanitizer memcheck and racecheck over SAN_CASES cases of each operation; logs under $OUT (or ./out).
set -uo pipefail
OUT=${OUT:-$PWD/out}
CASES=${CASES:-10000}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
# PREBUILT=DIR (bin/, lib/, lib_std/ as scripts/gpu_bundle.sh packs them) skips the build on the device.
if [ -n "${PREBUILT:-}" ]; then
  BIN=$PREBUILT/bin
  export LD_LIBRARY_PATH="$PREBUILT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$BIN/hisparse" --help >/dev/null 2>&1 || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PREBUILT/lib_std"
else
  B=build/gpu-attention
  cmake -S . -B $B -DHISPARSE_CUDA=ON -DHISPARSE_BENCH=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 \
    || { tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build $B -j16 --target hisparse test_cuda > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
  BIN=$B/bin; mkdir -p $BIN; cp $B/apps/hisparse $B/tests/test_cuda $BIN/
fi
echo "== GPU tests"; $BIN/test_cuda --test-case='*attention*,*indexer*,*topk*' 2>&1 | tail -5 | tee "$OUT/test_cuda.log"
echo "== bench"; $BIN/hisparse bench attention --iters 20 2>&1 | tee "$OUT/bench_attention.txt"
$BIN/hisparse bench topk --iters 50 2>&1 | tee "$OUT/bench_topk.txt"
PYTHONUNBUFFERED=1 python3 scripts/bench_attention_torch.py --iters 20 2>&1 | tee "$OUT/bench_torch.txt"
python3 - "$OUT/bench_attention.txt" "$OUT/bench_torch.txt" <<'PY' | tee "$OUT/ratio.txt"
import re, sys
ours = {}
for line in open(sys.argv[1]):
    m = re.match(r"attention\s+batch (\d+) heads (\d+) K (\d+)\s+(\w+)\s+([\d.]+)", line)
    if m: ours[(m[1], m[2], m[3], m[4])] = float(m[5])
for line in open(sys.argv[2]):
    m = re.match(r"torch_compose batch (\d+) heads (\d+) K (\d+) median_us ([\d.]+)", line)
    if not m: continue
    key = (m[1], m[2], m[3]); t = float(m[4])
    for kern in ("fast", "exact"):
        if key + (kern,) in ours:
            r = t / ours[key + (kern,)]
            tgt = "  (target >= 3x)" if kern == "fast" and key == ("64", "128", "2048") else ""
            print(f"batch {key[0]} heads {key[1]} K {key[2]}: torch {t:.1f} us / {kern} {ours[key + (kern,)]:.1f} us = {r:.2f}x{tgt}")
PY
echo "== validate ($CASES cases each)"
timeout ${VALIDATE_TIMEOUT:-400} $BIN/hisparse validate --backend cuda --only attention indexer indexer-fp8 topk --cases "$CASES" 2>&1 | tee "$OUT/validate.txt" | tail -25
echo "== compute-sanitizer (${SAN_CASES:=8} cases per operation)"
if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    timeout ${SANITIZER_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
      $BIN/hisparse validate --backend cuda --only attention indexer indexer-fp8 topk --cases "$SAN_CASES" \
      > "$OUT/sanitizer_$tool.txt" 2>&1
    rc=$?
    echo "$tool: exit $rc (0 = no errors; 99 = errors found; 124 = timed out)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|mismatched|Error" "$OUT/sanitizer_$tool.txt" | head -8
  done
else
  echo "compute-sanitizer not found on this machine"
fi
