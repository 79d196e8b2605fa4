#!/usr/bin/env python3
"""edgert's CPU backends against onnxruntime's own Python API (CPU provider), same model, same photo,
same thread count, in one run; prints a markdown table with the ratios edgert / onnxruntime.

Latency: both sides time the inference stage only (the model call on a ready 1×C×H×W tensor) with
the same protocol: 200 ms warm-up, then at least --duration-s seconds and 10 iterations; p50 and p99
are nearest-rank. onnxruntime's input is the photo preprocessed by Pillow with the manifest's recipe.
Cold start: wall time of a fresh process from start to its first result, the median of --cold-runs:
`edgert run` on the photo against a Python process that imports onnxruntime, opens the session and
runs it once. edgert's `ort` backend uses the onnxruntime library of the Python package imported here.
Cached start: the same with edgert's opt-in tract load cache (EDGERT_TRACT_CACHE, a folder of this
run's) holding the model, stored by one start before; `cpu` only (the `ort` backend has no such cache).

    python3 benches/peer_onnxruntime.py [--edgert target/release/edgert] [--threads 1,2] [--backends cpu,ort]
        [--rounds N] [--cold-runs 0] [--models NAME,...|MANIFEST.toml,...]
--models takes manifests in models/ by name, or paths to manifests elsewhere (`edgert manifest`
writes one for a bare export).
--rounds repeats the whole table, the runs taking turns, so that a drifting machine shows as
spread between rounds rather than as a difference between engines; --cold-runs 0 leaves out the
start times.
Needs: pip install onnxruntime numpy pillow (see benches/README.md).
"""
import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

import numpy as np
import onnxruntime as ort
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(sorted_ms, p):
    rank = math.ceil(p / 100 * len(sorted_ms))
    return sorted_ms[min(max(rank, 1), len(sorted_ms)) - 1]


def preprocess(manifest, photo):
    """The manifest's recipe with Pillow: centre-crop or stretch, scale, mean/std, NCHW."""
    pre, shape = manifest["preprocess"], manifest["input"]["shape"]
    h, w = shape[2], shape[3]
    img = Image.open(photo).convert("RGB")
    if pre.get("resize") == "center-crop":
        short = pre.get("resize_short_side", max(h, w))
        s = short / min(img.size)
        img = img.resize((round(img.width * s), round(img.height * s)), Image.BILINEAR)
        left, top = (img.width - w) // 2, (img.height - h) // 2
        img = img.crop((left, top, left + w, top + h))
    else:
        img = img.resize((w, h), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32) * pre.get("scale", 1 / 255)
    x = (x - np.array(pre.get("mean", [0.0]), np.float32)) / np.array(pre.get("std", [1.0]), np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def time_onnxruntime(onnx_path, x, threads, duration_s):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        session.run(None, {name: x})
    samples, start = [], time.perf_counter()
    while time.perf_counter() - start < duration_s or len(samples) < 10:
        t0 = time.perf_counter()
        session.run(None, {name: x})
        samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    return percentile(samples, 50), percentile(samples, 99)


def time_edgert(edgert, manifest_path, photo, backend, threads, duration_s, env):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        done = subprocess.run(
            [edgert, "bench", "--model", manifest_path, "--input", photo, "--backend", backend,
             "--threads", str(threads), "--duration-s", str(duration_s), "--json", report],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"peer_onnxruntime.py: edgert failed: {done.stderr.strip()}")
        with open(report) as f:
            stats = json.load(f)["runs"][0]["stages"]["inference"]
    return stats["p50_ms"], stats["p99_ms"]


def median_wall_ms(command, runs, env):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        times.append((time.perf_counter() - t0) * 1e3)
        if done.returncode != 0:
            sys.exit(f"peer_onnxruntime.py: {command[0]} failed: {done.stderr.strip()}")
    return sorted(times)[len(times) // 2]


COLD_ONNXRUNTIME = """
import sys, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = int(sys.argv[2]); o.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[3]); s.run(None, {s.get_inputs()[0].name: x})
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgert", default=os.path.join(ROOT, "target/release/edgert"))
    ap.add_argument("--models", default="mobilenetv2_fp32,mobilenetv2_int8_qdq")
    ap.add_argument("--photo", default=os.path.join(ROOT, "models/images/chelsea.png"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--backends", default="cpu,ort")
    ap.add_argument("--duration-s", type=float, default=3.0)
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    if args.rounds < 1 or args.cold_runs < 0 or not args.duration_s > 0:
        sys.exit("peer_onnxruntime.py: --rounds must be at least 1, --cold-runs at least 0, --duration-s above 0")
    if not os.access(args.edgert, os.X_OK):
        sys.exit(f"peer_onnxruntime.py: {args.edgert}: not an executable (cargo build --release first)")
    capi = os.path.join(os.path.dirname(ort.__file__), "capi")
    library = next((os.path.join(capi, f) for f in sorted(os.listdir(capi)) if f.startswith("libonnxruntime.so")), None)
    env = dict(os.environ, ORT_DYLIB_PATH=library or "")
    env.pop("EDGERT_TRACT_CACHE", None)
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs, {cpu_model()}; "
          f"onnxruntime {ort.__version__} ({library}); photo {os.path.basename(args.photo)}\n")
    cache = tempfile.mkdtemp(prefix="edgert-tract-cache-")
    cached_env = dict(env, EDGERT_TRACT_CACHE=cache)
    print("| round | model | threads | engine | p50 | p50 ratio | p99 | p99 ratio | p99/p50 | cold start "
          "| cold ratio | cached start | cached ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for name in args.models.split(","):
            table_rows(args, name, round_, env, cached_env)
    shutil.rmtree(cache, ignore_errors=True)


def start_ms(command, runs, env):
    """The median start of `command`, or None with --cold-runs 0."""
    return median_wall_ms(command, runs, env) if runs else None


def ratio(value, peer, unit):
    if value is None:
        return "— | —"
    return f"{value:.0f} {unit} | {value / peer:.2f}×"


def table_rows(args, name, round_, env, cached_env):
    """One model's rows of the table: onnxruntime then each edgert backend, at each thread count."""
    manifest_path = name if name.endswith(".toml") else os.path.join(ROOT, "models", name + ".toml")
    with open(manifest_path, "rb") as f:
        manifest = tomllib.load(f)
    onnx_path = os.path.join(os.path.dirname(manifest_path), manifest["model"]["file"])
    x = preprocess(manifest, args.photo)
    with tempfile.TemporaryDirectory() as tmp:
        x_path = os.path.join(tmp, "x.npy")
        np.save(x_path, x)
        for threads in [int(t) for t in args.threads.split(",")]:
            o50, o99 = time_onnxruntime(onnx_path, x, threads, args.duration_s)
            ocold = start_ms([sys.executable, "-c", COLD_ONNXRUNTIME, onnx_path, str(threads), x_path],
                             args.cold_runs, env)
            cold = "— | —" if ocold is None else f"{ocold:.0f} ms | 1"
            print(f"| {round_} | {os.path.basename(name)} | {threads} | onnxruntime (Python) | {o50:.2f} ms | 1 | {o99:.2f} ms | 1 "
                  f"| {o99 / o50:.2f} | {cold} | — | — |", flush=True)
            for backend in args.backends.split(","):
                e50, e99 = time_edgert(args.edgert, manifest_path, args.photo, backend, threads,
                                       args.duration_s, env)
                start = [args.edgert, "run", "--model", manifest_path, "--input", args.photo,
                         "--backend", backend, "--threads", str(threads)]
                ecold = start_ms(start, args.cold_runs, env)
                cached = None
                if backend == "cpu" and args.cold_runs:
                    median_wall_ms(start, 1, cached_env)  # stores the entry
                    cached = median_wall_ms(start, args.cold_runs, cached_env)
                print(f"| {round_} | {os.path.basename(name)} | {threads} | edgert {backend} | {e50:.2f} ms | {e50 / o50:.2f}× | "
                      f"{e99:.2f} ms | {e99 / o99:.2f}× | {e99 / e50:.2f} | {ratio(ecold, ocold, 'ms')} "
                      f"| {ratio(cached, ocold, 'ms')} |", flush=True)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
