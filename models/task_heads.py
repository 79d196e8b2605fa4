#!/usr/bin/env python3
"""Segment, pose and OBB fixtures for edgert's tests, each checked against Ultralytics' own
postprocessing of the same raw outputs.

As in `detectors.py` (whose model building this reuses), Ultralytics builds each network from its
YAML with random weights, reduced in width, the class biases drawn so the heads fire; it is
exported to ONNX with its metadata and run with onnxruntime on `images/bus.jpg`, letterboxed by
Ultralytics' LetterBox. Saved per family:

    detect/<name>.npz    raw outputs, named as the model names them
    detect/<name>.json   source size, input size, thresholds, and what Ultralytics' predictor
                         makes of the outputs, in source pixels:
                           detections  [x1, y1, x2, y2, score, class] (segment, pose)
                           masks       one COCO run-length encoding per detection, column-major,
                                       from `retina_masks=True` (process_mask_native: prototypes
                                       upsampled once through the letterbox to the source)
                           keypoints   per detection, [x, y, confidence] per keypoint
                           obb         [cx, cy, w, h, angle, score, class] and `corners`, the four
                                       points xywhr2xyxyxyxy gives
    detect/<name>.onnx   the model itself, for the small ones (`--keep-models`)

Needs Python with `ultralytics onnx onnxruntime` (torch comes with ultralytics).
    python3 models/task_heads.py --out models/detect --keep-models yolov8n_seg
"""

import argparse
from pathlib import Path

import numpy as np

from detectors import IMGSZ, SOURCE, build, export, write_letterboxed

FAMILIES = {
    # name: (YAML, task, Ultralytics' export `nms`: False keeps the end-to-end head, confidence:
    # about a fifth of what the random heads find, to keep the fixtures small)
    "yolov8n_seg": ("yolov8n-seg.yaml", "segment", None, 0.8),
    "yolo26n_seg": ("yolo26n-seg.yaml", "segment", False, 0.52),
    "yolo11n_pose": ("yolo11n-pose.yaml", "pose", None, 0.6),
    "yolo26n_pose": ("yolo26n-pose.yaml", "pose", False, 0.4),
    "yolov8n_obb": ("yolov8n-obb.yaml", "obb", None, 0.25),
    "yolo26n_obb": ("yolo26n-obb.yaml", "obb", False, 0.7),
}


def rle(mask):
    """COCO's uncompressed run-length encoding: column-major runs, the first one of zeros."""
    flat = np.asarray(mask, dtype=np.uint8).flatten(order="F")
    edges = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], edges, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat.size and flat[0] == 1:
        counts = [0] + counts
    return {"size": list(mask.shape), "counts": counts}


def reference(name, task, onnx_path, conf, iou, max_det, source=SOURCE):
    import cv2
    import onnxruntime as ort
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.data.augment import LetterBox
    from ultralytics.models.yolo.obb.predict import OBBPredictor
    from ultralytics.models.yolo.pose.predict import PosePredictor
    from ultralytics.models.yolo.segment.predict import SegmentationPredictor
    from ultralytics.utils import ops

    image = cv2.imread(str(source))
    x = LetterBox(IMGSZ, auto=False)(image=image)[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = session.run(None, {session.get_inputs()[0].name: np.ascontiguousarray(x)})
    meta = session.get_modelmeta().custom_metadata_map

    overrides = dict(conf=conf, iou=iou, max_det=max_det, task=task, imgsz=IMGSZ, verbose=False,
                     retina_masks=True)
    predictor = {"segment": SegmentationPredictor, "pose": PosePredictor, "obb": OBBPredictor}[task](
        overrides=overrides)
    predictor.args = get_cfg(overrides=overrides)

    class Backend:  # what postprocess reads of the model
        end2end = meta.get("end2end") == "True"
        names = {i: f"class{i}" for i in range(20)}
        kpt_shape = eval(meta["kpt_shape"]) if "kpt_shape" in meta else None

    predictor.model = Backend()
    predictor.batch = [[str(source)]]
    raw = [torch.from_numpy(o) for o in outputs]
    preds = raw if task == "segment" else raw[0]
    result = predictor.postprocess(preds, torch.from_numpy(x), [image])[0]
    found = {}
    if task == "obb":
        found["obb"] = result.obb.data.cpu().numpy().astype(np.float64).tolist()
        found["corners"] = result.obb.xyxyxyxy.cpu().numpy().astype(np.float64).tolist()
    else:
        found["detections"] = result.boxes.data.cpu().numpy().astype(np.float64).tolist()
    if task == "segment":
        found["masks"] = [rle(m) for m in result.masks.data.cpu().numpy()] if result.masks is not None else []
    if task == "pose":
        found["keypoints"] = result.keypoints.data.cpu().numpy().astype(np.float64).tolist()
        found["kpt_shape"] = list(Backend.kpt_shape)
    return dict(zip(names, outputs)), found, meta, image.shape


def fixture(name, out_dir, keep, iou, max_det, nc, seed):
    import json
    import tempfile

    yaml_name, task, nms, conf = FAMILIES[name]
    with tempfile.TemporaryDirectory() as work:
        wrapper = build(name, yaml_name, nc, seed, Path(work))
        onnx_path = export(wrapper, out_dir, name, nms)
    outputs, found, meta, shape = reference(name, task, onnx_path, conf, iou, max_det)
    np.savez(out_dir / f"{name}.npz", **outputs)
    # One line: masks are long lists of runs.
    (out_dir / f"{name}.json").write_text(json.dumps({
        "family": name,
        "task": task,
        "source": [shape[1], shape[0]],
        "input": list(IMGSZ),
        "resize": "letterbox",
        "end2end": meta.get("end2end") == "True",
        "confidence": conf,
        "iou": iou,
        "max_det": max_det,
        "outputs": {k: list(v.shape) for k, v in outputs.items()},
        **found,
        "reference": f"ultralytics {task} predictor postprocess (retina_masks=True for masks)",
    }) + "\n")
    if keep:
        # The model end to end: on the letterboxed image itself, no resize is left to differ.
        letterboxed = out_dir / "bus_letterboxed.png"
        write_letterboxed(letterboxed)
        _, on_input, _, _ = reference(name, task, onnx_path, conf, iou, max_det, letterboxed)
        saved = json.loads((out_dir / f"{name}.json").read_text())
        saved["on_letterboxed"] = on_input
        (out_dir / f"{name}.json").write_text(json.dumps(saved) + "\n")
    else:
        onnx_path.unlink()
    count = len(found.get("detections", found.get("obb", [])))
    print(f"{name}: {count} found, outputs {[v.shape for v in outputs.values()]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "detect")
    parser.add_argument("--only", default=",".join(FAMILIES))
    parser.add_argument("--keep-models", default="", help="families whose ONNX file is kept")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only, keep = args.only.split(","), args.keep_models.split(",")
    for seed, name in enumerate(FAMILIES):
        if name in only:
            fixture(name, args.out, name in keep, 0.7, 300, 20, 100 + seed)


if __name__ == "__main__":
    main()
