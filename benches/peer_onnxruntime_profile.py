#!/usr/bin/env python3
"""Where the time goes, per operator and per layer: edgert's `cpu` backend (its `tract_profile`
example) against onnxruntime's own profiler (`enable_profiling`) on the same ONNX model, input and
thread count, one after the other.

onnxruntime: a session with profiling on, 10 untimed runs, then --runs timed ones; each node's
`Node` events summed and divided by the runs. edgert: `tract_profile MODEL ROUNDS edgert` with
`BY_NODE=1` (each operator's time summed over the runs and divided by them; THREADS=N). Both inputs
are the same seeded uniform values in [0, 1): per-operator times do not depend on them.

The layer table groups both sides' nodes by their ONNX name up to the convolution block (for
Ultralytics exports, `/model.22/cv3.0/cv3.0.1` holds its Conv, and edgert's fused SiLU, named
after the activation); nodes whose names do not follow that pattern are grouped by their own name.

    cargo build --release --example tract_profile
    python3 benches/peer_onnxruntime_profile.py MODEL.onnx|MANIFEST.toml [--threads 1] [--runs 50]
        [--rounds 5] [--layers 15]

A manifest gives edgert its recipe and onnxruntime the ONNX file it names.

Needs: pip install onnxruntime numpy.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "target/release/examples/tract_profile")


def layer(name):
    """A node's layer: its name without the op's own component, and without a trailing `conv`
    or `act` (a convolution block's parts)."""
    parts = name.split("/")
    if len(parts) < 3:
        return name
    parts = parts[:-1]
    if parts[-1] in ("conv", "act"):
        parts = parts[:-1]
    return "/".join(parts)


def onnxruntime_profile(model, threads, runs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        feeds = {}
        rng = np.random.default_rng(0)
        for i in session.get_inputs():
            shape = [d if isinstance(d, int) else 1 for d in i.shape]
            feeds[i.name] = rng.random(shape, dtype=np.float32)
        for _ in range(10):
            session.run(None, feeds)
        # Only the timed runs' events: the profile starts again after the warm-up.
        session.end_profiling()
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        for _ in range(runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    by_type, by_layer = collections.Counter(), collections.Counter()
    total = 0.0
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        ms = e["dur"] / 1000 / runs
        by_type[e["args"]["op_name"]] += ms
        by_layer[layer(e["name"][: -len("_kernel_time")])] += ms
        total += ms
    model_runs = [e["dur"] / 1000 for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    p50 = sorted(model_runs)[len(model_runs) // 2] if model_runs else float("nan")
    return p50, total, by_type, by_layer


def edgert_profile(model, threads, rounds):
    env = dict(os.environ, THREADS=str(threads), BY_NODE="1")
    out = subprocess.run([PROFILE, model, str(rounds), "edgert"], env=env, capture_output=True, text=True, check=True)
    p50 = float(re.search(r"p50 ([\d.]+) ms", out.stdout).group(1))
    by_type, by_layer = collections.Counter(), collections.Counter()
    for line in out.stdout.splitlines():
        m = re.match(r"\s*([\d.]+) ms\s+(\S+)(?: (\S+))?$", line)
        if not m:
            continue
        # With BY_NODE each line is one node: its kind, then its name.
        ms, kind, node = float(m.group(1)), m.group(2), m.group(3)
        by_type[kind] += ms
        if node is not None:
            by_layer[layer(node)] += ms
    return p50, sum(by_type.values()), by_type, by_layer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50, help="onnxruntime's timed runs")
    parser.add_argument("--rounds", type=int, default=5, help="tract_profile's rounds (20 runs each)")
    parser.add_argument("--layers", type=int, default=15, help="layers shown, edgert's slowest first")
    args = parser.parse_args()
    if not os.path.exists(PROFILE):
        sys.exit(f"{PROFILE}: build it with `cargo build --release --example tract_profile`")
    onnx = args.model
    if onnx.endswith(".toml"):
        with open(onnx, "rb") as f:
            onnx = os.path.join(os.path.dirname(onnx), tomllib.load(f)["model"]["file"])
    o_p50, o_total, o_types, o_layers = onnxruntime_profile(onnx, args.threads, args.runs)
    e_p50, e_total, e_types, e_layers = edgert_profile(args.model, args.threads, args.rounds)
    print(f"{os.path.basename(args.model)}, {args.threads} thread(s): onnxruntime {ort.__version__} p50 "
          f"{o_p50:.2f} ms (its nodes {o_total:.2f} ms); edgert cpu p50 {e_p50:.2f} ms (its operators "
          f"{e_total:.2f} ms); ratio {e_p50 / o_p50:.2f}×\n")
    print("| onnxruntime op type | ms | edgert operator | ms |")
    print("|---|---|---|---|")
    left, right = o_types.most_common(), e_types.most_common()
    for i in range(max(len(left), len(right))):
        a = f"{left[i][0]} | {left[i][1]:.2f}" if i < len(left) else " | "
        b = f"{right[i][0]} | {right[i][1]:.2f}" if i < len(right) else " | "
        print(f"| {a} | {b} |")
    print("\n| layer | onnxruntime ms | edgert ms | ratio |")
    print("|---|---|---|---|")
    for name, ms in e_layers.most_common(args.layers):
        theirs = o_layers.get(name)
        ratio = f"{ms / theirs:.2f}×" if theirs else "—"
        print(f"| `{name}` | {'—' if theirs is None else f'{theirs:.2f}'} | {ms:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
