#!/usr/bin/env bash
# Video in against its two ceilings (issue 31): a 1080p30 H.264 file through decode, the fused
# preprocessing pass and MobileNetV2 INT8 on `cpu` with --drop none, against decode alone
# (gst-launch-1.0 … ! fakesink sync=false) and inference alone (`bench`), in one run.
# Needs a release build with the feature: cargo build --release --features gstreamer.
set -euo pipefail
cd "$(dirname "$0")/.."
E=${EDGERT:-target/release/edgert}
MODEL=models/mobilenetv2_int8_qdq.toml
FRAMES=${FRAMES:-300}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
video="$dir/1080p30.mp4"
gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=ball \
  ! video/x-raw,width=1920,height=1080,framerate=30/1 ! x264enc speed-preset=ultrafast ! mp4mux \
  ! filesink location="$video"
echo "== decode only: $FRAMES frames"
start=$(date +%s.%N)
gst-launch-1.0 -q filesrc location="$video" ! decodebin ! fakesink sync=false
end=$(date +%s.%N)
echo "decode: $(echo "$FRAMES / ($end - $start)" | bc -l | xargs printf '%.1f') fps"
echo "== inference only"
"$E" bench -m "$MODEL" --duration-s 5 2>&1 | grep -E "^batch 1:|^  (inference|end_to_end) "
echo "== decode, preprocess and inference (--drop none, unpaced)"
"$E" run -m "$MODEL" --source "file:$video" --fps 0 --drop none 2>&1 | tail -n 1
echo "== latency a live GStreamer source adds (640x480@30 NV12), against a synthetic source"
for source in "synthetic:640x480@30,nv12" \
  "gst:videotestsrc is-live=true ! video/x-raw,width=640,height=480,framerate=30/1,format=NV12"; do
  "$E" run -m "$MODEL" --source "$source" --duration-s 5 --json 2>/dev/null | tail -n 1 | python3 -c '
import json, sys
run = json.loads(sys.stdin.read())
s, g = run["summary"], run["stages"]["end_to_end"]
d = s["source_delay"] or {"p50_ms": 0, "p99_ms": 0}
print("%s: clock %s, glass to glass p50 %.1f p99 %.1f ms, capture to delivery p50 %.2f p99 %.2f ms"
      % (s["source"][:24], s["clock"], g["p50_ms"], g["p99_ms"], d["p50_ms"], d["p99_ms"]))'
done
