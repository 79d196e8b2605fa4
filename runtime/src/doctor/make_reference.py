#!/usr/bin/env python3
"""Writes digits_reference.json: `edgert doctor`'s known outputs for the model it carries.

One test image per digit from models/digits_test.npz (the first of each), and the logits ONNX
Runtime computes for them from models/digits_mlp_nchw.onnx. The doctor's backend checks run the
same images and compare. Run from the repository root after changing either model file:

    pip install numpy onnxruntime==1.32.0
    python3 runtime/src/doctor/make_reference.py
"""
import hashlib
import json
import pathlib

import numpy as np
import onnxruntime

ROOT = pathlib.Path(__file__).resolve().parents[3]
MODEL = ROOT / "models/digits_mlp_nchw.onnx"

data = np.load(ROOT / "models/digits_test.npz")
x, y = data["x"], data["y"]
picked = [int(np.flatnonzero(y == digit)[0]) for digit in range(10)]
session = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
logits = session.run(None, {"input": x[picked]})[0]
samples = [
    {
        "test_index": index,
        "label": int(y[index]),
        "input": [float(v) for v in x[index].ravel()],
        "logits": [float(v) for v in row],
    }
    for index, row in zip(picked, logits)
]
reference = {
    "model_sha256": hashlib.sha256(MODEL.read_bytes()).hexdigest(),
    "made_by": f"onnxruntime {onnxruntime.__version__}",
    "samples": samples,
}
out = pathlib.Path(__file__).with_name("digits_reference.json")
out.write_text(json.dumps(reference, indent=1) + "\n")
print(f"{out}: {len(samples)} samples, top-1 = label for {sum(int(np.argmax(s['logits']) == s['label']) for s in samples)}")
