#!/usr/bin/env bash
# @brief The Python package as a user gets it (issue 28): in a fresh venv, `pip install -v "<copy>[dataframes]"` (the
# README's install command) from a copy of this clone, delete the copy and the build tree, then run every ```python
# block of README.md verbatim, in order, in one interpreter, from an empty directory. Fails if the install wrote into
# the copy (the build must happen outside the source tree), if the examples raise, or if a scenario was read from
# anywhere but the installed package's data.
#   JOBS=N sets CMAKE_BUILD_PARALLEL_LEVEL (default: Ninja's own, about one job per core plus one or two).
# Needs the network, or pip's cache, for the build requirements and numpy/pandas (the venv shares nothing with the
# system's packages). ccache, where installed, makes a second run quick: the copy and the build tree keep the same
# relative places inside the temporary directory, which is ccache's base directory.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hisparse-installed.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
src=$tmp/hisparse
mkdir -p "$src" "$tmp/run"

# The clone as someone else would have it: tracked and untracked-but-not-ignored files (uncommitted edits included),
# no build trees.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
else
  tar --exclude=./build --exclude=./out -cf - . | tar -xf - -C "$src"
fi
touch "$tmp/copied.stamp"
chmod -R a-w "$src"  # read-only, as a checkout owned by someone else (root ignores it: the find below checks)
echo "test_python_installed: copied the clone to $src ($((SECONDS - t0)) s)" >&2

/usr/bin/python3 -m venv "$tmp/venv"
py=$tmp/venv/bin/python
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$tmp CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache \
    CXX=${CXX:-$(command -v c++ || echo g++)}
fi
[ -n "${JOBS:-}" ] && export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
t1=$SECONDS
# Out of the tree as by default; a fixed place in $tmp only so that ccache's relative paths repeat between runs.
# pip -v streams the build's output; the Ninja progress lines ([done/total]) are shown, the rest kept in pip.log.
if ! SKBUILD_BUILD_DIR=$tmp/build "$py" -m pip install -v --disable-pip-version-check "$src[dataframes]" \
    >"$tmp/pip.log" 2>&1 < /dev/null; then
  tail -n 60 "$tmp/pip.log" >&2
  echo "test_python_installed: pip install failed (log above)" >&2
  exit 1
fi
grep -E '^ *\[[0-9]+/[0-9]+\] ' "$tmp/pip.log" | awk 'NR % 25 == 1 {print "  " $0} {last = $0} END {print "  " last}' >&2
# The line test.sh quotes at its end: the time, and whether ccache could serve objects of an earlier build.
cache="ccache $(if [ -n "${CCACHE_DISABLE:-}" ]; then echo disabled; elif command -v ccache >/dev/null; then echo on; else echo absent; fi)"
echo "test_python_installed: pip install took $((SECONDS - t1)) s ($(nproc) cores, $cache, CUDA off)" >&2

written=$(find "$src" -newer "$tmp/copied.stamp" -print -quit)
if [ -n "$written" ]; then
  echo "test_python_installed: the install wrote into the source tree: $written" >&2
  exit 1
fi
chmod -R u+w "$src"
rm -rf "$src" "$tmp/build"

# README.md's ```python blocks, verbatim, then checks that the scenario came from the package's data.
"$py" - README.md >"$tmp/run/readme_examples.py" <<'EOF'
import re, sys
blocks = re.findall(r"^```python\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
assert blocks, "README.md has no ```python block"
print("".join(blocks))
EOF
cat >>"$tmp/run/readme_examples.py" <<'EOF'
import json, os, re
site = os.path.dirname(hisparse.__file__)
plan = hisparse.plan("dsv32-8xh200-1tb", seq_lens=[16384])
read = re.findall(r'"(/[^"]*/scenarios/[^"]*)"', plan.json_text)  # the deployment, cost model, calibration
assert read and all(p.startswith(site + "/data/scenarios/") for p in read), f"read outside {site}: {read}"
print(f"hisparse {hisparse.__version__} from {site}: the README's examples ran; files read: {sorted(set(read))}")
EOF
(cd "$tmp/run" && env -u HISPARSE_SCENARIO_DIR -u HISPARSE_DATA_DIR -u HISPARSE_SCRIPTS_DIR -u PYTHONPATH \
   "$py" readme_examples.py)
echo "test_python_installed: passed in $((SECONDS - t0)) s" >&2
