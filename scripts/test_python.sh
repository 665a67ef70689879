#!/usr/bin/env bash
# @brief Builds and installs the Python package `hisparse` into build/python-venv and runs its tests (tests/python,
# pytest) against the release CLI (build/release/apps/hisparse, or $HISPARSE_CLI). Idempotent and quick when nothing
# changed: the venv, its build requirements and the CMake tree (build/python-<wheel tag>) are kept, and the package
# is rebuilt only when a file it is built from is newer than the last install.
#   HISPARSE_PYTHON_CUDA=OFF|AUTO|ON (default OFF: the tests need no GPU, and the kernels take long to compile)
#   JOBS=N parallel compile jobs (default 2); extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=build/python-venv
stamp=build/python-venv/hisparse-installed.stamp
cuda=${HISPARSE_PYTHON_CUDA:-OFF}

if [ ! -x "$venv/bin/python" ]; then
  echo "test_python: creating $venv (Debian's python3, with its numpy, pandas and pytest)" >&2
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c 'import scikit_build_core, nanobind' 2>/dev/null; then
  echo "test_python: installing the build requirements (scikit-build-core, nanobind) into $venv" >&2
  "$venv/bin/pip" install -q "scikit-build-core>=0.10" "nanobind>=2.0"
fi

# Everything the wheel is built from; a newer file (or another CUDA setting) means a rebuild.
sources=(CMakeLists.txt pyproject.toml core cpu_ref cuda traces sim validate python)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "cuda=$cuda" ] ||
   [ -n "$(find "${sources[@]}" -newer "$stamp" -type f -print -quit)" ] ||
   ! "$venv/bin/python" -c 'import hisparse._core' 2>/dev/null; then
  echo "test_python: building and installing the package (CUDA $cuda)" >&2
  t0=$SECONDS
  touch "$stamp.start"  # the stamp gets this time: a file edited during the build is newer next time
  # The objects the release build compiled with the same flags come from ccache (scripts/build.sh says why).
  # The same compiler name as the release build's (CMake's default c++; pip would otherwise pass Python's own
  # x86_64-linux-gnu-g++), or ccache counts them as different compilers: 27 s instead of 169 s on 2 cores.
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=$root CMAKE_CXX_COMPILER_LAUNCHER=ccache CXX=${CXX:-$(command -v c++ || echo g++)}
  fi
  # A persistent CMake tree here (pip install . alone builds in a fresh temporary directory): the next install
  # recompiles only what changed, and at build/<name> its relative paths match build/release's for ccache.
  CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "$venv/bin/pip" install -q --no-build-isolation --no-deps \
    --config-settings=build-dir="build/python-{wheel_tag}" --config-settings=cmake.define.HISPARSE_CUDA="$cuda" .
  echo "cuda=$cuda" >"$stamp.new"
  touch -r "$stamp.start" "$stamp.new"
  mv "$stamp.new" "$stamp"
  rm -f "$stamp.start"
  echo "test_python: installed in $((SECONDS - t0)) s" >&2
else
  echo "test_python: package up to date (CUDA $cuda)" >&2
fi

export HISPARSE_CLI=${HISPARSE_CLI:-$root/build/release/apps/hisparse}
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python "$@"
