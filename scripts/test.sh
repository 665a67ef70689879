#!/usr/bin/env bash
# @brief The README's test command: install, build, run every test (release, the Python package, then ASan+UBSan),
# then the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time, so the 30-minute budget on CI's 2 cores can be checked phase by phase.
phase_start=$SECONDS
phase() {
  echo "   (took $((SECONDS - phase_start)) s; $SECONDS s in all)" >&2
  phase_start=$SECONDS
}
./scripts/setup.sh
phase
echo "== documentation links" >&2
/usr/bin/python3 scripts/check_links.py
echo "== release build + tests" >&2
./scripts/build.sh release
phase
ctest --test-dir build/release --output-on-failure -j2
phase
# After the release build: the package's tests compare its numbers with that build's CLI.
echo "== Python package (pip install . into build/python-venv) + pytest" >&2
./scripts/test_python.sh
phase
echo "== Python package as a user installs it (fresh venv, copy of the clone deleted after pip install, README examples)" >&2
# Its output is kept to quote the pip install time at the end (the README quotes it).
./scripts/test_python_installed.sh 2>&1 | tee build/test_python_installed.log >&2
pip_install=$(sed -n 's/^test_python_installed: \(pip install took .*\)$/\1/p' build/test_python_installed.log)
phase
echo "== ASan + UBSan build + tests (not the whole-output reruns: release ran them)" >&2
./scripts/build.sh asan
phase
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j2 -LE whole_outputs
phase
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzzing the trace readers and replay (4 targets x 4 min, two side by side, >= 1 M executions each, about twice that in practice)" >&2
  ./scripts/fuzz.sh
  phase
fi
echo "test.sh: Python package into a fresh venv: ${pip_install:-pip install time not found in build/test_python_installed.log}" >&2
echo "test.sh: all tests passed" >&2
