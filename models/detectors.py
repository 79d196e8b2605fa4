#!/usr/bin/env python3
"""Detector fixtures for edgert's tests, each checked against its family's own postprocessing.

Ultralytics builds YOLOv8n, YOLO11n, YOLOv10n, YOLO26n and RT-DETR from their YAML with random
weights (nothing is downloaded), reduced in width so the files stay small; the class biases are
drawn so the heads fire at a useful confidence. Each is exported to ONNX (with Ultralytics'
metadata) and run with onnxruntime on `images/bus.jpg`, preprocessed by Ultralytics' own
LetterBox; its raw outputs, and the detections Ultralytics' own predictor postprocessing makes
of them, are saved:

    detect/<name>.npz    raw outputs, named as the model names them
    detect/<name>.json   source size, input size, thresholds, and the reference detections
                         [x1, y1, x2, y2, score, class] in source pixels
    detect/<name>.onnx   the model itself, for the small ones (`--keep-models`)

RT-DETR as its own repository exports it (`tools/export_onnx.py`: inputs `images` and
`orig_target_sizes`, outputs `labels`, `boxes`, `scores`, its postprocessor inside the graph) is
a small random network ending in a transcription of `RTDETRPostProcessor` in deploy mode (focal
loss: sigmoid, top-k over queries × classes); the same interface D-FINE and DEIM export. Its
reference is onnxruntime's outputs with the photo's own size fed, over the threshold:

    detect/rtdetr_official.onnx, .json      (kept: a few kilobytes)

SSD (pytorch-ssd), EfficientNMS and DetectNet_v2 outputs are synthetic tensors of their layouts,
decoded by numpy transcriptions of pytorch-ssd's `Predictor.predict`, the EfficientNMS plugin's
documented output layout and NVIDIA's DetectNet_v2 bounding-box parser (DeepStream's
`nvdsinfer_custombboxparser.cpp` arithmetic).

Needs Python with `ultralytics onnx onnxruntime` (torch comes with ultralytics).
    python3 models/detectors.py --out models/detect --keep-models yolov8n,yolo11n,yolo26n,yolov8n_nms

INT8 variants of a kept model, for `validate` and `tune` to compare with its FP32 original:
onnxruntime's static quantization (QDQ, per-channel weights), calibrated on the photos in
`images/` as Ultralytics preprocesses them, with the original's metadata; the convolutions
only, and every operator (a broken export `validate` must catch):

    detect/<name>_int8.onnx, detect/<name>_int8_all.onnx      (--int8 yolov8n)
"""

import argparse
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "images" / "bus.jpg"
# (height, width): not square, so a letterbox pads one side.
IMGSZ = (160, 224)

FAMILIES = {
    # name: (YAML, Ultralytics' export `nms`: None keeps the head's own output, False the
    # NMS-free one-to-one head, True adds NMS to the graph)
    "yolov8n": ("yolov8n.yaml", None),
    "yolo11n": ("yolo11n.yaml", None),
    "yolov8n_nms": ("yolov8n.yaml", True),
    "yolov10n": ("yolov10n.yaml", False),
    "yolo26n": ("yolo26n.yaml", False),
    "rtdetr": ("rtdetr-l.yaml", None),
}


def build(name, yaml_name, nc, seed, work):
    import torch
    import yaml
    from ultralytics import RTDETR, YOLO
    from ultralytics.nn.tasks import yaml_model_load

    torch.manual_seed(seed)
    cfg = yaml_model_load(yaml_name)
    cfg.pop("yaml_file", None)
    cfg["nc"] = nc
    if "scales" in cfg:
        # The n scale's depth; width down to a sixteenth, for a small file.
        cfg["scales"] = {"n": [0.33, 0.0625, 1024]}
        cfg.pop("scale", None)
    # The scale letter in the file name picks the scale, as Ultralytics reads it.
    path = work / (yaml_name if "scales" not in cfg else yaml_name.replace(".yaml", "").rstrip("nsmlx") + "n.yaml")
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wrapper = RTDETR(str(path)) if name == "rtdetr" else YOLO(str(path))
    wrapper.model.names = {i: f"class{i}" for i in range(nc)}
    fire(wrapper.model, seed)
    return wrapper


def fire(model, seed):
    """Class biases drawn so that some boxes score over 0.25 (Ultralytics starts them near -11)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    head = model.model[-1]
    calibrate(model)
    with torch.no_grad():
        for attr in ("cv3", "one2one_cv3"):
            for branch in getattr(head, attr, []) or []:
                last = branch[-1]
                last.bias.copy_(torch.randn(last.bias.shape, generator=g) * 1.5 - 3.0)
        for layer in getattr(head, "dec_score_head", []) or []:
            layer.bias.copy_(torch.randn(layer.bias.shape, generator=g) * 1.5 - 1.0)
        if hasattr(head, "enc_score_head"):
            head.enc_score_head.bias.copy_(torch.randn(head.enc_score_head.bias.shape, generator=g))


def calibrate(model):
    """Batch norms set to the statistics of the test image: with random weights and the running
    statistics they start with, activations shrink layer by layer to nothing, every box of a level
    comes out the same size, and NMS compares rows of equal overlaps (ties at the threshold)."""
    import cv2
    import torch
    from ultralytics.data.augment import LetterBox

    image = LetterBox(IMGSZ, auto=False)(image=cv2.imread(str(SOURCE)))[..., ::-1]
    x = torch.from_numpy(image.transpose(2, 0, 1).copy()).float()[None] / 255.0
    x = torch.cat([x, x.flip(-1)])
    model.eval()
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in norms:
        m.momentum = 1.0
        m.train()
    with torch.no_grad():
        model(x)
    model.eval()


def export(wrapper, out_dir, name, nms):
    path = wrapper.export(format="onnx", imgsz=IMGSZ, simplify=False, opset=17, dynamic=False, nms=nms)
    target = out_dir / f"{name}.onnx"
    Path(path).replace(target)
    return target


def write_letterboxed(path):
    import cv2
    from ultralytics.data.augment import LetterBox

    cv2.imwrite(str(path), LetterBox(IMGSZ, auto=False)(image=cv2.imread(str(SOURCE))))


def reference(name, onnx_path, conf, iou, max_det, source=SOURCE):
    """Raw outputs on an image and Ultralytics' own predictor postprocessing of them."""
    import cv2
    import onnxruntime as ort
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.data.augment import LetterBox
    from ultralytics.models.rtdetr.predict import RTDETRPredictor
    from ultralytics.models.yolo.detect.predict import DetectionPredictor

    image = cv2.imread(str(source))
    rtdetr = name == "rtdetr"
    letterbox = LetterBox(IMGSZ, auto=False, scale_fill=rtdetr)
    x = letterbox(image=image)[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = session.run(None, {session.get_inputs()[0].name: np.ascontiguousarray(x)})
    meta = session.get_modelmeta().custom_metadata_map

    overrides = dict(conf=conf, iou=iou, max_det=max_det, task="detect", imgsz=IMGSZ, verbose=False)
    predictor = (RTDETRPredictor if rtdetr else DetectionPredictor)(overrides=overrides)
    predictor.args = get_cfg(overrides=overrides)

    class Backend:  # what postprocess reads of the model
        end2end = meta.get("end2end") == "True"
        names = {i: f"class{i}" for i in range(1000)}

    predictor.model = Backend()
    predictor.batch = [[str(source)]]
    img = torch.from_numpy(x)
    results = predictor.postprocess(torch.from_numpy(outputs[0]), img, [image])
    detections = results[0].boxes.data.cpu().numpy().astype(np.float64).tolist()
    return dict(zip(names, outputs)), detections, meta, image.shape


def ultralytics_fixture(name, out_dir, keep, conf, iou, max_det, nc, seed):
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        yaml_name, nms = FAMILIES[name]
        wrapper = build(name, yaml_name, nc, seed, Path(work))
        onnx_path = export(wrapper, out_dir, name, nms)
    outputs, detections, meta, shape = reference(name, onnx_path, conf, iou, max_det)
    np.savez(out_dir / f"{name}.npz", **outputs)
    save_json(out_dir / f"{name}.json", {
        "family": name,
        "source": [shape[1], shape[0]],
        "input": list(IMGSZ),
        "resize": "stretch" if name == "rtdetr" else "letterbox",
        "end2end": meta.get("end2end") == "True",
        "confidence": conf,
        "iou": iou,
        "max_det": max_det,
        "outputs": {k: list(v.shape) for k, v in outputs.items()},
        "detections": detections,
        "reference": "ultralytics predictor postprocess (non_max_suppression, scale_boxes)",
    })
    if keep:
        # The model end to end: on the letterboxed image itself, no resize is left to differ.
        letterboxed = out_dir / "bus_letterboxed.png"
        write_letterboxed(letterboxed)
        _, on_input, _, _ = reference(name, onnx_path, conf, iou, max_det, letterboxed)
        saved = json.loads((out_dir / f"{name}.json").read_text())
        saved["detections_on_letterboxed"] = on_input
        save_json(out_dir / f"{name}.json", saved)
    else:
        onnx_path.unlink()
    print(f"{name}: {len(detections)} detections, outputs {[v.shape for v in outputs.values()]}")


def quantize(out_dir, name):
    """Two INT8 variants, both calibrated on the photos: `_int8` quantizes the convolutions, as a
    YOLO is meant to be; `_int8_all` every operator onnxruntime can, its defaults, which puts the
    head's last Concat in one UINT8 range: the class scores (0..1) beside the box coordinates
    (0..224), where every score rounds to 0. `validate` must catch the second."""
    import cv2
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from ultralytics.data.augment import LetterBox

    source = out_dir / f"{name}.onnx"
    photos = sorted(p for p in (HERE / "images").iterdir() if p.suffix in (".jpg", ".png"))

    class Photos(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([
                {"images": (LetterBox(IMGSZ, auto=False)(image=cv2.imread(str(p)))[..., ::-1]
                            .transpose(2, 0, 1)[None].astype(np.float32) / 255.0).copy()}
                for p in photos
            ])

        def get_next(self):
            return next(self.batches, None)

    for suffix, ops in (("_int8", ["Conv"]), ("_int8_all", None)):
        target = out_dir / f"{name}{suffix}.onnx"
        quantize_static(str(source), str(target), Photos(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=ops)
        original, quantized = onnx.load(str(source)), onnx.load(str(target))
        del quantized.metadata_props[:]
        quantized.metadata_props.extend(original.metadata_props)
        onnx.save(quantized, str(target))
        print(f"{target.name}: calibrated on {len(photos)} photos, {target.stat().st_size} bytes")


def rtdetr_official_fixture(out_dir, conf, seed):
    import cv2
    import onnxruntime as ort
    import torch

    torch.manual_seed(seed)
    queries, classes, top = 60, 20, 40

    class Tiny(torch.nn.Module):
        """A backbone and query heads with random weights, then RTDETRPostProcessor.forward in
        deploy mode (rtdetr_pytorch/src/zoo/rtdetr/rtdetr_postprocessor.py) transcribed."""

        def __init__(self):
            super().__init__()
            self.backbone = torch.nn.Sequential(
                torch.nn.Conv2d(3, 8, 3, stride=4, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(8, 8, 3, stride=4, padding=1), torch.nn.ReLU(),
                torch.nn.AdaptiveAvgPool2d((2, 2)), torch.nn.Flatten())
            self.logits = torch.nn.Linear(32, queries * classes)
            self.boxes = torch.nn.Linear(32, queries * 4)
            with torch.no_grad():
                self.logits.bias.normal_(-3.0, 1.5)

        def forward(self, images, orig_target_sizes):
            features = self.backbone(images)
            logits = self.logits(features).view(-1, queries, classes)
            cxcywh = torch.sigmoid(self.boxes(features).view(-1, queries, 4))
            cx, cy, w, h = cxcywh.unbind(-1)
            bbox_pred = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)
            bbox_pred = bbox_pred * orig_target_sizes.repeat(1, 2).unsqueeze(1)
            scores = torch.sigmoid(logits)
            scores, index = torch.topk(scores.flatten(1), top, dim=-1)
            labels = index % classes
            index = index // classes
            boxes = bbox_pred.gather(dim=1, index=index.unsqueeze(-1).repeat(1, 1, bbox_pred.shape[-1]))
            return labels, boxes, scores

    model = Tiny().eval()
    h, w = IMGSZ
    path = out_dir / "rtdetr_official.onnx"
    torch.onnx.export(
        model, (torch.rand(1, 3, h, w), torch.tensor([[w, h]])), str(path), dynamo=False, opset_version=16,
        input_names=["images", "orig_target_sizes"], output_names=["labels", "boxes", "scores"],
        dynamic_axes={"images": {0: "N"}, "orig_target_sizes": {0: "N"}})
    image = cv2.imread(str(SOURCE))
    # The repository's preprocessing: resized (stretched) to the input, RGB in 0..1.
    x = cv2.resize(image, (w, h), interpolation=cv2.INTER_LINEAR)[..., ::-1].transpose(2, 0, 1)
    x = np.ascontiguousarray(x[None], dtype=np.float32) / 255.0
    size = np.array([[image.shape[1], image.shape[0]]], dtype=np.int64)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    labels, boxes, scores = session.run(None, {"images": x, "orig_target_sizes": size})
    # The repository's drawing: rows whose score passes the threshold, in the model's order.
    found = [[*map(float, boxes[0, i]), float(scores[0, i]), int(labels[0, i])]
             for i in range(top) if scores[0, i] > conf]
    save_json(out_dir / "rtdetr_official.json", {
        "family": "rtdetr-official", "source": [image.shape[1], image.shape[0]], "input": list(IMGSZ),
        "resize": "stretch", "confidence": conf, "max_det": 300, "detections": found,
        "reference": "onnxruntime on the graph with orig_target_sizes = the photo's size; scores over the threshold",
    })
    print(f"rtdetr-official: {len(found)} detections")


def save_json(path, value):
    path.write_text(json.dumps(value, indent=1) + "\n")


# ---- Formats without an installable reference: numpy transcriptions of the published decoders.

def iou_matrix(box, boxes):
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / (area(box) + area(boxes) - inter)


def hard_nms(boxes, scores, iou_threshold, top_k=-1):
    """pytorch-ssd's box_utils.hard_nms: greedy, best first, drop IoU > threshold."""
    order = np.argsort(-scores, kind="stable")
    picked = []
    while len(order):
        current = order[0]
        picked.append(current)
        if 0 < top_k == len(picked) or len(order) == 1:
            break
        rest = order[1:]
        order = rest[iou_matrix(boxes[current], boxes[rest]) <= iou_threshold]
    return picked


def ssd_fixture(out_dir, rng, conf, iou, source, input_hw):
    """pytorch-ssd's Predictor.predict: per class from 1, scores over the threshold, hard NMS per
    class, boxes (normalised corners) times the image size."""
    b, c = 300, 6
    logits = rng.normal(-1.0, 2.0, (1, b, c)).astype(np.float32)
    scores = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    centre = rng.uniform(0.1, 0.9, (b, 2))
    size = rng.uniform(0.05, 0.4, (b, 2))
    boxes = np.concatenate([centre - size / 2, centre + size / 2], 1)[None].astype(np.float32)
    width, height = source
    found = []
    for cls in range(1, c):
        probs = scores[0, :, cls]
        mask = probs > conf
        if not mask.any():
            continue
        kept = hard_nms(boxes[0][mask].astype(np.float64), probs[mask].astype(np.float64), iou)
        for k in kept:
            x1, y1, x2, y2 = boxes[0][mask][k].astype(np.float64)
            found.append([x1 * width, y1 * height, x2 * width, y2 * height, float(probs[mask][k]), cls])
    found.sort(key=lambda d: -d[4])
    np.savez(out_dir / "ssd.npz", scores=scores, boxes=boxes)
    save_json(out_dir / "ssd.json", {
        "family": "ssd", "source": list(source), "input": list(input_hw), "resize": "stretch",
        "confidence": conf, "iou": iou, "max_det": 300, "detections": found,
        "reference": "numpy transcription of pytorch-ssd vision/ssd/predictor.py (hard_nms per class)",
    })
    print(f"ssd: {len(found)} detections")


def efficient_nms_fixture(out_dir, rng, conf, source, input_hw):
    """EfficientNMS_TRT's outputs: num_detections [N, 1] int32, detection_boxes [N, K, 4] corners
    in input pixels, detection_scores [N, K], detection_classes [N, K] int32; rows past
    num_detections are padding. Read back through the letterbox the model was fed."""
    k, n = 100, 7
    h, w = input_hw
    num = np.array([[n]], dtype=np.int32)
    x1y1 = rng.uniform(0, [w * 0.7, h * 0.7], (k, 2))
    x2y2 = x1y1 + rng.uniform(5, [w * 0.3, h * 0.3], (k, 2))
    boxes = np.concatenate([x1y1, x2y2], 1)[None].astype(np.float32)
    scores = np.sort(rng.uniform(0.05, 0.99, (1, k)).astype(np.float32))[:, ::-1].copy()
    classes = rng.integers(0, 80, (1, k)).astype(np.int32)
    sw, sh = source
    gain = min(h / sh, w / sw)
    pad_x, pad_y = round((w - sw * gain) / 2 - 0.1), round((h - sh * gain) / 2 - 0.1)
    found = []
    for i in range(n):
        if scores[0, i] <= conf:
            continue
        x1, y1, x2, y2 = boxes[0, i].astype(np.float64)
        corners = [(x1 - pad_x) / gain, (y1 - pad_y) / gain, (x2 - pad_x) / gain, (y2 - pad_y) / gain]
        corners = [min(max(v, 0), lim) for v, lim in zip(corners, [sw, sh, sw, sh])]
        found.append(corners + [float(scores[0, i]), int(classes[0, i])])
    np.savez(out_dir / "efficient_nms.npz", num_detections=num, detection_boxes=boxes,
             detection_scores=scores, detection_classes=classes)
    save_json(out_dir / "efficient_nms.json", {
        "family": "efficient-nms", "source": list(source), "input": list(input_hw),
        "resize": "letterbox", "confidence": conf, "iou": 0.45, "max_det": 300,
        "detections": found,
        "reference": "EfficientNMS_TRT output layout, boxes mapped back as Ultralytics' scale_boxes",
    })
    print(f"efficient-nms: {len(found)} detections")


def detectnet_fixture(out_dir, rng, conf, iou, source, input_hw):
    """DeepStream's DetectNet_v2 parser: grid centres (i * stride + 0.5) / 35, x1 = (o_x1 -
    centre) * -35, x2 = (o_x2 + centre) * 35, clipped to the network; coverage over the
    threshold; then NMS per class (edgert's clustering; DeepStream also offers DBSCAN). No
    max_det: the reference keeps every box."""
    h, w = input_hw
    stride, norm, classes = 16, 35.0, 3
    gh, gw = h // stride, w // stride
    cov = (1 / (1 + np.exp(-rng.normal(-2.5, 2.0, (1, classes, gh, gw))))).astype(np.float32)
    bbox = rng.normal(0.0, 0.4, (1, 4 * classes, gh, gw)).astype(np.float32)
    bbox[:, 0::4] = np.abs(bbox[:, 0::4]) + 0.2
    bbox[:, 1::4] = np.abs(bbox[:, 1::4]) + 0.2
    bbox[:, 2::4] = np.abs(bbox[:, 2::4]) + 0.2
    bbox[:, 3::4] = np.abs(bbox[:, 3::4]) + 0.2
    cx = (np.arange(gw) * stride + 0.5) / norm
    cy = (np.arange(gh) * stride + 0.5) / norm
    sw, sh = source
    found = []
    for c in range(classes):
        cand, score = [], []
        for y in range(gh):
            for x in range(gw):
                s = cov[0, c, y, x]
                if s <= conf:
                    continue
                o = bbox[0, 4 * c:4 * c + 4, y, x].astype(np.float64)
                x1 = (o[0] - cx[x]) * -norm
                y1 = (o[1] - cy[y]) * -norm
                x2 = (o[2] + cx[x]) * norm
                y2 = (o[3] + cy[y]) * norm
                x1, x2 = np.clip([x1, x2], 0, w)
                y1, y2 = np.clip([y1, y2], 0, h)
                cand.append([x1, y1, x2, y2])
                score.append(float(s))
        if not cand:
            continue
        cand, score = np.array(cand), np.array(score)
        for k in hard_nms(cand, score, iou):
            x1, y1, x2, y2 = cand[k]
            found.append([x1 * sw / w, y1 * sh / h, x2 * sw / w, y2 * sh / h, score[k], c])
    found.sort(key=lambda d: -d[4])
    np.savez(out_dir / "detectnet_v2.npz", **{"output_cov/Sigmoid": cov, "output_bbox/BiasAdd": bbox})
    save_json(out_dir / "detectnet_v2.json", {
        "family": "detectnet-v2", "source": list(source), "input": list(input_hw), "resize": "stretch",
        "confidence": conf, "iou": iou, "max_det": 10000, "detections": found,
        "reference": "numpy transcription of DeepStream's DetectNet_v2 bbox parser, NMS per class",
    })
    print(f"detectnet-v2: {len(found)} detections")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "detect")
    parser.add_argument("--only", default=",".join(
        list(FAMILIES) + ["rtdetr-official", "ssd", "efficient-nms", "detectnet-v2"]))
    parser.add_argument("--keep-models", default="", help="families whose ONNX file is kept")
    parser.add_argument("--int8", default="", help="kept models to quantize to <name>_int8.onnx")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = args.only.split(",")
    keep = args.keep_models.split(",")
    for seed, name in enumerate(FAMILIES):
        if name in only:
            ultralytics_fixture(name, args.out, name in keep, 0.25, 0.7, 300, 20, seed)
    for name in filter(None, args.int8.split(",")):
        quantize(args.out, name)
    if "rtdetr-official" in only:
        rtdetr_official_fixture(args.out, 0.5, len(FAMILIES))
    rng = np.random.default_rng(7)
    source = (810, 1080)
    if "ssd" in only:
        ssd_fixture(args.out, rng, 0.4, 0.45, source, (300, 300))
    if "efficient-nms" in only:
        efficient_nms_fixture(args.out, rng, 0.25, source, IMGSZ)
    if "detectnet-v2" in only:
        detectnet_fixture(args.out, rng, 0.6, 0.5, source, (544, 960))


if __name__ == "__main__":
    main()
