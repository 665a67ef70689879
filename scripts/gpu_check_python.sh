#!/usr/bin/env bash
# @brief hisparse.validate on a GPU: the Python package against the CUDA kernels, next to the CLI.
#
# The GPU machine has CUDA, Python 3.12 with nanobind, scikit-build-core, numpy, pandas and pytest, but not the
# project's -dev packages (yaml-cpp, fmt, Boost, zstd) and nothing can be fetched there. So the work is split:
#
#   here:             scripts/gpu_bundle.sh                 # the CLI with CUDA -> build/gpu_bundle (compared against)
#                     scripts/gpu_check_python.sh bundle    # the module's C++ side with CUDA -> build/python_gpu_bundle
#   on the GPU:       scripts/gpu_check_python.sh run       # (carry build/gpu_bundle and build/python_gpu_bundle)
#
# `bundle` builds libhisparse_python_core.so (every layer, the kernels for sm_90a, the CLI's plan/advise/validate
# code: python/bindings/CMakeLists.txt, HISPARSE_PYTHON_SHARED_CORE) and copies it with the shared libraries the GPU
# image lacks. `run` compiles only python/bindings/module.cpp there against that Python (scikit-build-core with
# cmake.source-dir=python/bindings), installs the package into a scratch directory, then runs the whole pytest suite
# (the GPU test in tests/python/test_validate.py runs only where a GPU is) and a longer hisparse.validate; logs and
# the summary go to $OUT (default out/gpu_check_python).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
bundle=$root/build/python_gpu_bundle
cli_bundle=$root/build/gpu_bundle

case "$mode" in
bundle)
  set -e
  build=${HISPARSE_BUILD_DIR:-$root/build/python-gpu}
  python=${PYTHON:-$root/build/python-venv/bin/python}
  [ -x "$python" ] || { echo "gpu_check_python: $python missing: run scripts/test_python.sh first" >&2; exit 1; }
  # HISPARSE_PYTHON_CUDA=OFF makes a bundle without kernels: a rehearsal of `run` on a machine without a GPU.
  cmake -S "$root" -B "$build" -DHISPARSE_PYTHON=ON -DHISPARSE_PYTHON_SHARED_CORE=ON \
    -DHISPARSE_CUDA="${HISPARSE_PYTHON_CUDA:-ON}" -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$python" >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target hisparse_python_core
  rm -rf "$bundle"
  mkdir -p "$bundle/lib"
  cp "$build/python/bindings/libhisparse_python_core.so" "$bundle/"
  # What the GPU image may lack (as scripts/gpu_bundle.sh): not libc, not the driver, not libstdc++ (newer there).
  for lib in $(ldd "$bundle/libhisparse_python_core.so" | awk '/=> \//{print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" "$bundle/lib/" ;;
    esac
  done
  du -sh "$bundle"
  echo "gpu_check_python: bundle ready; on the GPU machine (carry build/python_gpu_bundle and build/gpu_bundle):"
  echo "  scripts/gpu_check_python.sh run"
  ;;
run)
  out=${OUT:-$root/out/gpu_check_python}
  mkdir -p "$out"
  log=$out/gpu_check_python.log
  : >"$log"
  [ -f "$bundle/libhisparse_python_core.so" ] || { echo "gpu_check_python: no $bundle (run 'bundle' here first)" >&2; exit 1; }
  export HISPARSE_CLI=${HISPARSE_CLI:-$cli_bundle/bin/hisparse}  # the CLI built from the same tree
  [ -x "$HISPARSE_CLI" ] || { echo "gpu_check_python: no $HISPARSE_CLI (scripts/gpu_bundle.sh)" >&2; exit 1; }
  export LD_LIBRARY_PATH="$bundle/lib:$cli_bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  site=$(mktemp -d)
  trap 'rm -rf "$site"' EXIT
  python=${PYTHON:-python3}
  echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" | tee -a "$log"
  t0=$SECONDS
  # No index: everything the build needs (scikit-build-core, nanobind, cmake, ninja) is installed in that image.
  "$python" -m pip install -q --no-build-isolation --no-deps --no-index --target "$site" \
    --config-settings=cmake.source-dir=python/bindings \
    --config-settings=cmake.define.HISPARSE_PYTHON_CORE_LIB="$bundle/libhisparse_python_core.so" \
    --config-settings=build-dir="$site/.build" "$root" >>"$log" 2>&1
  rc_install=$?
  echo "install: rc=$rc_install in $((SECONDS - t0)) s" | tee -a "$log"
  export PYTHONPATH=$site
  cd "$root"
  "$python" -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee -a "$log" | tail -n 15
  rc_tests=${PIPESTATUS[0]}
  cases=${CASES:-2000}
  "$python" - "$cases" <<'PY' 2>&1 | tee -a "$log" | tail -n 20
import json, sys, hisparse
print("cuda_status:", hisparse.cuda_status())
s = hisparse.validate("cuda", cases=int(sys.argv[1]), seed=1, only=["swap-in", "gather", "backup", "topk"])
print(json.dumps({k: v for k, v in s.items() if k != "operations"}))
for r in s["operations"]:
    print(f"{r['operation']:<12} {r['variant']:<12} {r['cases']:>6} cases {r['mismatched_cases']:>3} mismatches")
sys.exit(0 if s["passed"] else 1)
PY
  rc_validate=${PIPESTATUS[0]}
  printf '%-24s %s\n' "module install" "rc=$rc_install" "pytest (GPU test included)" "rc=$rc_tests" \
    "hisparse.validate cuda" "rc=$rc_validate ($cases cases per operation)" | tee -a "$log"
  [ $rc_install -eq 0 ] && [ $rc_tests -eq 0 ] && [ $rc_validate -eq 0 ]
  ;;
*)
  echo "usage: scripts/gpu_check_python.sh bundle   (here: build the module's C++ side with CUDA)" >&2
  echo "       scripts/gpu_check_python.sh run      (on the GPU machine)" >&2
  exit 2
  ;;
esac
