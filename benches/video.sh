#!/usr/bin/env bash
# Video in against its two ceilings (issue 31): a 1080p30 H.264 file through decode, the fused
# preprocessing pass and MobileNetV2 INT8 on `cpu` with --drop none, against decode alone
# (gst-launch-1.0 … ! fakesink sync=false) and inference alone (`bench`), in one run; then the
# latency a live GStreamer source and an RTSP stream add.
# Needs a release build with the features: cargo build --release --features gstreamer,rtsp-server.
set -euo pipefail
cd "$(dirname "$0")/.."
E=${EDGERT:-target/release/edgert}
MODEL=models/mobilenetv2_int8_qdq.toml
FRAMES=${FRAMES:-300}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
video="$dir/1080p30.mp4"
# 4:2:0 (I420), as cameras and nearly every H.264 file are: without the format, videotestsrc and
# x264enc settle on 4:4:4 (High 4:4:4), which takes more than twice the CPU to decode and convert.
gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=ball \
  ! video/x-raw,width=1920,height=1080,framerate=30/1,format=I420 ! x264enc speed-preset=ultrafast ! mp4mux \
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
# One line of a run's JSON report: its clock, glass to glass, and the source's own delay.
latency() {
  "$E" run -m "$MODEL" "$@" --json 2>/dev/null | tail -n 1 | python3 -c '
import json, sys
run = json.loads(sys.stdin.read())
s, g = run["summary"], run["stages"]["end_to_end"]
d = s["source_delay"] or {"p50_ms": 0, "p99_ms": 0}
print("%s: clock %s, glass to glass p50 %.1f p99 %.1f ms, capture to delivery p50 %.2f p99 %.2f ms"
      % (s["source"][:32], s["clock"], g["p50_ms"], g["p99_ms"], d["p50_ms"], d["p99_ms"]))'
}
echo "== latency a live GStreamer source adds (640x480@30 NV12), against a synthetic source"
for source in "synthetic:640x480@30,nv12" \
  "gst:videotestsrc is-live=true ! video/x-raw,width=640,height=480,framerate=30/1,format=NV12"; do
  latency --source "$source" --duration-s 5
done
echo "== an RTSP stream (edgert's own --output rtsp:// on loopback, 640x480@30), rtspsrc latency 0 and 50 ms"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$E" run -m models/digits_mlp_nchw.toml --source synthetic:640x480@30,nv12 --duration-s 20 \
  --output "rtsp://127.0.0.1:$port/bench" >/dev/null 2>&1 &
server=$!
sleep 2
for ms in 0 50; do
  latency --source "rtsp://127.0.0.1:$port/bench" --latency-ms "$ms" --duration-s 5
done
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
