#!/usr/bin/env python3
"""A segment model's masks: edgert's postprocess stage against Ultralytics' own postprocessing
of the same model's outputs, in one run.

The model is a full-width YOLOv8n-seg (80 classes, 640×640: boxes [1, 116, 8400], prototypes
[1, 32, 160, 160]) built by the `ultralytics` package from its YAML with random weights (nothing
is downloaded), its batch norms set to the photo's statistics and its class biases drawn so that
more boxes than --max-det pass the threshold; exported to ONNX under --work with Ultralytics'
metadata, so edgert runs it bare. The frame is `bus.jpg` resized to --source (1280×720), so the
masks are made at that size.

Ultralytics: onnxruntime's outputs on the frame (Ultralytics' LetterBox), then
SegmentationPredictor.postprocess with retina_masks=True (NMS, process_mask_native: masks at the
frame's size, scale_boxes, Results), timed over --runs calls on one thread
(torch.set_num_threads(1)); p50 and p99, nearest-rank. edgert: `edgert bench --backend ort` on
the same model and frame, its postprocess stage (decode, NMS, masks at the frame's size as
run-length encodings, labels) over the same number of iterations.

    /opt/venv/bin/python benches/peer_ultralytics_masks.py [--edgert target/release/edgert]
        [--work /tmp/edgert-seg-bench] [--max-det 20] [--runs 200]
Needs: pip install ultralytics onnx onnxruntime (torch comes with ultralytics).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PHOTO = ROOT / "models" / "images" / "bus.jpg"
IMGSZ = 640


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, max(0, round(p / 100 * len(sorted_ms) + 0.5) - 1))]


def frame(work, size):
    import cv2

    path = work / f"bus_{size[0]}x{size[1]}.png"
    cv2.imwrite(str(path), cv2.resize(cv2.imread(str(PHOTO)), size, interpolation=cv2.INTER_AREA))
    return path


def build(work, photo, bias, seed):
    import torch
    from ultralytics import YOLO

    from peer_ultralytics_postprocess import fire

    torch.manual_seed(seed)
    wrapper = YOLO("yolov8n-seg.yaml")
    wrapper.model.names = {i: f"class{i}" for i in range(80)}
    fire(wrapper.model, photo, IMGSZ, bias, seed)
    exported = wrapper.export(format="onnx", imgsz=IMGSZ, simplify=False, opset=17, dynamic=False)
    target = work / "yolov8n_seg_bench.onnx"
    Path(exported).replace(target)
    return target


def time_ultralytics(onnx_path, photo, runs, conf, max_det):
    import cv2
    import onnxruntime as ort
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.data.augment import LetterBox
    from ultralytics.models.yolo.segment.predict import SegmentationPredictor

    torch.set_num_threads(1)
    image = cv2.imread(str(photo))
    x = LetterBox((IMGSZ, IMGSZ), auto=False)(image=image)[..., ::-1].transpose(2, 0, 1)[None]
    x = np.ascontiguousarray(x, dtype=np.float32) / 255.0
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    raw = [torch.from_numpy(o) for o in session.run(None, {session.get_inputs()[0].name: x})]
    overrides = dict(conf=conf, iou=0.7, max_det=max_det, task="segment", imgsz=IMGSZ, verbose=False,
                     retina_masks=True)
    predictor = SegmentationPredictor(overrides=overrides)
    predictor.args = get_cfg(overrides=overrides)

    class Backend:
        end2end = False
        names = {i: f"class{i}" for i in range(80)}

    predictor.model = Backend()
    predictor.batch = [[str(photo)]]
    img = torch.from_numpy(x)
    for _ in range(10):
        predictor.postprocess(raw, img, [image])
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        results = predictor.postprocess(raw, img, [image])
        samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    return percentile(samples, 50), percentile(samples, 99), len(results[0].boxes)


def time_edgert(edgert, onnx_path, photo, runs, max_det, env):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        done = subprocess.run(
            [edgert, "bench", "-m", str(onnx_path), "--input", str(photo), "--backend", "ort", "--threads", "1",
             "--max-det", str(max_det), "--duration-s", "0", "--min-iterations", str(runs), "--json", report],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"peer_ultralytics_masks.py: edgert bench failed: {done.stderr.strip()}")
        with open(report) as f:
            stage = json.load(f)["runs"][0]["stages"]["postprocess"]
    done = subprocess.run([edgert, "run", "-m", str(onnx_path), "--input", str(photo), "--backend", "ort", "--json",
                           "--max-det", str(max_det)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"peer_ultralytics_masks.py: edgert run failed: {done.stderr.strip()}")
    boxes = json.loads(done.stdout)["prediction"]["boxes"]
    return stage["p50_ms"], stage["p99_ms"], sum(1 for b in boxes if "mask" in b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgert", default=str(ROOT / "target" / "release" / "edgert"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "edgert-seg-bench")
    ap.add_argument("--source", default="1280x720", help="the frame's size, WxH")
    ap.add_argument("--max-det", type=int, default=20)
    ap.add_argument("--bias", type=float, default=-6.0, help="mean of the drawn class biases")
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    if not os.access(args.edgert, os.X_OK):
        sys.exit(f"peer_ultralytics_masks.py: {args.edgert}: not an executable (cargo build --release first)")
    if args.runs < 10:
        sys.exit("peer_ultralytics_masks.py: --runs must be at least 10")
    import onnxruntime as ort
    import ultralytics

    size = tuple(int(v) for v in args.source.split("x"))
    args.work.mkdir(parents=True, exist_ok=True)
    capi = Path(ort.__file__).parent / "capi"
    library = next((str(p) for p in sorted(capi.iterdir()) if p.name.startswith("libonnxruntime.so")), "")
    env = dict(os.environ, ORT_DYLIB_PATH=library)
    photo = frame(args.work, size)
    onnx_path = build(args.work, photo, args.bias, seed=0)
    u50, u99, u_found = time_ultralytics(onnx_path, photo, args.runs, 0.25, args.max_det)
    e50, e99, e_found = time_edgert(args.edgert, onnx_path, photo, args.runs, args.max_det, env)
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs; ultralytics {ultralytics.__version__}, "
          f"onnxruntime {ort.__version__}; YOLOv8n-seg 640×640, frame {size[0]}×{size[1]}, confidence 0.25, "
          f"IoU 0.7, max_det {args.max_det}\n")
    print("| postprocessing | p50 | p99 | masks | p50 ratio |")
    print("|---|---|---|---|---|")
    print(f"| Ultralytics SegmentationPredictor.postprocess, retina_masks (torch, 1 thread) | {u50:.3f} ms | "
          f"{u99:.3f} ms | {u_found} | 1 |")
    print(f"| edgert postprocess stage | {e50:.3f} ms | {e99:.3f} ms | {e_found} | {e50 / u50:.3f}× |")


if __name__ == "__main__":
    main()
