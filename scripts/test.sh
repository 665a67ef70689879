#!/usr/bin/env bash
# @brief The README's test command: install, build, run every test (release, the Python package, then ASan+UBSan),
# then the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "== documentation links" >&2
/usr/bin/python3 scripts/check_links.py
echo "== release build + tests" >&2
./scripts/build.sh release
ctest --test-dir build/release --output-on-failure -j2
# After the release build: the package's tests compare its numbers with that build's CLI.
echo "== Python package (pip install . into build/python-venv) + pytest" >&2
./scripts/test_python.sh
echo "== ASan + UBSan build + tests" >&2
./scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j2
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzzing the trace readers and replay (4 targets x 2 min, >= 1 M executions each)" >&2
  ./scripts/fuzz.sh
fi
echo "test.sh: all tests passed" >&2
