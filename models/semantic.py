#!/usr/bin/env python3
"""Semantic segmentation fixtures for edgert's tests, each checked against its family's own
postprocessing of the same raw outputs.

Ultralytics builds YOLO26-sem from its YAML with random weights, reduced in width (as
`detectors.py` builds its detectors); exported to ONNX it gives a map of class ids (the argmax in
the graph), and run in PyTorch it gives the scores at an eighth of the input. Ultralytics'
SemanticPredictor postprocesses both (scores: bilinear to the input, the letterbox's content to
the source, argmax; one score: above 0; ids: nearest). torchvision's LR-ASPP (random weights, 3
classes) gives scores at its input's size; its reference is `interpolate(bilinear)` to the source
and `argmax`, as torchvision's segmentation references read it. The source is `images/bus.jpg`
resized to 500×280 (letterboxed into 160×224 with padding above and below).

    detect/<name>.npz    raw outputs, named as the model names them
    detect/<name>.png    the reference class map, one byte a pixel, source-sized
    detect/<name>.json   source size, input size, resize, what the map was made from
    detect/yolo26n_sem.onnx   the model itself (`--keep-models`)

Needs Python with `ultralytics onnx onnxruntime` (torch and torchvision come with ultralytics).
    python3 models/semantic.py --out models/detect --keep-models yolo26n_sem
"""

import argparse
import json
from pathlib import Path

import numpy as np

from detectors import IMGSZ, SOURCE, build, export

SOURCE_SIZE = (500, 280)  # width, height


def source_image():
    import cv2

    return cv2.resize(cv2.imread(str(SOURCE)), SOURCE_SIZE, interpolation=cv2.INTER_AREA)


def save(out_dir, name, outputs, class_map, meta):
    import cv2

    np.savez(out_dir / f"{name}.npz", **outputs)
    assert class_map.max() < 256
    cv2.imwrite(str(out_dir / f"{name}.png"), class_map.astype(np.uint8))
    (out_dir / f"{name}.json").write_text(json.dumps({"family": name, **meta}, indent=1) + "\n")
    print(f"{name}: outputs {[v.shape for v in outputs.values()]}, classes {np.unique(class_map).tolist()}")


def ultralytics_reference(preds, x, image, nc):
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.models.yolo.semantic.predict import SemanticSegmentationPredictor

    overrides = dict(task="semantic", imgsz=IMGSZ, verbose=False)
    predictor = SemanticSegmentationPredictor(overrides=overrides)
    predictor.args = get_cfg(overrides=overrides)

    class Backend:
        names = {i: f"class{i}" for i in range(nc)}

    predictor.model = Backend()
    predictor.batch = [["source.png"]]
    result = predictor.postprocess(torch.from_numpy(preds), torch.from_numpy(x), [image])[0]
    return result.semantic_mask.data.cpu().numpy()


def yolo_fixtures(out_dir, keep, seed):
    import tempfile

    import onnxruntime as ort
    import torch
    from ultralytics.data.augment import LetterBox

    image = source_image()
    x = LetterBox(IMGSZ, auto=False)(image=image)[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    x = np.ascontiguousarray(x)
    meta = {"source": list(SOURCE_SIZE), "input": list(IMGSZ), "resize": "letterbox"}
    for name, nc in (("yolo26n_sem", 6), ("yolo26n_sem1", 1)):
        with tempfile.TemporaryDirectory() as work:
            wrapper = build(name, "yolo26n-sem.yaml", nc, seed, Path(work))
            model = wrapper.model.eval()
            with torch.no_grad():
                logits = model(torch.from_numpy(x))
            logits = (logits[0] if isinstance(logits, (tuple, list)) else logits).numpy()
            onnx_path = export(wrapper, out_dir, name, None)
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        ids = session.run(None, {session.get_inputs()[0].name: x})[0]
        if name == "yolo26n_sem":
            from_ids = ultralytics_reference(ids, x, image, nc)
            save(out_dir, f"{name}_ids", {session.get_outputs()[0].name: ids}, from_ids,
                 {**meta, "made_from": "class ids [N, h, w] (ONNX export, argmax in the graph)",
                  "reference": "ultralytics SemanticPredictor.postprocess (nearest)"})
        from_scores = ultralytics_reference(logits, x, image, nc)
        save(out_dir, name, {"logits": logits}, from_scores,
             {**meta, "made_from": f"scores [N, {nc}, h/8, w/8] (PyTorch)",
              "reference": "ultralytics SemanticPredictor.postprocess (bilinear, argmax or above 0)"})
        if name not in keep:
            onnx_path.unlink()


def lraspp_fixture(out_dir, seed):
    import cv2
    import torch
    import torch.nn.functional as F
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large

    torch.manual_seed(seed)
    model = lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    h, w = 64, 96
    image = source_image()
    x = cv2.resize(image, (w, h), interpolation=cv2.INTER_LINEAR)[..., ::-1].transpose(2, 0, 1)[None]
    x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32) / 255.0)
    # Batch norms set to this image's statistics, as `detectors.calibrate` does, so that the
    # random network's scores vary over the image and every class wins somewhere.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = 1.0
    with torch.no_grad():
        model.train()(torch.cat([x, x.flip(-1)]))
        model.eval()
        out = model(x)["out"]
    sw, sh = SOURCE_SIZE
    class_map = F.interpolate(out, (sh, sw), mode="bilinear", align_corners=False).argmax(1)[0].numpy()
    save(out_dir, "lraspp", {"out": out.numpy()}, class_map,
         {"source": list(SOURCE_SIZE), "input": [h, w], "resize": "stretch",
          "made_from": "scores [N, 3, h, w] (torchvision lraspp_mobilenet_v3_large, random weights)",
          "reference": "F.interpolate(bilinear, align_corners=False) to the source, argmax"})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "detect")
    parser.add_argument("--keep-models", default="", help="families whose ONNX file is kept")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    yolo_fixtures(args.out, args.keep_models.split(","), 200)
    lraspp_fixture(args.out, 201)


if __name__ == "__main__":
    main()
