#!/usr/bin/env bash
# @brief Builds `hisparse` and `test_cuda` for sm_90 here and packs them with their non-system shared libraries
# into build/gpu_bundle, for a GPU machine that has the driver but not the project's -dev packages.
# Then, on the GPU machine:  scripts/gpu_check.sh --prebuilt build/gpu_bundle
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HISPARSE_BUILD_DIR:-$root/build/cuda}
bundle=$root/build/gpu_bundle
cmake -S "$root" -B "$build" -DHISPARSE_CUDA=ON -DHISPARSE_BENCH=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target hisparse test_cuda
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/lib_std"
cp "$build/apps/hisparse" "$build/tests/test_cuda" "$bundle/bin/"
# Libraries the target image may lack; libstdc++/libgcc go to lib_std, used only if the system's are too old.
for lib in $(ldd "$bundle/bin/hisparse" "$bundle/bin/test_cuda" | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*) ;;
    # cuBLAS(Lt) is ~0.5 GB, beyond what a call carries; the GPU machine's CUDA toolkit has the same major version
    # (gpu_check.sh adds its lib64 to the search path).
    libcublas*.so*) ;;
    libstdc++.so*|libgcc_s.so*) cp -L "$lib" "$bundle/lib_std/" ;;
    *) cp -L "$lib" "$bundle/lib/" ;;
  esac
done
du -sh "$bundle"
