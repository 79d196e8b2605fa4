#!/usr/bin/env python3
"""edgert's image preprocessing against PIL's (torchvision's recipe) and OpenCV's, on the same decoded
photos, one thread each, in one run; and whether the classifier's top-1 class through edgert agrees
with ONNX Runtime fed by PIL's preprocessing.

The recipe is the ImageNet classifiers' manifest: short side to 256, centre crop 224, /255, ImageNet
mean and std, RGB, NCHW f32. PIL: `Image.resize(BILINEAR)` (antialiased at any shrink), then crop and
normalize in numpy, as torchvision's transforms do. OpenCV: `cv2.resize(INTER_LINEAR)` (not
antialiased), crop, normalize, transpose. edgert: the preprocess stage of `edgert bench --input
PHOTO` (p50 over its iterations: decoded image to input tensor, allocation included).

The agreement set is the shipped photos and their mirror images, each as it is and rescaled (PIL,
Lanczos) so that the short side shrinks 1.0x to 4.0x in steps of 0.1 to reach 256 (448 photos),
written to a temporary folder; the first, smaller set (42: unmirrored, as they are and at shrinks
1.2, 1.8, 2.5, 3.2 and 4) is reported beside it, and the shipped photos as they are (7).

    cargo build --release
    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install onnxruntime numpy pillow opencv-python-headless
    /tmp/peer/bin/python benches/peer_pil_preprocess.py [--edgert target/release/edgert] [--before OLD_EDGERT]
"""
import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np
import onnxruntime
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
MODELS = ["mobilenetv2_fp32", "mobilenetv2_int8_qdq"]
cv2.setNumThreads(1)


def normalize(rgb):
    x = (rgb.astype(np.float32) * (1 / 255) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def pil(image):
    w, h = image.size
    s = 256 / min(w, h)
    nw, nh = max(round(w * s), 224), max(round(h * s), 224)
    small = image.resize((nw, nh), Image.BILINEAR)
    x, y = (nw - 224) // 2, (nh - 224) // 2
    return normalize(np.asarray(small.crop((x, y, x + 224, y + 224))))


def opencv(rgb):
    h, w = rgb.shape[:2]
    s = 256 / min(w, h)
    nw, nh = max(round(w * s), 224), max(round(h * s), 224)
    small = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_LINEAR)
    x, y = (nw - 224) // 2, (nh - 224) // 2
    return normalize(small[y:y + 224, x:x + 224])


def p50_ms(fn, arg, iterations):
    for _ in range(10):
        fn(arg)
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        fn(arg)
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def edgert_preprocess_ms(edgert, photo, seconds):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run([edgert, "bench", "-m", os.path.join(ROOT, "models/mobilenetv2_int8_qdq.toml"),
                        "--input", photo, "--threads", "1", "--duration-s", str(seconds),
                        "--json", report.name], check=True, capture_output=True)
        return json.load(open(report.name))["runs"][0]["stages"]["preprocess"]["p50_ms"]


def edgert_top1(edgert, model, folder, photos):
    out = subprocess.run([edgert, "run", "-m", os.path.join(ROOT, f"models/{model}.toml"), "--input",
                          folder, "--json"], check=True, capture_output=True, text=True).stdout
    by_input = {}
    for line in out.splitlines():
        item = json.loads(line)
        by_input[os.path.basename(item["input"])] = item["prediction"]["classes"][0]["class_id"]
    return [by_input[os.path.basename(p)] for p in photos]


# The first agreement set (42 photos): the shipped photos as they are and at these shrinks.
FIRST_SET_SHRINKS = (1.2, 1.8, 2.5, 3.2, 4.0)


def agreement_set(folder):
    """The shipped photos and their mirror images, each as it is and rescaled (PIL, Lanczos) so
    that the short side shrinks 1.0x to 4.0x in steps of 0.1 to reach 256, all in `folder`; which
    of them make the first, smaller set; and which are the shipped photos as they are."""
    photos, first, shipped = [], [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "models/images/*"))):
        image = Image.open(path).convert("RGB")
        name = os.path.splitext(os.path.basename(path))[0]
        for mirrored in (False, True):
            flipped = image.transpose(Image.FLIP_LEFT_RIGHT) if mirrored else image
            stem = os.path.join(folder, name + ("_mirrored" if mirrored else ""))
            # As it is: the file itself (its JPEG decoded by each side's own decoder), or mirrored.
            as_is = shutil.copy(path, folder) if not mirrored else stem + ".png"
            if mirrored:
                flipped.save(as_is)
            photos.append(as_is)
            first.append(not mirrored)
            shipped.append(not mirrored)
            for tenths in range(10, 41):
                shrink = tenths / 10
                s = shrink * 256 / min(image.size)
                size = (round(image.width * s), round(image.height * s))
                flipped.resize(size, Image.LANCZOS).save(f"{stem}_x{shrink:.1f}.png")
                photos.append(f"{stem}_x{shrink:.1f}.png")
                first.append(not mirrored and shrink in FIRST_SET_SHRINKS)
                shipped.append(False)
    return photos, first, shipped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--edgert", default=os.path.join(ROOT, "target/release/edgert"))
    parser.add_argument("--before", help="an older edgert binary, measured the same way")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--duration-s", type=float, default=2.0)
    args = parser.parse_args()
    binaries = {"edgert": args.edgert}
    if args.before:
        binaries["before"] = args.before
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"Pillow {Image.__version__}, OpenCV {cv2.__version__}, onnxruntime {onnxruntime.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        timed = [os.path.join(ROOT, "models/images/chelsea.png"), os.path.join(ROOT, "models/images/zidane.jpg")]
        frame = os.path.join(folder, "motorcycle_640x480.png")
        Image.open(os.path.join(ROOT, "models/images/motorcycle_left.png")).convert("RGB").resize(
            (640, 480), Image.LANCZOS).save(frame)
        timed.insert(1, frame)
        print("\n| photo | PIL p50 | OpenCV p50 | " + " | ".join(f"{b} p50" for b in binaries)
              + " | edgert / PIL | edgert / OpenCV |")
        print("|---|---|---|" + "---|" * len(binaries) + "---|---|")
        for photo in timed:
            image = Image.open(photo).convert("RGB")
            rgb = np.asarray(image)
            t_pil = p50_ms(pil, image, args.iterations)
            t_cv = p50_ms(opencv, rgb, args.iterations)
            t_ours = {b: edgert_preprocess_ms(path, photo, args.duration_s) for b, path in binaries.items()}
            cells = " | ".join(f"{t:.2f} ms" for t in t_ours.values())
            print(f"| {os.path.basename(photo)} {image.width}x{image.height} | {t_pil:.2f} ms | {t_cv:.2f} ms | "
                  f"{cells} | {t_ours['edgert'] / t_pil:.2f}x | {t_ours['edgert'] / t_cv:.2f}x |")

        agree = os.path.join(folder, "agreement")
        os.mkdir(agree)
        photos, first, shipped = agreement_set(agree)
        print(f"\ntop-1 agreement with onnxruntime fed by PIL: all {len(photos)} photos, "
              f"the first set's {sum(first)}, the {sum(shipped)} shipped as they are")
        print("\n| model | " + " | ".join(binaries) + " | OpenCV's preprocessing |")
        print("|---|" + "---|" * (len(binaries) + 1))

        def agreement(got, want):
            same = [a == b for a, b in zip(got, want)]
            return ", ".join(f"{sum(s for s, i in zip(same, subset) if i)} / {sum(subset)}"
                             for subset in ([True] * len(same), first, shipped))

        for model in MODELS:
            session = onnxruntime.InferenceSession(os.path.join(ROOT, f"models/{model}.onnx"),
                                                   providers=["CPUExecutionProvider"])
            name = session.get_inputs()[0].name
            top1 = lambda x: int(np.argmax(session.run(None, {name: x[None]})[0]))
            want = [top1(pil(Image.open(p).convert("RGB"))) for p in photos]
            cv_top1 = [top1(opencv(np.asarray(Image.open(p).convert("RGB")))) for p in photos]
            cells = [agreement(edgert_top1(path, model, agree, photos), want) for path in binaries.values()]
            print(f"| {model} | " + " | ".join(cells) + f" | {agreement(cv_top1, want)} |")


if __name__ == "__main__":
    sys.exit(main())
