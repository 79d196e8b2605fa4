#!/usr/bin/env python3
"""The output stage's per-frame work against OpenCV on the same NV12 frame, both single-threaded,
in one run, alternating: NV12 to RGB, eight labelled boxes (outline, filled label bar, text) and a
translucent overlay of four text lines, then JPEG at quality 80, 4:2:0. edgert:
`examples/annotate_bench.rs`; OpenCV: cvtColor, rectangle, putText (Hershey simplex), addWeighted,
imencode (libjpeg-turbo). Prints p50/p99 of each and the ratio. With --tasks, twenty boxes each
with a translucent mask (the ellipse inside it; OpenCV: the masks painted on a copy, then one
addWeighted at 0.5) and 17 keypoints joined as COCO's skeleton (line, circle), as a segment and a
pose model's results are drawn.

    cargo build --release --example annotate_bench
    python3 benches/peer_opencv_annotate.py [--sizes 1280x720,1920x1080] [--rounds 2] [--tasks]
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
# The same boxes as examples/annotate_bench.rs, as fractions of the frame.
BOXES = [
    (0.05, 0.30, 0.25, 0.80), (0.20, 0.35, 0.40, 0.85), (0.45, 0.20, 0.95, 0.70), (0.60, 0.50, 0.75, 0.95),
    (0.10, 0.10, 0.30, 0.25), (0.70, 0.05, 0.90, 0.30), (0.35, 0.60, 0.55, 0.98), (0.80, 0.55, 0.98, 0.90),
]
COLOURS = [(75, 25, 230), (75, 180, 60), (25, 225, 255)]  # BGR
LINES = ["frame 1234", "29.9 fps", "g2g p99 45.6 ms", "infer p99 12.3 ms"]


def nv12(photo, width, height):
    bgr = cv2.resize(cv2.imread(photo), (width, height), interpolation=cv2.INTER_AREA)
    yuv = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
    y = yuv[:height]
    u = yuv[height:height + height // 4].reshape(height // 2, width // 2)
    v = yuv[height + height // 4:].reshape(height // 2, width // 2)
    return np.concatenate([y, np.stack([u, v], axis=-1).reshape(height // 2, width)])


SKELETON = [(15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12), (5, 6), (5, 7), (6, 8), (7, 9),
            (8, 10), (1, 2), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 6)]


def instances(width, height):
    """examples/annotate_bench.rs's twenty people: boxes (fractions), masks, keypoints (pixels)."""
    boxes, masks, points = [], [], []
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32) + 0.5
    for i in range(20):
        x0, y0 = (0.02 + 0.047 * i) * width, (0.1 + 0.03 * (i % 5)) * height
        w, h = 0.15 * width, 0.5 * height
        cx, cy = x0 + w / 2, y0 + h / 2
        boxes.append((x0 / width, y0 / height, (x0 + w) / width, (y0 + h) / height))
        inside = ((xs - cx) / (w / 2)) ** 2 + ((ys - cy) / (h / 2)) ** 2 <= 1
        # Each mask kept as its part of the frame, so that painting it touches only its box.
        rows, cols = np.nonzero(inside.any(1))[0], np.nonzero(inside.any(0))[0]
        top, left = rows[0], cols[0]
        masks.append((top, left, inside[top:rows[-1] + 1, left:cols[-1] + 1]))
        angles = 2 * np.pi * np.arange(17) / 17
        points.append([(int(round(cx + 0.3 * w * np.cos(a))), int(round(cy + 0.3 * h * np.sin(a)))) for a in angles])
    return boxes, masks, points


def opencv(frame, width, height, tasks=None):
    img = cv2.cvtColor(frame, cv2.COLOR_YUV2BGR_NV12)
    scale = max(1, min(6, height // 360))
    font, thick = scale * 0.45, max(2, height // 240)
    boxes = BOXES
    if tasks:
        boxes, masks, points = tasks
        painted = img.copy()
        for i, (top, left, mask) in enumerate(masks):
            painted[top:top + mask.shape[0], left:left + mask.shape[1]][mask] = COLOURS[i % 3]
        cv2.addWeighted(painted, 0.5, img, 0.5, 0.0, dst=img)
        for i, pts in enumerate(points):
            for a, b in SKELETON:
                cv2.line(img, pts[a], pts[b], COLOURS[i % 3], max(1, thick // 2))
            for p in pts:
                cv2.circle(img, p, thick + 1, (255, 255, 255), -1)
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        p0, p1 = (int(x0 * width), int(y0 * height)), (int(x1 * width), int(y1 * height))
        colour = COLOURS[i % 3]
        cv2.rectangle(img, p0, p1, colour, thick)
        label = f"{['person', 'bus', 'car'][i % 3]} {0.5 + i * 0.05:.2f}"
        (tw, th), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, font, scale)
        cv2.rectangle(img, (p0[0], p0[1] - th - 2 * scale), (p0[0] + tw + 2 * scale, p0[1]), colour, -1)
        cv2.putText(img, label, (p0[0] + scale, p0[1] - scale), cv2.FONT_HERSHEY_SIMPLEX, font, (0, 0, 0), scale)
    row = 10 * scale
    panel = img[:len(LINES) * row, :20 * 8 * scale]
    cv2.addWeighted(panel, 0.375, np.zeros_like(panel), 0.0, 0.0, dst=panel)
    for k, line in enumerate(LINES):
        cv2.putText(img, line, (scale, (k + 1) * row - 2 * scale), cv2.FONT_HERSHEY_SIMPLEX, font, (255, 255, 255), scale)
    return cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 80])[1]


def time_opencv(frame, width, height, iterations, tasks):
    for _ in range(10):
        opencv(frame, width, height, tasks)
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        opencv(frame, width, height, tasks)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2], times[-(-len(times) * 99 // 100) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/examples/annotate_bench"))
    ap.add_argument("--photo", default=os.path.join(ROOT, "models/images/bus.jpg"))
    ap.add_argument("--sizes", default="1280x720,1920x1080")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keep", help="folder to keep both JPEGs in, to look at")
    ap.add_argument("--tasks", action="store_true", help="twenty boxes with masks and skeletons")
    args = ap.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"peer_opencv_annotate.py: {args.bench}: build it first (cargo build --release --example annotate_bench)")
    cv2.setNumThreads(1)
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs; OpenCV {cv2.__version__} (1 thread); "
          f"photo {os.path.basename(args.photo)}\n")
    print("| frame | round | edgert p50 | OpenCV p50 | OpenCV / edgert | edgert p99 | OpenCV p99 | JPEG bytes edgert / OpenCV |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        frame = nv12(args.photo, width, height)
        for r in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                raw, out = os.path.join(tmp, "frame.nv12"), os.path.join(tmp, "edgert.jpg")
                frame.tofile(raw)
                command = [args.bench, str(width), str(height), raw, out, str(args.iterations)]
                done = subprocess.run(command + (["tasks"] if args.tasks else []), capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"peer_opencv_annotate.py: annotate_bench failed: {done.stderr.strip()}")
                mine = json.loads(done.stdout)
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    os.replace(out, os.path.join(args.keep, f"edgert-{size}.jpg"))
            tasks = instances(width, height) if args.tasks else None
            o50, o99 = time_opencv(frame, width, height, args.iterations, tasks)
            theirs = opencv(frame, width, height, tasks)
            if args.keep:
                theirs.tofile(os.path.join(args.keep, f"opencv-{size}.jpg"))
            print(f"| {width}×{height} | {r + 1} | {mine['p50_ms']:.2f} ms | {o50:.2f} ms | {o50 / mine['p50_ms']:.2f}× | "
                  f"{mine['p99_ms']:.2f} ms | {o99:.2f} ms | {mine['bytes']} / {len(theirs)} |", flush=True)


if __name__ == "__main__":
    main()
