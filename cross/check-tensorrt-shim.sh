#!/usr/bin/env bash
# Compiles the TensorRT shim (runtime/src/backend/tensorrt/shim) against given TensorRT and CUDA
# headers, for x86_64 and, when its cross compiler is installed, aarch64; then checks that the
# object needs nothing from TensorRT or CUDA at link time (their functions come through dlopen).
#
#   cross/check-tensorrt-shim.sh TENSORRT_INCLUDE_DIR CUDA_INCLUDE_DIR[:MORE_DIRS]
#
# JetPack: /usr/include/aarch64-linux-gnu and /usr/local/cuda/include. Elsewhere: NVIDIA/TensorRT's
# include/ of the release to check (NvOnnxParser.h comes from onnx/onnx-tensorrt before 10.x's
# repository carried it) and the CUDA runtime's headers (PyPI's nvidia-cuda-runtime-cu12 and, for
# crt/host_defines.h, nvidia-cuda-nvcc-cu12).
set -euo pipefail
if (($# != 2)); then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
cd "$(dirname "$0")/.."
shim=runtime/src/backend/tensorrt/shim/edgert_trt.cpp
includes=(-I"$1")
IFS=: read -r -a cuda_dirs <<<"$2"
for dir in "${cuda_dirs[@]}"; do includes+=(-I"$dir"); done
version=$(printf '#include <NvInferVersion.h>\nNV_TENSORRT_MAJOR.NV_TENSORRT_MINOR.NV_TENSORRT_PATCH\n' |
  g++ -E -P -x c++ -I"$1" - | tail -n 1 | tr -d ' ')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for compiler in g++ aarch64-linux-gnu-g++; do
  if ! command -v "$compiler" >/dev/null; then
    echo "SKIPPED $compiler: not installed"
    continue
  fi
  object="$out/$compiler.o"
  "$compiler" -std=c++17 -Wall -Wextra -Werror -Wno-deprecated-declarations -Wno-unused-parameter \
    "${includes[@]}" -c "$shim" -o "$object"
  # Undefined symbols other than the C and C++ runtimes' would have to be linked from TensorRT or CUDA.
  foreign=$(nm -u "$object" | awk '{print $2}' | c++filt | grep -Ei 'nvinfer|nvonnx|cuda' || true)
  if [[ -n $foreign ]]; then
    echo "FAIL $compiler: the shim links against TensorRT or CUDA: $foreign"
    status=1
  else
    echo "ok   $compiler: TensorRT ${version:-?} headers, $(nm -g --defined-only "$object" | grep -c ' T edgert_trt_') C functions, nothing linked from TensorRT or CUDA"
  fi
done
exit "$status"
