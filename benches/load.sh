#!/usr/bin/env bash
# Latency under load (`bench --scenario server`): the p99 against offered QPS of a model on each
# backend, with dynamic batches of 1 and of up to 4, the peak QPS within a p99 bound, and the
# scheduler's own cost per query against a direct call loop (single-stream) on a model that takes
# a fraction of a millisecond, where the cost shows.
#
#   benches/load.sh [OUT_DIR]    (EDGERT=path/to/edgert, MODEL=..., BACKENDS=cpu,ort, THREADS=2,
#                                 QPS=20,40,..., BOUND_MS=50, MIN_QUERIES=1000)
set -euo pipefail

edgert=${EDGERT:-target/release/edgert}
model=${MODEL:-models/mobilenetv2_int8_qdq.toml}
backends=${BACKENDS:-cpu,ort}
threads=${THREADS:-2}
qps=${QPS:-20,40,60,70,80,90,100,110}
bound=${BOUND_MS:-50}
min_queries=${MIN_QUERIES:-1000}
out=${1:-$(mktemp -d)}
mkdir -p "$out"

common=(-m "$model" --threads "$threads" --idle-s 0 --scenario server --latency-bound-ms "$bound")
IFS=, read -r -a backend_list <<<"$backends"
for backend in "${backend_list[@]}"; do
    for batching in "1 0" "4 5"; do
        read -r max_batch delay <<<"$batching"
        name="$backend-b$max_batch"
        echo "server sweep $name" >&2
        "$edgert" bench "${common[@]}" --backend "$backend" --max-batch "$max_batch" --max-queue-delay-ms "$delay" \
            --qps "$qps" --min-queries "$((min_queries / 2))" --duration-s 1 --json "$out/sweep-$name.json" >"$out/sweep-$name.txt"
        echo "peak $name" >&2
        "$edgert" bench "${common[@]}" --backend "$backend" --max-batch "$max_batch" --max-queue-delay-ms "$delay" \
            --find-peak --min-queries "$min_queries" --duration-s 1 --json "$out/peak-$name.json" >"$out/peak-$name.txt"
    done
done

# The scheduler's cost: the digits MLP one query at a time, then as a server at 50 QPS (the
# worker idle between queries, as at any light load) and at 1000 QPS (rarely idle).
digits=(-m models/digits_mlp_nchw.toml --idle-s 0 --duration-s 5)
"$edgert" bench "${digits[@]}" --json "$out/overhead-direct.json" >/dev/null
for rate in 50 1000; do
    "$edgert" bench "${digits[@]}" --scenario server --qps "$rate" --min-queries 5000 \
        --json "$out/overhead-server-$rate.json" >/dev/null
done

python3 - "$out" "$backends" <<'PY'
import json, sys
out, backends = sys.argv[1], sys.argv[2].split(",")
load = lambda name: json.load(open(f"{out}/{name}.json"))
print("| backend | max batch (queue delay) | offered QPS | achieved QPS | p50 ms | p99 ms (95 % CI) | p99.9 ms | mean batch | over bound |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
for backend in backends:
    for mb in (1, 4):
        for run in load(f"sweep-{backend}-b{mb}")["runs"]:
            s = run["scenario"]
            t = s["latency_ms"]
            batches = sum(c["batches"] for c in s["batch_sizes"])
            samples = sum(c["batches"] * c["size"] for c in s["batch_sizes"])
            print(f"| {backend} | {mb} ({s['max_queue_delay_ms']:g} ms) | {s['offered_qps']:.0f} | {s['achieved_qps']:.1f} | "
                  f"{t['p50_ms']:.1f} | {t['p99_ms']:.1f} ({t['p99_low_ms']:.1f}-{t['p99_high_ms']:.1f}) | {t['p999_ms']:.1f} | "
                  f"{samples / batches:.2f} | {s['over_bound'] * 100:.1f} % |")
print()
print("| backend | max batch | peak QPS within the bound | lowest failing QPS | steps | queries per step, at least |")
print("|---|--:|--:|--:|--:|--:|")
for backend in backends:
    for mb in (1, 4):
        p = load(f"peak-{backend}-b{mb}")["peak"]
        fmt = lambda v: "none" if v is None else f"{v:.1f}"
        print(f"| {backend} | {mb} | {fmt(p['qps'])} | {fmt(p['failed_at_qps'])} | {p['steps']} | {p['min_queries']} |")
print()
direct = load("overhead-direct")["runs"][0]["stages"]["end_to_end"]
print("| digits MLP, cpu | queries | p50 ms | p99 ms | queued p50 ms | queued p99 ms | p50 over direct | p99 over direct |")
print("|---|--:|--:|--:|--:|--:|--:|--:|")
print(f"| direct call loop (single-stream) | {direct['count']} | {direct['p50_ms']:.3f} | {direct['p99_ms']:.3f} | - | - | - | - |")
for rate in (50, 1000):
    s = load(f"overhead-server-{rate}")["runs"][0]["scenario"]
    t, q = s["latency_ms"], s["queue_ms"]
    print(f"| server at {rate} QPS | {s['queries']} | {t['p50_ms']:.3f} | {t['p99_ms']:.3f} | {q['p50_ms']:.3f} | {q['p99_ms']:.3f} | "
          f"+{t['p50_ms'] - direct['p50_ms']:.3f} | +{t['p99_ms'] - direct['p99_ms']:.3f} |")
PY
echo "reports in $out" >&2
