#!/usr/bin/env bash
# The device check for a machine with an NVIDIA GPU, in two steps, so the GPU machine needs neither
# Rust nor a network:
#
#   benches/gpu-check.sh build [FEATURES]   here: the release edgert with the GPU features, the
#                                           library's tests (the GPU ones are ignored elsewhere) and
#                                           the gpu_preprocess example, stripped and gzipped, into
#                                           target/gpu-check (ignored by git; under 60 MiB: 92 MB
#                                           stripped, 31 MB gzipped, with cuda-13000,tensorrt)
#   benches/gpu-check.sh run [OUT]          there, from target/gpu-check alone: `edgert doctor`
#                                           (its JSON into OUT), the GPU tests (a missing GPU is then
#                                           a failure), GPU preprocessing against the device's copy
#                                           bandwidth and the CPU pass, `cuda` against `cpu` on
#                                           MobileNetV2, the camera pipeline into TensorRT with CPU
#                                           and GPU preprocessing; short tables; well inside 10 min
#   benches/gpu-check.sh [FEATURES]         both, on a machine with Rust and a GPU (a Jetson)
#
# FEATURES: default cuda-13000,tensorrt (a lent desktop GPU: CUDA 13, no TensorRT); JetPack 6:
# cuda-12060,tensorrt; JetPack 5: cuda-11040,tensorrt. The run needs libnvrtc on the loader's path
# (CUDA's lib64 is added when there); `--backend cuda` also needs cuBLAS and cuDNN; TensorRT its
# headers at build time and libnvinfer at run time: what is missing is said, not hidden.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=target/gpu-check
limit_bytes=$((60 << 20))

build() {
  local features=${1:-cuda-13000,tensorrt}
  echo "== build (release, features $features) into $kit"
  rm -rf "$kit"
  mkdir -p "$kit"
  cargo build --release --locked --features "$features" --bin edgert --example gpu_preprocess
  # The library's test executable: cargo names it with a hash, which its JSON messages give.
  local tests
  tests=$(cargo test --release --locked --features "$features" --lib --no-run --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["kind"] == ["lib"] and m["profile"]["test"]:
        print(m["executable"])')
  # Stripped, the three are 90 MB (each links all of edgert and tract): gzipped, they travel.
  local name file
  for name in edgert gpu_preprocess lib-tests; do
    case $name in
      edgert) file=target/release/edgert ;;
      gpu_preprocess) file=target/release/examples/gpu_preprocess ;;
      lib-tests) file=$tests ;;
    esac
    strip -o "$kit/$name" "$file"
    gzip -9 "$kit/$name"
  done
  # The tests find the models through the path they were built at; `run` links it to the tree
  # there when it differs.
  (cd runtime && pwd) >"$kit/built-at"
  echo "$features" >"$kit/features"
  local bytes
  bytes=$(du -cb "$kit" | tail -n 1 | cut -f1)
  ls -l "$kit"
  echo "$kit: $bytes bytes (limit $limit_bytes)"
  ((bytes <= limit_bytes)) || { echo "gpu-check: $kit is over $limit_bytes bytes" >&2; exit 1; }
}

run() {
  local out=${1:-$(mktemp -d)}
  [[ -f $kit/edgert.gz && -f $kit/lib-tests.gz ]] || { echo "gpu-check: no $kit: run 'benches/gpu-check.sh build' first" >&2; exit 2; }
  mkdir -p "$out/bin"
  out=$(cd "$out" && pwd)
  local bin=$out/bin name
  for name in edgert gpu_preprocess lib-tests; do
    gunzip -c "$kit/$name.gz" >"$bin/$name"
    chmod 755 "$bin/$name"
  done
  export EDGERT_REQUIRE_NVRTC=1 EDGERT_KERNEL_CACHE="$out/kernels" EDGERT_ENGINE_CACHE="$out/engines"
  [[ -d /usr/local/cuda/lib64 ]] && export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local built_at runtime_dir
  built_at=$(cat "$kit/built-at")
  runtime_dir=$(cd runtime && pwd)
  if [[ $built_at != "$runtime_dir" && ! -e $built_at ]]; then
    mkdir -p "$(dirname "$built_at")" && ln -s "$runtime_dir" "$built_at"
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "features: $(cat "$kit/features")"

  echo "== edgert doctor (result: $out/doctor.json)"
  "$bin/edgert" doctor --json "$out/doctor.json" || echo "(doctor: a check failed; see the table)"

  echo "== GPU tests (ignored elsewhere)"
  "$bin/lib-tests" --include-ignored cuda:: preprocess::gpu backend::tensorrt stream::gpu doctor:: ||
    echo "(GPU tests: failures above)"

  echo "== GPU preprocessing"
  "$bin/gpu_preprocess" 300 || echo "(gpu_preprocess failed)"

  echo "== inference, MobileNetV2 FP32, batch 1, 3 s per backend"
  echo "| backend | p50 ms | p99 ms | frames/s |"
  echo "|---|---|---|---|"
  local backend report on
  for backend in cpu cuda tensorrt; do
    report="$out/bench-$backend.json"
    if "$bin/edgert" bench --model models/mobilenetv2_fp32.toml --backend "$backend" \
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
    if "$bin/edgert" bench --model models/mobilenetv2_fp32.toml --backend tensorrt \
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
  echo "== results in $out"
}

case ${1:-} in
  build) build "${2:-}" ;;
  run) run "${2:-}" ;;
  -h | --help) sed -n '2,20p' "$0" ;;
  *) build "${1:-}" && run ;;
esac
