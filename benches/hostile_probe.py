#!/usr/bin/env python3
"""Hostile inputs against an edgert binary: damaged, truncated, special and absurd files and
numbers for every kind of file and flag edgert reads, each run once and judged.

A case holds when edgert ends within the time limit with exit 0 (a damaged file it can still read,
such as flipped bits in weights), or with exit 1 or 2 and exactly one `edgert: error:` line; it
fails on a panic, an abort or other signal, a hang, any other exit code, or an error of several
lines or without edgert's prefix. Cases are made from the repository's models, images, fixtures
and a report edgert writes first, with a fixed seed, so two runs try the same inputs.

    python3 benches/hostile_probe.py [--edgert target/release/edgert] [--jobs 2] [--seed 1]

Needs numpy (for the tensor files). Prints a table per kind of input and each failure; exits 1
if any case failed.
"""

import argparse
import collections
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
SYSFS = ROOT / "runtime/tests/fixtures/sysfs/orin-nano-jp6"
LIMIT_S = 60


def damaged(data: bytes, rng: random.Random, name: str, out: Path) -> list[Path]:
    """Truncations, bit flips, zeroed and random runs of a valid file's bytes."""
    made = []

    def put(tag: str, body: bytes) -> None:
        path = out / f"{tag}-{name}"
        path.write_bytes(body)
        made.append(path)

    for fraction in (0.0, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        put(f"cut{int(fraction * 100)}", data[: int(len(data) * fraction)])
    put("cut-last", data[:-1])
    for flips in (1, 4, 32, 256):
        for seed in range(4):
            body = bytearray(data)
            for _ in range(flips):
                i = rng.randrange(len(body))
                body[i] ^= 1 << rng.randrange(8)
            put(f"flip{flips}x{seed}", bytes(body))
    for start in (0, 0.25, 0.5):
        body = bytearray(data)
        at = int(len(body) * start)
        body[at : at + 4096] = bytes(min(4096, len(body) - at))
        put(f"zeroed{int(start * 100)}", bytes(body))
    put("random", rng.randbytes(len(data)))
    put("doubled", data + data)
    return made


def special(out: Path, name: str) -> list[Path]:
    """What is not a regular file, or is one past every cap."""
    made = []
    fifo = out / f"fifo-{name}"
    os.mkfifo(fifo)
    folder = out / f"folder-{name}"
    folder.mkdir()
    dangling = out / f"dangling-{name}"
    dangling.symlink_to(out / "nothing-here")
    loop = out / f"loop-{name}"
    loop.symlink_to(loop)
    empty = out / f"empty-{name}"
    empty.write_bytes(b"")
    sparse = out / f"sparse-{name}"
    with open(sparse, "wb") as f:
        f.truncate(5 << 30)
    made += [fifo, folder, dangling, loop, empty, sparse, Path("/dev/zero"), Path("/dev/urandom"), Path("/dev/null")]
    return made


def manifests(base: Path, rng: random.Random, out: Path) -> list[Path]:
    """A valid manifest with each value replaced by one of the wrong kind, each line dropped,
    and lines added that do not belong."""
    lines = base.read_text().splitlines()
    wrong = ['""', "-1", "0", "1e309", "nan", "inf", "-inf", "[]", "{}", "true", '"' + "x" * 5000 + '"',
             "[1, 2, 3]", "18446744073709551616", '"../../../../etc/passwd"', "[-1, 3, 8, 8]"]
    made = []

    def put(tag: str, body: list[str]) -> None:
        path = out / f"{tag}-{base.name}"
        path.write_text("\n".join(body) + "\n")
        made.append(path)

    for i, line in enumerate(lines):
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        key = line.split("=", 1)[0]
        for value in wrong:
            put(f"l{i}v{wrong.index(value)}", lines[:i] + [f"{key}= {value}"] + lines[i + 1 :])
        put(f"drop{i}", lines[:i] + lines[i + 1 :])
        put(f"twice{i}", lines[: i + 1] + [line] + lines[i + 1 :])
    for tag, extra in [("unknown", ["[nonsense]", "x = 1"]), ("task", ["[yolo]", "anchors = 3"]),
                       ("binary", ["\x00\x01\x02"]), ("unclosed", ['[model', 'file = "x'])]:
        put(tag, lines + extra)
    for k in range(20):
        body = list(lines)
        rng.shuffle(body)
        put(f"shuffled{k}", body)
    return made


def npz_files(out: Path) -> list[Path]:
    """Tensor sets with the wrong shapes, types, values and structure."""
    made = []

    def put(tag: str, **arrays) -> None:
        path = out / f"{tag}.npz"
        np.savez(path, **arrays)
        made.append(path)

    good = np.load(MODELS / "digits_test.npz")
    x, y = good["x"], good["y"]
    put("nan", x=np.full_like(x, np.nan), y=y)
    put("inf", x=np.full_like(x, np.inf), y=y)
    put("huge", x=np.full_like(x, 3e38), y=y)
    put("wrong-shape", x=x.reshape(len(x), -1)[:, :50], y=y)
    put("one-dim", x=x.reshape(-1), y=y)
    put("scalar", x=np.float32(1.0), y=y)
    put("empty", x=x[:0], y=y[:0])
    put("ints", x=(x * 255).astype(np.int64), y=y)
    put("complex", x=x.astype(np.complex64), y=y)
    put("strings", x=np.array(["a"] * len(x)), y=y)
    put("objects", x=np.array([None] * 3, dtype=object), y=y[:3])
    put("labels-short", x=x, y=y[:3])
    put("labels-negative", x=x, y=-np.ones_like(y))
    put("labels-float", x=x, y=y.astype(np.float64) + 0.5)
    put("no-x", y=y)
    put("fortran", x=np.asfortranarray(x), y=y)
    put("f64", x=x.astype(np.float64), y=y)
    put("big-endian", x=x.astype(">f4"), y=y)
    bomb = out / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        header = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 8, 8), }"
        z.writestr("x.npy", header.ljust(128 - 1, b" ") + b"\n" + bytes(64 << 20))
    made.append(bomb)
    return made


def arrivals(out: Path, rng: random.Random) -> list[Path]:
    made = []
    texts = {
        "text": "hello\nworld\n",
        "negative": "-1\n-2\n",
        "nan": "nan\ninf\n",
        "unsorted": "5\n1\n3\n",
        "huge": "1e308\n",
        "same": "1\n" * 100_000,
        "blank": "\n\n\n",
        "mixed": "0.1\nx\n0.2\n",
        "long-line": "1" * 1_000_000 + "\n",
        "binary": rng.randbytes(5000).decode("latin-1"),
    }
    for tag, text in texts.items():
        path = out / f"arrivals-{tag}.txt"
        path.write_text(text, encoding="latin-1")
        made.append(path)
    return made


def sysfs_trees(out: Path, rng: random.Random, count: int) -> list[Path]:
    """The Orin Nano fixture tree with one sensor file made wrong in each copy."""
    files = sorted(p.relative_to(SYSFS) for p in SYSFS.rglob("*") if p.is_file())
    contents = [b"", b"garbage\n", b"-5\n", b"nan\n", b"1e400\n", b"\x00\xff" * 100, b"9" * 100_000, b"1\n2\n3\n"]
    made = []
    for k in range(count):
        tree = out / f"sysfs{k}"
        shutil.copytree(SYSFS, tree, symlinks=True)
        victim = tree / rng.choice(files)
        choice = rng.randrange(len(contents) + 3)
        victim.unlink()
        if choice < len(contents):
            victim.write_bytes(contents[choice])
        elif choice == len(contents):
            os.mkfifo(victim)
        elif choice == len(contents) + 1:
            victim.mkdir()
        else:
            victim.symlink_to("/dev/zero")
        made.append(tree)
    return made


def cases(work: Path, edgert: str, rng: random.Random) -> list[tuple[str, list[str]]]:
    digits_toml = str(MODELS / "digits_mlp_nchw.toml")
    digits_npz = str(MODELS / "digits_test.npz")
    photo = str(MODELS / "images/chelsea.png")
    found: list[tuple[str, list[str]]] = []

    def folder(name: str) -> Path:
        path = work / name
        path.mkdir()
        return path

    models_dir = folder("models")
    for source in ["digits_mlp_nchw.onnx", "detect/yolov8n.onnx", "mobilenetv2_int8_qdq.onnx"]:
        data = (MODELS / source).read_bytes()
        for path in damaged(data, rng, Path(source).name, models_dir):
            found.append(("model (-m)", ["inspect", "-m", str(path)]))
            found.append(("model (-m)", ["run", "-m", str(path), "--input", photo]))
    for path in special(models_dir, "model.onnx"):
        found.append(("model (-m)", ["run", "-m", str(path), "--input", photo]))

    manifest_dir = folder("manifests")
    shutil.copy(MODELS / "digits_mlp_nchw.onnx", manifest_dir)
    for path in manifests(MODELS / "digits_mlp_nchw.toml", rng, manifest_dir):
        found.append(("manifest", ["run", "-m", str(path), "--input", digits_npz]))
    for path in special(manifest_dir, "model.toml"):
        found.append(("manifest", ["run", "-m", str(path), "--input", digits_npz]))

    images = folder("images")
    for source in ["chelsea.png", "bus.jpg"]:
        for path in damaged((MODELS / "images" / source).read_bytes(), rng, source, images):
            found.append(("image (--input)", ["run", "-m", digits_toml, "--input", str(path)]))
    for path in special(images, "photo.png"):
        found.append(("image (--input)", ["run", "-m", digits_toml, "--input", str(path)]))
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x02\x00\x00\x00"
    (images / "giant.png").write_bytes(header + bytes(64))
    found.append(("image (--input)", ["run", "-m", digits_toml, "--input", str(images / "giant.png")]))

    tensors = folder("tensors")
    for path in npz_files(tensors) + damaged(Path(digits_npz).read_bytes(), rng, "digits.npz", tensors):
        found.append(("tensors (--input .npz)", ["run", "-m", digits_toml, "--input", str(path)]))
        found.append(("tensors (validate --data)", ["validate", "--reference", digits_toml, "--candidate",
                                                      digits_toml, "--data", str(path)]))

    labels = folder("labels")
    for tag, text in {"empty": "", "one": "a\n", "binary": "\x00\xff", "huge-line": "x" * 2_000_000}.items():
        path = labels / f"{tag}.txt"
        path.write_text(text, encoding="latin-1")
        found.append(("labels (--labels)", ["run", "-m", str(MODELS / "digits_mlp_nchw.onnx"), "--labels",
                                            str(path), "--input", photo]))
    for path in special(labels, "labels.txt"):
        found.append(("labels (--labels)", ["run", "-m", str(MODELS / "digits_mlp_nchw.onnx"), "--labels",
                                            str(path), "--input", photo]))

    arrival_dir = folder("arrivals")
    for path in arrivals(arrival_dir, rng) + special(arrival_dir, "arrivals.txt"):
        found.append(("arrivals (--arrivals)", ["bench", "-m", digits_toml, "--scenario", "server", "--arrivals",
                                                str(path), "--duration-s", "1"]))

    reports = folder("reports")
    report = reports / "good.json"
    subprocess.run([edgert, "bench", "-m", digits_toml, "--duration-s", "0.3", "--idle-s", "0", "--json",
                    str(report)], check=True, capture_output=True, timeout=LIMIT_S)
    for path in damaged(report.read_bytes(), rng, "report.json", reports) + special(reports, "report.json"):
        found.append(("report (report merge/compare)", ["report", "merge", str(path)]))
        found.append(("report (report merge/compare)", ["report", "compare", str(report), str(path)]))

    for tree in sysfs_trees(folder("sysfs"), rng, 60):
        found.append(("sensor tree (--sysfs-root)", ["info", "--sysfs-root", str(tree)]))
        found.append(("sensor tree (--sysfs-root)", ["monitor", "--sysfs-root", str(tree), "--count", "2",
                                                     "--interval-ms", "10"]))
        found.append(("sensor tree (--sysfs-root)", ["doctor", "--quick", "--only", "platform,power,clocks",
                                                     "--sysfs-root", str(tree)]))

    numbers = ["-1", "0", "1e30", "nan", "inf", "abc", "", "18446744073709551616", "1.5", "-0"]
    for flag in ["--batch", "--threads", "--duration-s", "--max-memory-mb", "--confidence", "--iou", "--max-det",
                 "--imgsz", "--warmup-ms", "--qps", "--workers", "--max-batch", "--interval-ms"]:
        for value in numbers:
            found.append(("numbers (flags)", ["bench", "-m", digits_toml, flag, value, "--duration-s", "0.2"]
                          if flag != "--duration-s" else ["bench", "-m", digits_toml, flag, value]))
    for flag in ["--fps", "--width", "--height", "--buffers", "--queue-depth", "--timeout-s", "--frames"]:
        for value in numbers:
            found.append(("numbers (flags)", ["run", "-m", digits_toml, "--source", "synthetic:64x48@30",
                                              "--frames", "3", flag, value]))
    for uri in ["synthetic:0x0@30", "synthetic:99999x99999@30", "synthetic:64x48@0", "synthetic:64x48@1e9",
                "synthetic:", "nonsense://x", "file:", "v4l2:///dev/null", "csi://99", "rtsp://", "http://x"]:
        found.append(("numbers (flags)", ["run", "-m", digits_toml, "--source", uri, "--frames", "3"]))
    return found


def judge(edgert: str, case: tuple[str, list[str]]) -> tuple[str, str, list[str], str]:
    kind, args = case
    started = time.monotonic()
    child = subprocess.Popen([edgert, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = child.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return kind, "failed", args, f"still running after {LIMIT_S} s"
    took = time.monotonic() - started
    err = err.decode("utf-8", "replace")
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    code = child.returncode
    if "panicked" in err or code < 0 or code not in (0, 1, 2):
        return kind, "failed", args, f"exit {code} after {took:.1f} s: {err.strip()[-400:]}"
    if code == 0:
        return kind, "ran", args, ""
    # doctor's exit 1 is a check that failed, reported in its table.
    if args[0] == "doctor" and code == 1 and b"| area | check |" in out and not errors:
        return kind, "ran", args, ""
    if len(errors) != 1 or not errors[0].startswith("edgert: error: "):
        return kind, "failed", args, f"exit {code}, not one edgert error line: {err.strip()[-400:]}"
    return kind, "refused", args, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edgert", default=str(ROOT / "target/release/edgert"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    edgert = str(Path(args.edgert).resolve())
    with tempfile.TemporaryDirectory(prefix="edgert-probe-") as work:
        found = cases(Path(work), edgert, random.Random(args.seed))
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda c: judge(edgert, c), found))
        elapsed = time.monotonic() - started
    table = collections.defaultdict(collections.Counter)
    for kind, verdict, _, _ in results:
        table[kind][verdict] += 1
        table[kind]["tried"] += 1
    print(f"{len(results)} cases in {elapsed:.0f} s against {edgert}")
    print("| input | tried | refused in one line | ran | failed |")
    print("|---|---|---|---|---|")
    for kind, counts in table.items():
        print(f"| {kind} | {counts['tried']} | {counts['refused']} | {counts['ran']} | {counts['failed']} |")
    total = collections.Counter(v for _, v, _, _ in results)
    print(f"| all | {len(results)} | {total['refused']} | {total['ran']} | {total['failed']} |")
    failures = [(k, a, why) for k, v, a, why in results if v == "failed"]
    for kind, case_args, why in failures:
        print(f"\nFAILED ({kind}): edgert {' '.join(case_args)}\n  {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
