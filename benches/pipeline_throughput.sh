#!/usr/bin/env bash
# Pipelined throughput against the slowest stage alone. `edgert bench --source` runs capture,
# preprocessing, inference and postprocessing on their own threads from an unpaced synthetic
# 1280x720 YUYV source with --drop none (every frame predicted); plain `edgert bench` runs the
# same model stage after stage, so its inference time is that stage alone. The pipeline can at
# best reach 1 / (slowest stage's mean time); the target is 90 % of that. The table gives the
# share against the stage timed alone, and against the same stage as timed inside the pipeline
# (alone, the other stages run between inferences on the same core and cool its caches).
#
#   benches/pipeline_throughput.sh [MODEL] [ROUNDS]    (EDGERT=path/to/edgert, DURATION_S=10)
set -euo pipefail

edgert=${EDGERT:-target/release/edgert}
model=${1:-models/mobilenetv2_fp32.toml}
rounds=${2:-2}
duration=${DURATION_S:-10}
source_uri=synthetic:1280x720,yuyv
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Alternate the two, so drift in the machine's speed touches both alike.
for round in $(seq "$rounds"); do
    "$edgert" bench -m "$model" --duration-s "$duration" --json "$out/alone-$round.json" >/dev/null 2>&1
    "$edgert" bench -m "$model" --source "$source_uri" --drop none --duration-s "$duration" \
        --json "$out/pipelined-$round.json" >/dev/null 2>&1
done

python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print("| round | inference alone, mean | in the pipeline (mean): preprocess / inference / postprocess | pipelined fps | of 1/slowest alone | of 1/slowest in the pipeline | glass to glass p50 / p99 |")
print("|---|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    alone = json.load(open(f"{out}/alone-{r}.json"))["runs"][0]["stages"]
    run = json.load(open(f"{out}/pipelined-{r}.json"))["runs"][0]
    s = run["stages"]
    # The slowest stage alone: inference measured alone; preprocessing and postprocessing only
    # as measured inside the pipeline, where contention can only have made them slower.
    slowest = max(alone["inference"]["mean_ms"], s["preprocess"]["mean_ms"], s["postprocess"]["mean_ms"])
    inside = max(s[stage]["mean_ms"] for stage in ("preprocess", "inference", "postprocess"))
    fps = run["stream"]["achieved_fps"]
    print(f"| {r} | {alone['inference']['mean_ms']:.2f} ms | {s['preprocess']['mean_ms']:.2f} / "
          f"{s['inference']['mean_ms']:.2f} / {s['postprocess']['mean_ms']:.3f} ms | {fps:.2f} | "
          f"{fps * slowest / 10:.1f} % | {fps * inside / 10:.1f} % | "
          f"{s['end_to_end']['p50_ms']:.1f} / {s['end_to_end']['p99_ms']:.1f} ms |")
PY
