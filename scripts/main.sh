#!/usr/bin/env bash
# @brief The README's main job: install, build, then on the bundled DeepSeek-V3.2 8×H200 node: the memory budget →
# replay of the bundled trace (miss curves, and the advice for the trace's own context lengths) → capacity plan of
# the node as shipped → `hisparse advise` at 16K/32K/64K/128K, ending with the SGLang flags to launch with.
# Reports land in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Only the CLI (the one target the main job runs): the tests and benchmarks are test.sh's, and compiling them first
# made a fresh clone wait about 15 minutes on 2 cores before its first report (issue 40).
./scripts/build.sh release hisparse
hisparse=./build/release/apps/hisparse
scenario=${HISPARSE_SCENARIO:-dsv32-8xh200-1tb}
trace=${HISPARSE_TRACE:-traces/bundled/default.hstrace}
out=${HISPARSE_OUT:-out}
mkdir -p "$out"

echo "== 1/4 scenario budget: hisparse info --scenario $scenario" >&2
"$hisparse" info --scenario "$scenario"

echo "== 2/4 replay: miss curves of the trace, and the advice for its own context lengths on $scenario" >&2
"$hisparse" replay --trace "$trace" --buffer-sizes 2048,3072,4096,6144,8192,12288,16384 \
  --policy sglang-lru,belady,fifo,lfu --scenario "$scenario" --out "$out/replay"

echo "== 3/4 capacity plan of $scenario as shipped (full KV vs HiSparse, limits, sweeps)" >&2
"$hisparse" plan --scenario "$scenario" --out "$out/plan"

echo "== 4/4 advice: how to launch SGLang on $scenario at 16K, 32K, 64K and 128K tokens" >&2
"$hisparse" advise --scenario "$scenario" --seq-lens 16K,32K,64K,128K --out "$out/advise"
echo "main.sh: reports in $out/replay (replay.json, replay.csv, PNGs), $out/plan (plan.md, plan.html, plan.json, PNGs)" \
     "and $out/advise (advise.md, advise.html, advise.json, PNGs)" >&2
