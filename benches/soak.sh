#!/usr/bin/env bash
# Resident memory of a long `bench` (benches/RESULTS.md, soak): the digits MLP on its test set for
# SECONDS (default 600), RSS read every second; prints the iterations and RSS at 10 s and at the end.
# Usage: benches/soak.sh [SECONDS] [EDGERT]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
edgert=${2:-target/release/edgert}
out=$(mktemp)
"$edgert" bench -m models/digits_mlp_nchw.toml --input models/digits_test.npz \
  --duration-s "$seconds" --idle-s 0 --warmup-ms 0 >"$out" 2>/dev/null &
pid=$!
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true; }
at10="" last=""
for ((t = 1; t < seconds - 1; t++)); do
  sleep 1
  now=$(rss)
  [ -n "$now" ] || break
  ((t == 10)) && at10=$now
  last=$now
done
wait "$pid"
iterations=$(grep -o '[0-9]* iterations' "$out" | head -n 1)
echo "$edgert: $iterations in $seconds s; RSS ${at10} KiB at 10 s, ${last} KiB at $((seconds - 2)) s"
rm -f "$out"
