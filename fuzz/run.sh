#!/usr/bin/env bash
# Fuzzes each parser of outside bytes (fuzz_targets/) for SECONDS each (default 30), from corpora
# seeded with the shipped files, and prints executions per second and what was found. Installs
# cargo-fuzz when missing. The machines have one stable toolchain, so libFuzzer runs without a
# sanitizer (`--sanitizer none`): coverage-guided, finding panics, aborts, hangs and memory blow-ups,
# not silent memory errors (edgert's own code has no unsafe outside its FFI).
# FUZZ_SEED fixes libFuzzer's seed (CI's short runs); without it each run explores afresh.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(onnx_model manifest npz image mjpeg recording tegrastats sysfs report arrivals)
command -v cargo-fuzz >/dev/null || cargo install --quiet --locked cargo-fuzz@0.13.2

seed() { # seed TARGET FILE...: the shipped files a target starts from
  local dir=fuzz/corpus/$1
  shift
  mkdir -p "$dir"
  for f in "$@"; do cp -n "$f" "$dir/" 2>/dev/null || true; done
}
fixtures=runtime/tests/fixtures
seed onnx_model models/digits_mlp_*.onnx models/mnist_mlp_nchw.onnx $fixtures/hostile/*.onnx
seed manifest models/*.toml
seed npz models/digits_test.npz models/digits_calib.npz $fixtures/hostile/*.npz
seed image models/images/bus.jpg models/images/page.png
seed tegrastats $fixtures/tegrastats/*
seed report fuzz/seeds/report.json fuzz/seeds/report_server.json
seed arrivals fuzz/seeds/arrivals.txt
mkdir -p fuzz/corpus/mjpeg fuzz/corpus/recording fuzz/corpus/sysfs
# The recorded camera's first JPEG, and its recording as index, NUL, frames.
python3 - <<'PY'
import json, pathlib
rec = pathlib.Path("runtime/tests/fixtures/recordings/mjpeg-320x240")
index = json.loads((rec / "frames.json").read_text())
raw = (rec / "frames.raw").read_bytes()
first = index["frames"][0]
pathlib.Path("fuzz/corpus/mjpeg/frame0.jpg").write_bytes(raw[first["offset"]:first["offset"] + first["length"]])
pathlib.Path("fuzz/corpus/recording/mjpeg").write_bytes((rec / "frames.json").read_bytes() + b"\0" + raw)
pathlib.Path("fuzz/corpus/sysfs/orin").write_bytes(b"5000\n1200\n140\n45500\n1420800\n512\n")
PY

for target in "${targets[@]}"; do
  # -rss_limit_mb: an input that makes edgert take more than this is a finding too.
  log=$(mktemp)
  status=0
  cargo fuzz run --sanitizer none -O "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  # The rate is libFuzzer's over the time it ran: less than SECONDS where it stopped at a finding.
  echo "fuzz $target: ${runs:-0} runs at ${rate:-0}/s (for up to ${seconds} s), exit $status"
  if ((status)); then
    # What panicked and why (the line after), what libFuzzer saw, and where the input is.
    grep -m 8 -A 1 -E "panicked at|ERROR: libFuzzer|Test unit written" "$log" || true
    failed=1
  fi
  rm -f "$log"
done
exit "${failed:-0}"
