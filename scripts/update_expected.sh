#!/usr/bin/env bash
# @brief The one command to run when a change to a quoted output is intended: regenerates every expected output of
# tests/expected/manifest.tsv with the built binary and rewrites the README/docs excerpts from them
# (scripts/expected_outputs.py; CTest 'docs/expected' checks the same). Prose quotes it cannot rewrite are listed.
# usage: scripts/update_expected.sh [HISPARSE_BIN [--only ID,...]]  (default binary: build/release/apps/hisparse, else
# build/cpu/apps/hisparse)
set -euo pipefail
bin=${1:-}
# A path given relative to the caller's folder stays valid after the cd below.
if [ -n "$bin" ] && [ -e "$bin" ]; then bin=$(realpath "$bin"); fi
cd "$(dirname "$0")/.."
if [ -z "$bin" ]; then
  for b in build/release/apps/hisparse build/cpu/apps/hisparse; do
    if [ -x "$b" ]; then bin=$b; break; fi
  done
fi
[ -n "$bin" ] || { echo "update_expected.sh: no built hisparse; build one (scripts/build.sh release) or pass its path" >&2; exit 2; }
shift || true
exec /usr/bin/python3 scripts/expected_outputs.py --update "$bin" "$@"
