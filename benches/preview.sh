#!/usr/bin/env bash
# The preview's cost to the pipeline (issue 32): `bench --source` of MobileNetV2 INT8 on 640x480
# NV12 frames, unpaced (the pipeline's ceiling) and paced at 30 fps (a camera), without outputs,
# with --preview and one headless Chromium watching the page (on this machine, as it would not be
# on a board), and with --preview and curl reading the MJPEG stream (edgert's own cost), alternating,
# in one run. PIN=1 keeps edgert on CPU 0 and the viewer on CPU 1 in every mode, so the viewer
# takes nothing from the pipeline's core, as a browser on the workstation would not. Needs a release
# build (cargo build --release), chromium-headless-shell (or chromium), curl and, for PIN, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."
E=${EDGERT:-target/release/edgert}
MODEL=${MODEL:-models/mobilenetv2_int8_qdq.toml}
SECONDS_EACH=${SECONDS_EACH:-10}
ROUNDS=${ROUNDS:-2}
BROWSER=$(command -v chromium-headless-shell || command -v chromium)
EDGERT_CPU=() VIEWER_CPU=()
if [[ ${PIN:-0} == 1 ]]; then
  EDGERT_CPU=(taskset -c 0) VIEWER_CPU=(taskset -c 1)
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One bench; prints its frames/s. With "preview", a browser watches the page while it runs.
bench() {
  local source=$1 mode=$2 args=() browser=""
  [[ $mode != plain ]] && args=(--preview 127.0.0.1:0)
  "${EDGERT_CPU[@]}" "$E" bench -m "$MODEL" --source "$source" --duration-s "$SECONDS_EACH" --json "$dir/r.json" "${args[@]}" \
    >/dev/null 2>"$dir/err" &
  local pid=$!
  if [[ $mode != plain ]]; then
    local url=""
    for _ in $(seq 100); do
      url=$(grep -o 'http://[^ ]*' "$dir/err" || true)
      [[ -n $url ]] && break
      sleep 0.1
    done
    if [[ $mode == chromium ]]; then
      "${VIEWER_CPU[@]}" "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" "$url" >/dev/null 2>&1 &
    else
      "${VIEWER_CPU[@]}" curl -s -o /dev/null "${url/\/\?/\/stream.mjpg?}" &
    fi
    browser=$!
  fi
  wait "$pid"
  if [[ -n $browser ]]; then
    kill "$browser" 2>/dev/null || true
    wait "$browser" 2>/dev/null || true
  fi
  python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
out = run["stream"].get("output")
drawn, encoded = out and (out["annotate"] or {"count": 0, "p50_ms": 0}), out and (out["encode"] or {"count": 0, "p50_ms": 0})
shown = "" if out is None else ", %d frames shown, %d pictures sent, %d viewers at most, annotate p50 %.2f ms, JPEG p50 %.2f ms" % (
    out["frames_shown"], encoded["count"], out["outputs"][0]["most_clients"], drawn["p50_ms"], encoded["p50_ms"])
print("%.1f fps, glass to glass p50 %.1f p99 %.1f ms%s" % (run["frames_per_s"], run["stages"]["end_to_end"]["p50_ms"], run["stages"]["end_to_end"]["p99_ms"], shown))' "$dir/r.json"
}

echo "machine: $(uname -m), $(nproc) CPUs; $MODEL; $SECONDS_EACH s each${EDGERT_CPU:+; edgert on CPU 0, viewer on CPU 1}"
for source in ${SOURCES:-synthetic:640x480,nv12 synthetic:640x480@30,nv12}; do
  for round in $(seq "$ROUNDS"); do
    for mode in plain chromium curl; do
      echo "$source round $round $mode: $(bench "$source" "$mode")"
    done
  done
done
