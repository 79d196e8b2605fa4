#!/usr/bin/env python3
"""Makes variants of an FP32 model for `edgert validate` and `edgert tune`, each with a manifest:

    python3 models/variants.py prune    --manifest M.toml --ratio 0.5 --out V.onnx   # unstructured magnitude
    python3 models/variants.py prune-2-4 --manifest M.toml --out V.onnx              # 2 of every 4 input weights
    python3 models/variants.py int8     --manifest M.toml --calib DATA --out V.onnx  # TensorRT-style QDQ
    python3 models/variants.py int8     --manifest M.toml --calib DATA --format qoperator --out V.onnx
    python3 models/variants.py input-type --manifest M.toml --dtype f16|u8 --out V.onnx  # same model, other input

Pruning touches the weights of Conv, Gemm and MatMul layers (not biases). Unstructured pruning zeroes
the smallest-magnitude weights of each layer; 2:4 zeroes the two smallest of every four consecutive
weights along the input-channel axis (Conv axis 1; Gemm axis 1 with transB, else 0; MatMul axis 0),
the pattern Ampere/Orin sparse tensor cores accept. INT8 is symmetric with zero zero-points,
per-channel weights and reduce_range (see models/README.md), calibrated on DATA: an .npz with `x`
or a folder of images preprocessed as the manifest says. No fine-tuning: accuracy after pruning is
what `edgert validate` measures. Needs numpy, onnx (and onnxruntime, pillow for int8).
"""
import argparse
import glob
import hashlib
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

LAYER_AXIS = {"Conv": lambda n: 1, "MatMul": lambda n: 0,
              "Gemm": lambda n: int(any(a.name == "transB" and a.i == 1 for a in n.attribute))}


def read_manifest(path):
    import tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def layer_weights(model):
    """(initializer, input-channel axis) of each layer weight stored as a float initializer."""
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type in LAYER_AXIS and len(node.input) > 1 and node.input[1] in inits:
            yield inits[node.input[1]], LAYER_AXIS[node.op_type](node)


def replace(model, tensor, values):
    tensor.CopyFrom(numpy_helper.from_array(values.astype(np.float32), tensor.name))


def prune_unstructured(model, ratio):
    for tensor, _ in layer_weights(model):
        w = numpy_helper.to_array(tensor).copy()
        k = int(round(ratio * w.size))
        if k > 0:
            threshold = np.partition(np.abs(w).ravel(), k - 1)[k - 1]
            w[np.abs(w) <= threshold] = 0.0
        replace(model, tensor, w)


def prune_two_of_four(model):
    for tensor, axis in layer_weights(model):
        w = numpy_helper.to_array(tensor).copy()
        channels = w.shape[axis]
        full = channels - channels % 4
        if full == 0:
            continue
        moved = np.moveaxis(w, axis, -1)
        groups = moved[..., :full].reshape(moved.shape[:-1] + (full // 4, 4))
        smallest = np.argsort(np.abs(groups), axis=-1)[..., :2]
        np.put_along_axis(groups, smallest, 0.0, axis=-1)
        moved[..., :full] = groups.reshape(moved.shape[:-1] + (full,))
        replace(model, tensor, np.moveaxis(moved, -1, axis))


def calibration(manifest_path, data, limit=200):
    if data.endswith(".npz"):
        return np.load(data)["x"][:limit].astype(np.float32)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from rebuild import preprocess_photo
    manifest = read_manifest(manifest_path)
    files = sorted(f for f in glob.glob(os.path.join(data, "*")) if f.lower().endswith((".png", ".jpg", ".jpeg")))
    return np.stack([preprocess_photo(manifest, f) for f in files[:limit]])


def quantize_int8(src, dst, samples, input_name, fmt="qdq"):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{input_name: x[None]} for x in samples])

        def get_next(self):
            return next(self.items, None)

    # QDQ (Q/DQ pairs around float ops) is what TensorRT and ONNX Runtime fuse into integer kernels;
    # QOperator (QLinearConv, QLinearMatMul, ...) is what tract runs in integer (see benches/RESULTS.md).
    quant_format = QuantFormat.QOperator if fmt == "qoperator" else QuantFormat.QDQ
    quantize_static(src, dst, Reader(), quant_format=quant_format, per_channel=True, reduce_range=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
                    # QOperator Add, pooling and Gemm become com.microsoft contrib ops (QLinearAdd, QGemm), which tract lacks.
                    op_types_to_quantize=["Conv", "MatMul"] if fmt == "qoperator" else None)


def retype_input(model, dtype, scale):
    """The same model taking an f16 or u8 input: a Cast to float in front (and, for u8, the manifest's
    scale moved into the model, so it takes pixels as they are)."""
    graph = model.graph
    x = graph.input[0]
    inner = x.name + "_f32"
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name == x.name:
                node.input[k] = inner
    cast_out = inner if dtype == "f16" else x.name + "_cast"
    front = [onnx.helper.make_node("Cast", [x.name], [cast_out], to=onnx.TensorProto.FLOAT)]
    if dtype == "u8":
        graph.initializer.append(numpy_helper.from_array(np.array(scale, np.float32), x.name + "_scale"))
        front.append(onnx.helper.make_node("Mul", [cast_out, x.name + "_scale"], [inner]))
    nodes = front + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    x.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16 if dtype == "f16" else onnx.TensorProto.UINT8
    onnx.checker.check_model(model)


def write_manifest(base_manifest, out, description, dtype=None):
    """The base manifest with the variant's file and sha256, and a first line saying what it is."""
    with open(base_manifest) as f:
        text = f.read()
    digest = hashlib.sha256(open(out, "rb").read()).hexdigest()
    rel = os.path.relpath(out, os.path.dirname(os.path.abspath(out)))
    text = re.sub(r'^file = ".*"$', f'file = "{rel}"', text, count=1, flags=re.M)
    text = re.sub(r'^sha256 = ".*"$', f'sha256 = "{digest}"', text, count=1, flags=re.M)
    if dtype:
        text = re.sub(r'^(layout = .*)$', f'\\1\ndtype = "{dtype}"', text, count=1, flags=re.M)
    if dtype == "u8":
        text = re.sub(r'^scale = .*$', 'scale = 1.0', text, count=1, flags=re.M)
    path = os.path.splitext(out)[0] + ".toml"
    with open(path, "w") as f:
        f.write(f"# Variant made by models/variants.py: {description}.\n" + text)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["prune", "prune-2-4", "int8", "input-type"])
    ap.add_argument("--manifest", required=True, help="the FP32 model's manifest")
    ap.add_argument("--out", required=True, help="the variant's .onnx; its manifest goes beside it")
    ap.add_argument("--ratio", type=float, default=0.5, help="prune: share of each layer's weights to zero")
    ap.add_argument("--calib", help="int8: .npz with x, or a folder of images")
    ap.add_argument("--format", choices=["qdq", "qoperator"], default="qdq",
                    help="int8: Q/DQ nodes (TensorRT, ONNX Runtime) or QLinear operators (tract's integer kernels)")
    ap.add_argument("--dtype", choices=["f16", "u8"], help="input-type: the input's element type")
    args = ap.parse_args()
    manifest = read_manifest(args.manifest)
    src = os.path.join(os.path.dirname(os.path.abspath(args.manifest)), manifest["model"]["file"])
    if args.kind == "int8":
        if not args.calib:
            sys.exit("variants.py: int8 needs --calib")
        samples = calibration(args.manifest, args.calib)
        quantize_int8(src, args.out, samples, manifest["input"].get("name", "input"), args.format)
        form = "QOperator" if args.format == "qoperator" else "QDQ"
        description = f"INT8 {form}, calibrated on {len(samples)} samples of {os.path.basename(args.calib)}"
    else:
        model = onnx.load(src)
        if args.kind == "prune":
            prune_unstructured(model, args.ratio)
            description = f"unstructured magnitude pruning, {args.ratio:.0%} of each layer's weights zeroed"
        elif args.kind == "input-type":
            if not args.dtype:
                sys.exit("variants.py: input-type needs --dtype")
            retype_input(model, args.dtype, manifest["preprocess"].get("scale", 1 / 255))
            description = f"{args.dtype} input, cast to float inside"
        else:
            prune_two_of_four(model)
            description = "2:4 structured pruning along input channels"
        onnx.save(model, args.out)
    print(write_manifest(args.manifest, args.out, description, args.dtype if args.kind == "input-type" else None))


if __name__ == "__main__":
    main()
