#!/usr/bin/env bash
# @brief Builds the fuzz flavour (clang, -DHISPARSE_FUZZ=ON) and runs each fuzzer (the trace readers, and replay end to end) for a bounded time.
# Env: HISPARSE_FUZZ_TMP (scratch for inputs, default /dev/shm), HISPARSE_FUZZ_SECONDS (per target, default 60), HISPARSE_FUZZ_BUILD_DIR (default build/fuzz),
#      HISPARSE_FUZZ_NO_BUILD=1 (use an existing build), HISPARSE_FUZZ_TARGETS (default "native npy jsonl replay").
# Prints executions and crashes per target; exits non-zero if any target crashed, leaked, hung or ran out of memory.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HISPARSE_FUZZ_SECONDS:-60}
build=${HISPARSE_FUZZ_BUILD_DIR:-build/fuzz}
targets=${HISPARSE_FUZZ_TARGETS:-native npy jsonl replay}
if [ -z "${HISPARSE_FUZZ_NO_BUILD:-}" ]; then
  ./scripts/build.sh fuzz fuzz_native fuzz_npy fuzz_jsonl fuzz_replay
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hisparse_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The targets write each input to a scratch file; on a RAM disk that is ~10x faster than on /tmp.
fuzz_tmp=${HISPARSE_FUZZ_TMP:-$([ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
failed=0
printf '%-8s %12s %8s %s\n' target execs crashes seconds
for t in $targets; do
  bin="$build/tests/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: $bin missing (build with scripts/build.sh fuzz)" >&2; exit 2; }
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/$t/corpus/"
  rc=0
  # Seeds are copied so the committed corpus never changes; the artifacts directory catches crash inputs.
  TMPDIR="$fuzz_tmp" "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$t/artifacts/" "$work/$t/corpus" >"$work/$t/log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/$t/log" | tail -1)
  crashes=$(find "$work/$t/artifacts" -type f | wc -l)
  printf '%-8s %12s %8s %s\n' "$t" "${execs:-?}" "$crashes" "$seconds"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    mkdir -p "$build/fuzz_findings/$t"
    cp -r "$work/$t/artifacts/." "$build/fuzz_findings/$t/" 2>/dev/null || true
    echo "fuzz.sh: fuzz_$t failed (exit $rc); inputs kept in $build/fuzz_findings/$t; log tail:" >&2
    tail -40 "$work/$t/log" >&2
  fi
done
exit "$failed"
