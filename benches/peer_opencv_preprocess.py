#!/usr/bin/env python3
"""edgert's fused preprocessing against OpenCV on the same raw camera frame, both single-threaded,
in one run: YUYV, NV12 and MJPEG frames of a photo to a 1×3×224×224 f32 tensor (stretch, ImageNet
mean/std, RGB, NCHW). OpenCV does it the usual way: (imdecode →) cvtColor → resize INTER_LINEAR →
normalize → transpose. MJPEG includes the decode on both sides (OpenCV: libjpeg-turbo). Prints p50/p99 of each, the ratio, and the largest difference between the two outputs.

    cargo build --release --example preprocess_bench
    python3 benches/peer_opencv_preprocess.py [--sizes 1280x720,1920x1080]
Needs: pip install opencv-python-headless numpy (see benches/README.md).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def frames(photo, width, height):
    """The photo at the frame size as packed YUYV (h, w, 2) and NV12 (h*3/2, w), BT.601 limited."""
    bgr = cv2.resize(cv2.imread(photo), (width, height), interpolation=cv2.INTER_AREA)
    yuv = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)  # planar 4:2:0, BT.601 limited range
    y = yuv[:height]
    u = yuv[height:height + height // 4].reshape(height // 2, width // 2)
    v = yuv[height + height // 4:].reshape(height // 2, width // 2)
    nv12 = np.concatenate([y, np.stack([u, v], axis=-1).reshape(height // 2, width)])
    u422, v422 = np.repeat(u, 2, axis=0), np.repeat(v, 2, axis=0)
    yuyv = np.empty((height, width, 2), np.uint8)
    yuyv[:, :, 0] = y
    yuyv[:, 0::2, 1], yuyv[:, 1::2, 1] = u422, v422
    mjpeg = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
    return {"yuyv": yuyv, "nv12": nv12, "mjpeg": mjpeg}


def opencv(frame, fmt):
    if fmt == "mjpeg":
        rgb = cv2.cvtColor(cv2.imdecode(frame, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    else:
        code = cv2.COLOR_YUV2RGB_YUYV if fmt == "yuyv" else cv2.COLOR_YUV2RGB_NV12
        rgb = cv2.cvtColor(frame, code)
    small = cv2.resize(rgb, (224, 224), interpolation=cv2.INTER_LINEAR)
    x = (small.astype(np.float32) * (1 / 255) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def time_opencv(frame, fmt, iterations):
    for _ in range(20):
        opencv(frame, fmt)
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        opencv(frame, fmt)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2], times[-(-len(times) * 99 // 100) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/examples/preprocess_bench"))
    ap.add_argument("--photo", default=os.path.join(ROOT, "models/images/astronaut.png"))
    ap.add_argument("--sizes", default="1280x720,1920x1080")
    ap.add_argument("--iterations", type=int, default=300)
    args = ap.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"peer_opencv_preprocess.py: {args.bench}: build it first (cargo build --release --example preprocess_bench)")
    cv2.setNumThreads(1)
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs; OpenCV {cv2.__version__} (1 thread); "
          f"photo {os.path.basename(args.photo)}\n")
    print("| frame | edgert fused p50 | OpenCV p50 | OpenCV / edgert | edgert p99 | OpenCV p99 | max abs difference |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        for fmt, frame in frames(args.photo, width, height).items():
            with tempfile.TemporaryDirectory() as tmp:
                raw, out = os.path.join(tmp, "frame.raw"), os.path.join(tmp, "out.f32")
                frame.tofile(raw)
                done = subprocess.run([args.bench, fmt, str(width), str(height), raw, out, str(args.iterations)],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"peer_opencv_preprocess.py: preprocess_bench failed: {done.stderr.strip()}")
                mine = json.loads(done.stdout)
                ours = np.fromfile(out, np.float32).reshape(3, 224, 224)
            o50, o99 = time_opencv(frame, fmt, args.iterations)
            diff = float(np.abs(ours - opencv(frame, fmt)).max())
            print(f"| {fmt.upper()} {width}×{height} | {mine['p50_ms']:.3f} ms | {o50:.3f} ms | "
                  f"{o50 / mine['p50_ms']:.2f}× | {mine['p99_ms']:.3f} ms | {o99:.3f} ms | {diff:.4f} |", flush=True)


if __name__ == "__main__":
    main()
