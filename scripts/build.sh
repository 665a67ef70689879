#!/usr/bin/env bash
# @brief Configures and builds one flavour into build/<flavour>: release (default), asan, cpu, fuzz [targets...].
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
shift || true
# Any further arguments name targets to build (default: everything).
targets=()
for t in "$@"; do targets+=(--target "$t"); done
jobs=${HISPARSE_JOBS:-2}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  cpu)     args=(-DCMAKE_BUILD_TYPE=Release -DHISPARSE_CUDA=OFF) ;;
  # Sanitizers run the whole suite on the CPU paths; CUDA and benchmarks are left out of this flavour.
  # -O1 -g1: line tables are all a sanitizer report needs, and they compile in a fraction of full debug info's time.
  asan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 -DHISPARSE_SANITIZE=ON -DHISPARSE_CUDA=OFF -DHISPARSE_BENCH=OFF) ;;
  fuzz)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHISPARSE_FUZZ=ON -DHISPARSE_CUDA=OFF -DHISPARSE_BENCH=OFF
                 -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++) ;;
  *) echo "build.sh: unknown flavour '$flavour' (expected release, cpu, asan or fuzz)" >&2; exit 2 ;;
esac
# ccache, where installed (setup.sh installs it): paths are hashed relative to the clone, so build trees of the same
# depth (build/release, the Python package's build/python-<tag>) share every object compiled with the same flags.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "build/$flavour" "${args[@]}" >/dev/null
cmake --build "build/$flavour" -j "$jobs" "${targets[@]}"
