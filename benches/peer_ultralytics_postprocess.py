#!/usr/bin/env python3
"""A detector's decoding and NMS: edgert's postprocess stage against Ultralytics' own
postprocessing of the same model's output, in one run.

The model is a full-width YOLOv8n (80 classes, 640×640, output [1, 84, 8400]) built by the
`ultralytics` package from its YAML with random weights (nothing is downloaded), its batch norms
set to the photo's statistics and its class biases drawn (`--bias MEAN,...`, one model each) so
that a chosen number of the 8400 boxes passes the confidence threshold: a few dozen as a trained
model's on a busy photo, hundreds as a model that fires everywhere. Each is exported to ONNX under
--work, with Ultralytics' metadata, so edgert runs it bare.

Ultralytics: onnxruntime's output on the photo (Ultralytics' LetterBox), then the predictor's
`postprocess` (non_max_suppression, scale_boxes, Results), timed over --runs calls on one thread
(torch.set_num_threads(1)); p50 and p99, nearest-rank. edgert: `edgert bench --backend ort` on the
same model and photo, its postprocess stage (decode, NMS, boxes mapped to the photo, labels) over
the same number of iterations; the inference before it runs on ONNX Runtime too, so both sides
decode the same tensor from the same library: the photo is letterboxed once, by Ultralytics, and
both are given that picture, so neither resizes (the random network would magnify the last bits
two resizers differ by). --imgsz and --classes give other shapes.

    /opt/venv/bin/python benches/peer_ultralytics_postprocess.py [--edgert target/release/edgert]
        [--work /tmp/edgert-yolo-bench] [--bias -8,-7,-6.5] [--runs 300]
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


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, max(0, round(p / 100 * len(sorted_ms) + 0.5) - 1))]


def build(work, imgsz, classes, bias, seed):
    """The model, exported; its path."""
    import torch
    import yaml
    from ultralytics import YOLO
    from ultralytics.nn.tasks import yaml_model_load

    torch.manual_seed(seed)
    cfg = yaml_model_load("yolov8n.yaml")
    cfg.pop("yaml_file", None)
    cfg["nc"] = classes
    path = work / "yolov8n.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wrapper = YOLO(str(path))
    wrapper.model.names = {i: f"class{i}" for i in range(classes)}
    fire(wrapper.model, PHOTO, imgsz, bias, seed)
    exported = wrapper.export(format="onnx", imgsz=imgsz, simplify=False, opset=17, dynamic=False)
    target = work / "yolov8n_bench.onnx"
    Path(exported).replace(target)
    return target


def fire(model, photo, imgsz, bias, seed):
    """Batch norms set to the photo's statistics (with the running statistics random weights
    start with, every box of a level comes out the same size) and the class biases drawn
    N(bias, 1.5)."""
    import cv2
    import torch
    from ultralytics.data.augment import LetterBox

    image = LetterBox((imgsz, imgsz), auto=False)(image=cv2.imread(str(photo)))[..., ::-1]
    x = torch.from_numpy(image.transpose(2, 0, 1).copy()).float()[None] / 255.0
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = 1.0
            m.train()
    with torch.no_grad():
        model(torch.cat([x, x.flip(-1)]))
        generator = torch.Generator().manual_seed(seed)
        for branch in model.model[-1].cv3:
            last = branch[-1]
            last.bias.copy_(torch.randn(last.bias.shape, generator=generator) * 1.5 + bias)
    model.eval()


def letterboxed(work, imgsz):
    """The photo as Ultralytics letterboxes it, saved: the picture both sides are given."""
    import cv2
    from ultralytics.data.augment import LetterBox

    path = work / f"bus_{imgsz}.png"
    cv2.imwrite(str(path), LetterBox((imgsz, imgsz), auto=False)(image=cv2.imread(str(PHOTO))))
    return path


def time_ultralytics(onnx_path, photo, imgsz, runs, conf, iou):
    import cv2
    import onnxruntime as ort
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.data.augment import LetterBox
    from ultralytics.models.yolo.detect.predict import DetectionPredictor

    torch.set_num_threads(1)
    image = cv2.imread(str(photo))
    x = LetterBox((imgsz, imgsz), auto=False)(image=image)[..., ::-1].transpose(2, 0, 1)[None]
    x = np.ascontiguousarray(x, dtype=np.float32) / 255.0
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    raw = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x})[0])
    overrides = dict(conf=conf, iou=iou, max_det=300, task="detect", imgsz=imgsz, verbose=False)
    predictor = DetectionPredictor(overrides=overrides)
    predictor.args = get_cfg(overrides=overrides)

    class Backend:  # what postprocess reads of the model
        end2end = False
        names = {i: f"class{i}" for i in range(raw.shape[1] - 4)}

    predictor.model = Backend()
    predictor.batch = [[str(photo)]]
    img = torch.from_numpy(x)
    passing = int((raw[0, 4:].amax(0) > conf).sum())
    for _ in range(20):
        predictor.postprocess(raw, img, [image])
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        results = predictor.postprocess(raw, img, [image])
        samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    return percentile(samples, 50), percentile(samples, 99), passing, len(results[0].boxes)


def time_edgert(edgert, onnx_path, photo, runs, env):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        done = subprocess.run(
            [edgert, "bench", "-m", str(onnx_path), "--input", str(photo), "--backend", "ort", "--threads", "1",
             "--duration-s", "0", "--min-iterations", str(runs), "--json", report],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"peer_ultralytics_postprocess.py: edgert bench failed: {done.stderr.strip()}")
        with open(report) as f:
            stage = json.load(f)["runs"][0]["stages"]["postprocess"]
    done = subprocess.run([edgert, "run", "-m", str(onnx_path), "--input", str(photo), "--backend", "ort", "--json"],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"peer_ultralytics_postprocess.py: edgert run failed: {done.stderr.strip()}")
    found = len(json.loads(done.stdout)["prediction"]["boxes"])
    return stage["p50_ms"], stage["p99_ms"], found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edgert", default=str(ROOT / "target" / "release" / "edgert"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "edgert-yolo-bench")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--classes", type=int, default=80)
    ap.add_argument("--bias", default="-8,-7,-6.5", help="means of the drawn class biases, a model each")
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    if not os.access(args.edgert, os.X_OK):
        sys.exit(f"peer_ultralytics_postprocess.py: {args.edgert}: not an executable (cargo build --release first)")
    if args.runs < 10:
        sys.exit("peer_ultralytics_postprocess.py: --runs must be at least 10")
    import onnxruntime as ort
    import ultralytics

    args.work.mkdir(parents=True, exist_ok=True)
    capi = Path(ort.__file__).parent / "capi"
    library = next((str(p) for p in sorted(capi.iterdir()) if p.name.startswith("libonnxruntime.so")), "")
    env = dict(os.environ, ORT_DYLIB_PATH=library)
    boxes = sum((args.imgsz // s) ** 2 for s in (8, 16, 32))
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs; ultralytics {ultralytics.__version__}, "
          f"onnxruntime {ort.__version__}; YOLOv8n output [1, {4 + args.classes}, {boxes}], confidence 0.25, "
          f"IoU 0.7, max_det 300\n")
    print("| class biases | boxes over 0.25 | postprocessing | p50 | p99 | boxes kept | p50 ratio |")
    print("|---|---|---|---|---|---|---|")
    photo = letterboxed(args.work, args.imgsz)
    for bias in [float(b) for b in args.bias.split(",")]:
        onnx_path = build(args.work, args.imgsz, args.classes, bias, seed=0)
        u50, u99, passing, u_found = time_ultralytics(onnx_path, photo, args.imgsz, args.runs, 0.25, 0.7)
        e50, e99, e_found = time_edgert(args.edgert, onnx_path, photo, args.runs, env)
        print(f"| N({bias}, 1.5) | {passing} | Ultralytics predictor.postprocess (torch, 1 thread) | {u50:.3f} ms "
              f"| {u99:.3f} ms | {u_found} | 1 |")
        print(f"| N({bias}, 1.5) | {passing} | edgert postprocess stage | {e50:.3f} ms | {e99:.3f} ms | {e_found} "
              f"| {e50 / u50:.3f}× |", flush=True)

if __name__ == "__main__":
    main()
