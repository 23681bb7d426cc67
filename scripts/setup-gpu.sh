#!/usr/bin/env bash
# Optional GPU setup: ONNX Runtime with the CUDA execution provider, cached under
# .cache/onnxruntime/<version>-cuda/ (the CPU library of scripts/setup.sh stays the
# default). Point a run at it with TIERFLOW_ORT_LIB; the provider needs CUDA 13's
# cuBLAS, cuFFT, cuRAND and runtime and cuDNN 9 on LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

dir="${root}/.cache/onnxruntime/${ORT_GPU_VERSION}-cuda"
step "ONNX Runtime ${ORT_GPU_VERSION} with CUDA (about 275 MB)"
fetch_npm_file "onnxruntime-node@${ORT_GPU_VERSION}" \
  "package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "${ORT_GPU_SHA256}" "${dir}/libonnxruntime.so.1"
fetch_npm_file "${ORT_CUDA_PKG}" \
  "package/Plugins/Linux/x64/libonnxruntime_providers_shared.so" "${ORT_SHARED_SHA256}" "${dir}/libonnxruntime_providers_shared.so"
fetch_npm_file "${ORT_CUDA_PKG}" \
  "package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so" "${ORT_CUDA_SHA256}" "${dir}/libonnxruntime_providers_cuda.so"

missing=$(ldd "${dir}/libonnxruntime_providers_cuda.so" | awk '/not found/ {print $1}' | tr '\n' ' ')
echo "export TIERFLOW_ORT_LIB=${dir}/libonnxruntime.so.1"
if [ -n "$missing" ]; then
  echo "# not on the library path yet (CUDA 13 / cuDNN 9): ${missing}" >&2
  # Where CUDA 13 and cuDNN 9 usually are: the toolkit, the distribution's
  # folders, and the nvidia-* Python wheels PyTorch brings (cu13/lib, cudnn/lib).
  # The toolkit's compat/ libcuda is left out: the driver's own must win.
  found=$( { ls -d /usr/local/cuda*/targets/*/lib /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu 2>/dev/null
             python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null | sed 's#$#/nvidia/*/lib#'; } |
           while read -r pattern; do for d in $pattern; do
             for lib in libcublasLt.so.13 libcudart.so.13 libcudnn.so.9; do
               if [ -e "$d/$lib" ]; then echo "$d"; fi
             done
           done; done | sort -u | paste -sd:)
  if [ -n "$found" ]; then
    echo "export LD_LIBRARY_PATH=${found}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  fi
fi
