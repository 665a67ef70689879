#!/usr/bin/env bash
# @brief On a lent GPU: unpacks the pinned sources (.engine/engine_src.tar.xz, see stage_sources.sh) and builds the
# engine's libraries in place under .engine/src: `deepgemm` (DeepGEMM's _C extension; its kernels compile just in
# time into .engine/build/dg_cache) and `flashmla` (FlashMLA's extension, sm_90a only, as the 2026-11-25 tables were
# built). `pack` writes $OUT/engine_build.tar.xz with the built extensions and the JIT cache, so a later call on a
# fresh machine of the same architecture carries them instead of rebuilding (`unpack` restores them).
#   run:  bash bench/engine_ops/build_engine.sh deepgemm|flashmla|pack|unpack
set -euo pipefail
root=$(pwd)
eng=$root/.engine
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_CUDA_ARCH_LIST=9.0a
[[ -d $eng/src/FlashMLA ]] || tar -C "$eng" -xJf "$eng/engine_src.tar.xz"
t0=$(date +%s)
case ${1:?deepgemm|flashmla|pack|unpack} in
  deepgemm)
    cd "$eng/src/DeepGEMM"
    mkdir -p third-party deep_gemm/include
    rm -rf third-party/cutlass third-party/fmt
    ln -s "$eng/src/cutlass-f3fde58" third-party/cutlass
    ln -s "$eng/src/fmt" third-party/fmt
    # setup.py's build_py copies cute/ and cutlass/ next to deep_gemm's own headers, where the JIT looks for them
    cp -r "$eng/src/cutlass-f3fde58/include/cute" "$eng/src/cutlass-f3fde58/include/cutlass" deep_gemm/include/
    # The image's default g++ (/opt/gcc) links libstdc++ statically; DeepGEMM's std::regex then meets torch's shared
    # libstdc++ locale and segfaults at the first JIT include scan (seen on the H100, 2026-11-28). The distribution's
    # g++ links the shared library, as torch does.
    CXX=/usr/bin/g++ CC=/usr/bin/gcc MAX_JOBS=16 DG_USE_LOCAL_VERSION=0 python3 setup.py build_ext --inplace -j 16
    ;;
  flashmla)
    cd "$eng/src/FlashMLA"
    rm -rf csrc/cutlass && ln -s "$eng/src/cutlass-147f567" csrc/cutlass
    # CUDA 13 keeps libcu++ (cuda/std/...) under include/cccl; FlashMLA's setup.py predates that, DeepGEMM's does not.
    cccl=$(python3 -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME)')/include/cccl
    export CPATH=$cccl${CPATH:+:$CPATH} NVCC_APPEND_FLAGS="-I$cccl"
    FLASH_MLA_DISABLE_SM100=1 MAX_JOBS=${MAX_JOBS:-12} NVCC_THREADS=${NVCC_THREADS:-2} \
      python3 setup.py build_ext --inplace
    ;;
  pack)
    cd "$eng"
    # Debug sections are 85 % of the extensions' bytes; the carried tree has a 64 MiB limit.
    strip --strip-debug src/DeepGEMM/deep_gemm/*.so src/FlashMLA/flash_mla/*.so 2>/dev/null || true
    tar -cJf "${OUT:?}/engine_build.tar.xz" src/DeepGEMM/deep_gemm/*.so src/FlashMLA/flash_mla/*.so build/dg_cache \
      2>/dev/null || tar -cJf "$OUT/engine_build.tar.xz" $(ls -d src/DeepGEMM/deep_gemm/*.so src/FlashMLA/flash_mla/*.so build/dg_cache 2>/dev/null)
    ls -l "$OUT/engine_build.tar.xz"
    ;;
  unpack)
    cd "$eng" && tar -xJf "$eng/engine_build.tar.xz"
    mkdir -p src/DeepGEMM/third-party && ln -sfn "$eng/src/cutlass-f3fde58" src/DeepGEMM/third-party/cutlass
    cp -r "$eng/src/cutlass-f3fde58/include/cute" "$eng/src/cutlass-f3fde58/include/cutlass" \
      "$eng/src/DeepGEMM/deep_gemm/include/"
    ;;
esac
echo "build_engine $1: $(( $(date +%s) - t0 )) s"
