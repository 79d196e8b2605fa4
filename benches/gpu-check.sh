#!/usr/bin/env bash
# The device check, on a machine with an NVIDIA GPU (a desktop or a Jetson), in under 8 minutes:
# builds with the GPU features, runs the GPU tests that are ignored elsewhere (a missing GPU is then
# a failure, not a skip), times GPU preprocessing against the device's copy bandwidth and the CPU
# pass, `cuda` against `cpu` inference on MobileNetV2, and the camera pipeline into TensorRT with
# CPU against GPU preprocessing, then prints short tables.
#
#   benches/gpu-check.sh [FEATURES]      # default cuda-12060,tensorrt; JetPack 5: cuda-11040,tensorrt
#
# Needs crates.io (or a filled cargo cache), and libnvrtc on the loader's path (the CUDA toolkit,
# JetPack, or PyPI's nvidia-cuda-nvrtc-cu12). `--backend cuda` also needs cuBLAS and cuDNN; TensorRT
# needs its headers at build time and libnvinfer at run time: what is missing is said, not hidden.
set -euo pipefail
cd "$(dirname "$0")/.."
features=${1:-cuda-12060,tensorrt}
out=$(mktemp -d)
export EDGERT_REQUIRE_NVRTC=1 EDGERT_KERNEL_CACHE="$out/kernels" EDGERT_ENGINE_CACHE="$out/engines"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== build (release, features $features)"
cargo build --release --locked --features "$features" --bin edgert --example gpu_preprocess

echo "== GPU tests (ignored elsewhere)"
cargo test --release --locked --features "$features" --lib -- --include-ignored cuda:: preprocess::gpu backend::tensorrt stream::gpu

echo "== GPU preprocessing"
target/release/examples/gpu_preprocess 300

echo "== inference, MobileNetV2 FP32, batch 1, 3 s per backend"
echo "| backend | p50 ms | p99 ms | frames/s |"
echo "|---|---|---|---|"
for backend in cpu cuda tensorrt; do
  report="$out/bench-$backend.json"
  if target/release/edgert bench --model models/mobilenetv2_fp32.toml --backend "$backend" \
    --duration-s 3 --json "$report" >/dev/null 2>"$out/$backend.err"; then
    python3 -c 'import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
p50, p99, fps = run["stages"]["inference"]["p50_ms"], run["stages"]["inference"]["p99_ms"], run["frames_per_s"]
print(f"| {sys.argv[2]} | {p50:.2f} | {p99:.2f} | {fps:.1f} |")' "$report" "$backend"
  else
    echo "| $backend | failed: $(tail -n 1 "$out/$backend.err") | | |"
  fi
done

echo "== camera pipeline, synthetic 1280x720 YUYV into TensorRT, MobileNetV2 FP32, 3 s each"
echo "| preprocess | p50 glass-to-glass ms | p99 ms | frames/s | preprocess p50 ms |"
echo "|---|---|---|---|---|"
for on in cpu gpu; do
  report="$out/stream-$on.json"
  if target/release/edgert bench --model models/mobilenetv2_fp32.toml --backend tensorrt \
    --source synthetic:1280x720,yuyv --drop none --preprocess "$on" --duration-s 3 \
    --json "$report" >/dev/null 2>"$out/stream-$on.err"; then
    python3 -c 'import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
e2e, pre, on = run["stages"]["end_to_end"], run["stages"]["preprocess"], run["stream"]["preprocess_on"]
p50, p99, fps, pre50 = e2e["p50_ms"], e2e["p99_ms"], run["frames_per_s"], pre["p50_ms"]
print(f"| {on} | {p50:.2f} | {p99:.2f} | {fps:.1f} | {pre50:.3f} |")' "$report"
  else
    echo "| $on | failed: $(tail -n 1 "$out/stream-$on.err") | | | |"
  fi
done
