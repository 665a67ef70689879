#!/usr/bin/env bash
# @brief hisparse.validate on a GPU: the Python package against the CUDA kernels, next to the CLI.
#
# The GPU machine has CUDA, Python 3.12 with nanobind, scikit-build-core, numpy, pandas and pytest, but not the
# project's -dev packages (yaml-cpp, fmt, Boost, zstd) and nothing can be fetched there. So the work is split:
#
#   here:             scripts/gpu_bundle.sh                 # the CLI with CUDA -> build/gpu_bundle (compared against)
#                     scripts/gpu_check_python.sh bundle    # the module's C++ side with CUDA -> build/python_gpu_bundle
#                     scripts/gpu_check_python.sh wheel     # `pip wheel .` with CUDA for Python 3.12 -> build/python_gpu_wheel
#   on the GPU:       scripts/gpu_check_python.sh run       # (carry build/gpu_bundle and the one(s) built above)
#
# Two ways to the same package, each checked where its directory exists:
# - `bundle` builds libhisparse_python_core.so (every layer, the kernels for sm_90a, the library's plan/advise/validate
#   code: python/bindings/CMakeLists.txt, HISPARSE_PYTHON_SHARED_CORE) and copies it with the shared libraries the GPU
#   image lacks; `run` compiles only python/bindings/module.cpp there against that Python (scikit-build-core with
#   cmake.source-dir=python/bindings).
# - `wheel` is the plain `pip wheel .` a user runs, with -DHISPARSE_CUDA=ON, by a Python of the GPU image's version
#   ($PYTHON, default build/py312-venv/bin/python: pyenv's 3.12 with scikit-build-core and nanobind), plus the shared
#   libraries the image lacks; `run` installs the wheel as it is.
# For each, `run` installs into a scratch directory, then runs the whole pytest suite (the GPU test in
# tests/python/test_validate.py runs only where a GPU is) and a longer hisparse.validate; logs and the summary go to
# $OUT (default out/gpu_check_python).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
bundle=$root/build/python_gpu_bundle
wheels=$root/build/python_gpu_wheel
cli_bundle=$root/build/gpu_bundle

# Copies what `ldd $1` resolves into $2, except what every image has: libc, the driver, libstdc++ (newer there),
# cuBLAS(Lt), ~0.5 GB, which the GPU machine's CUDA toolkit of the same major version provides, and what the CLI's
# bundle holds already (`run` puts build/gpu_bundle/lib on the search path too): a call carries 64 MiB at most.
copy_needed_libs() {
  for lib in $(ldd "$1" | awk '/=> \//{print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*|libstdc++.so*|libgcc_s.so*) ;;
      libcublas*.so*) ;;
      *) cmp -s "$lib" "$cli_bundle/lib/$(basename "$lib")" || cp -L "$lib" "$2/" ;;
    esac
  done
}

# pytest (the GPU test included) and a longer hisparse.validate against the package installed in $2; $1 names it.
check_installed() {
  local label=$1 site=$2 rc_tests rc_validate
  echo "== $label" | tee -a "$log"
  (cd "$root" && PYTHONPATH=$site "$python" -m pytest -q -p no:cacheprovider -rs tests/python) 2>&1 | tee -a "$log" | tail -n 15
  rc_tests=${PIPESTATUS[0]}
  PYTHONPATH=$site "$python" - "$cases" <<'PY' 2>&1 | tee -a "$log" | tail -n 20
import json, sys, hisparse
print("module:", hisparse.__file__)
print("cuda_status:", hisparse.cuda_status())
s = hisparse.validate("cuda", cases=int(sys.argv[1]), seed=1, only=["swap-in", "gather", "backup", "topk"])
print(json.dumps({k: v for k, v in s.items() if k != "operations"}))
for r in s["operations"]:
    print(f"{r['operation']:<12} {r['variant']:<12} {r['cases']:>6} cases {r['mismatched_cases']:>3} mismatches")
sys.exit(0 if s["passed"] else 1)
PY
  rc_validate=${PIPESTATUS[0]}
  summary+=("$label pytest (GPU test included): rc=$rc_tests" "$label hisparse.validate cuda: rc=$rc_validate ($cases cases per operation)")
  [ "$rc_tests" -eq 0 ] && [ "$rc_validate" -eq 0 ]
}

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
  copy_needed_libs "$bundle/libhisparse_python_core.so" "$bundle/lib"
  du -sh "$bundle"
  echo "gpu_check_python: bundle ready; on the GPU machine (carry build/python_gpu_bundle and build/gpu_bundle):"
  echo "  scripts/gpu_check_python.sh run"
  ;;
wheel)
  set -e
  python=${PYTHON:-$root/build/py312-venv/bin/python}
  [ -x "$python" ] || { echo "gpu_check_python: $python missing (e.g. ~/.pyenv/versions/3.12.*/bin/python -m venv" \
    "build/py312-venv && build/py312-venv/bin/pip install scikit-build-core nanobind)" >&2; exit 1; }
  rm -rf "$wheels"
  mkdir -p "$wheels/lib"
  # The user's command, with CUDA on; the build tree is kept apart from scripts/test_python.sh's (CUDA off).
  CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "$python" -m pip wheel --no-build-isolation --no-deps -w "$wheels" \
    --config-settings=cmake.define.HISPARSE_CUDA=ON --config-settings=build-dir="$root/build/python-cuda-{wheel_tag}" \
    "$root"
  unpacked=$(mktemp -d)
  "$python" -m zipfile -e "$wheels"/hisparse-*.whl "$unpacked"
  copy_needed_libs "$(ls "$unpacked"/hisparse/_core*.so)" "$wheels/lib"
  rm -rf "$unpacked"
  du -sh "$wheels"/*
  ;;
run)
  out=${OUT:-$root/out/gpu_check_python}
  mkdir -p "$out"
  log=$out/gpu_check_python.log
  : >"$log"
  [ -f "$bundle/libhisparse_python_core.so" ] || ls "$wheels"/hisparse-*.whl >/dev/null 2>&1 ||
    { echo "gpu_check_python: neither $bundle nor a wheel in $wheels (run 'bundle' or 'wheel' here first)" >&2; exit 1; }
  export HISPARSE_CLI=${HISPARSE_CLI:-$cli_bundle/bin/hisparse}  # the CLI built from the same tree
  [ -x "$HISPARSE_CLI" ] || { echo "gpu_check_python: no $HISPARSE_CLI (scripts/gpu_bundle.sh)" >&2; exit 1; }
  python=${PYTHON:-python3}
  # cuBLASLt, left out of the bundles: the machine's CUDA toolkit, or PyTorch's copy (as scripts/gpu_check.sh).
  for d in /usr/local/cuda/lib64 $("$python" -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
  done
  cases=${CASES:-2000}
  summary=()
  failed=0
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" | tee -a "$log"
  echo "python: $("$python" --version 2>&1)" | tee -a "$log"
  if [ -f "$bundle/libhisparse_python_core.so" ]; then
    site=$scratch/bundle
    t0=$SECONDS
    # No index: everything the build needs (scikit-build-core, nanobind, cmake, ninja) is installed in that image.
    LD_LIBRARY_PATH="$bundle/lib:$cli_bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$python" -m pip install -q --no-build-isolation --no-deps --no-index --target "$site" \
      --config-settings=cmake.source-dir=python/bindings \
      --config-settings=cmake.define.HISPARSE_PYTHON_CORE_LIB="$bundle/libhisparse_python_core.so" \
      --config-settings=build-dir="$site/.build" "$root" >>"$log" 2>&1
    rc=$?
    summary+=("bundle: module compiled here and installed: rc=$rc in $((SECONDS - t0)) s")
    if [ $rc -eq 0 ]; then
      LD_LIBRARY_PATH="$bundle/lib:$cli_bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        check_installed bundle "$site" || failed=1
    else
      failed=1
    fi
  fi
  if ls "$wheels"/hisparse-*.whl >/dev/null 2>&1; then
    site=$scratch/wheel
    "$python" -m pip install -q --no-deps --no-index --target "$site" "$wheels"/hisparse-*.whl >>"$log" 2>&1
    rc=$?
    summary+=("wheel: $(basename "$(ls "$wheels"/hisparse-*.whl)") installed: rc=$rc")
    if [ $rc -eq 0 ]; then
      LD_LIBRARY_PATH="$wheels/lib:$cli_bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        check_installed wheel "$site" || failed=1
    else
      failed=1
    fi
  fi
  printf '%s\n' "${summary[@]}" | tee -a "$log"
  [ $failed -eq 0 ]
  ;;
*)
  echo "usage: scripts/gpu_check_python.sh bundle   (here: build the module's C++ side with CUDA)" >&2
  echo "       scripts/gpu_check_python.sh wheel    (here: pip wheel . with CUDA for the GPU image's Python)" >&2
  echo "       scripts/gpu_check_python.sh run      (on the GPU machine)" >&2
  exit 2
  ;;
esac
