#!/usr/bin/env bash
# @brief The README's main job: install, build, then replay the bundled trace → recommended device_buffer_size →
# capacity plan of the bundled DeepSeek-V3.2 8×H200 node with that buffer size. Reports land in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release
hisparse=./build/release/apps/hisparse
scenario=${HISPARSE_SCENARIO:-dsv32-8xh200-1tb}
trace=${HISPARSE_TRACE:-traces/bundled/default.hstrace}
out=${HISPARSE_OUT:-out}
mkdir -p "$out"

echo "== 1/3 scenario budget: hisparse info --scenario $scenario" >&2
"$hisparse" info --scenario "$scenario"

echo "== 2/3 replay: which device_buffer_size does this trace need?" >&2
"$hisparse" replay --trace "$trace" --buffer-sizes 2048,3072,4096,6144,8192 \
  --policy sglang-lru,belady,fifo,lfu --scenario "$scenario" --out "$out/replay"
buffer=$(/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['recommendation']; print(r['buffer_size'] or '')" \
  "$out/replay/replay.json")
if [ -z "$buffer" ]; then
  echo "main.sh: no replayed buffer size fits the PCIe budget; planning with the scenario's own device_buffer_size" >&2
  buffer_args=()
else
  echo "main.sh: recommended device_buffer_size = $buffer" >&2
  buffer_args=(--device-buffer-size "$buffer")
fi

echo "== 3/3 capacity plan with that buffer size" >&2
"$hisparse" plan --scenario "$scenario" --trace "$trace" "${buffer_args[@]}" --out "$out/plan"
echo "main.sh: reports in $out/replay (replay.json, replay.csv, PNGs) and $out/plan (plan.md, plan.html, plan.json, PNGs)" >&2
