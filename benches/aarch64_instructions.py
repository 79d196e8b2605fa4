#!/usr/bin/env python3
"""aarch64 speed without a board: guest instructions per inference of the aarch64 edgert under
qemu-aarch64, for its `cpu` backend and for `ort` with onnxruntime's aarch64 library, on the same
models and photo.

Each model and backend runs `edgert run` twice under qemu with the project's instruction-counting
plugin (benches/qemu_insn_count.c, built here with the host's C compiler): on a folder of one copy
of the photo, then of 1 + --extra copies. The difference divided by --extra is one inference's
instructions, preprocessing and postprocessing included (the same code on both sides), load and
first-inference costs excluded. Instructions are not cycles, but where one side executes 2× the
other's, it will not be level on a board.

qemu emulates a Cortex-A76 by default (ARMv8.2: NEON, FP16, dot product; the Orin's Cortex-A78AE
is of its generation). The guest sees a prefix folder (qemu's -L) that holds the aarch64 C
library, an ARM /proc/cpuinfo and a /sys/devices/system/cpu tree of --threads cores: without them
onnxruntime's aarch64 library reads the host's x86 CPU description and crashes
(a segmentation fault).

    cross/build-aarch64.sh
    pip download --no-deps --only-binary=:all: --platform manylinux_2_28_aarch64 \\
        --python-version 3.11 onnxruntime==1.32.0 -d /tmp/ortarm
    (cd /tmp/ortarm && python3 -m zipfile -e onnxruntime-*.whl x)
    python3 benches/aarch64_instructions.py --ort-lib /tmp/ortarm/x/onnxruntime/capi/libonnxruntime.so.1.32.0 \\
        --models models/mobilenetv2_fp32.toml,models/yolov3_tiny_coco_int8_qdq.toml

Needs: qemu-user (with plugin support, as Debian's), libc6-dev-arm64-cross, a C compiler.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# One core's /proc/cpuinfo entry on a Cortex-A76 (implementer Arm, part 0xd0b), the features an
# ARMv8.2 Linux kernel lists for it.
CPUINFO_CORE = """processor\t: {n}
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x4
CPU part\t: 0xd0b
CPU revision\t: 1

"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_prefix(at, sysroot, cores):
    """The guest's view: the aarch64 C library under /lib, an ARM CPU in /proc and /sys."""
    os.symlink(os.path.join(sysroot, "lib"), os.path.join(at, "lib"))
    write(os.path.join(at, "proc/cpuinfo"), "".join(CPUINFO_CORE.format(n=n) for n in range(cores)))
    cpus = os.path.join(at, "sys/devices/system/cpu")
    span = "0" if cores == 1 else f"0-{cores - 1}"
    for name in ("possible", "present", "online"):
        write(os.path.join(cpus, name), span + "\n")
    for n in range(cores):
        topology = os.path.join(cpus, f"cpu{n}/topology")
        for name, value in (("core_id", n), ("physical_package_id", 0), ("cluster_id", 0)):
            write(os.path.join(topology, name), f"{value}\n")
        for name in ("thread_siblings_list", "core_cpus_list"):
            write(os.path.join(topology, name), f"{n}\n")
        for name in ("core_siblings_list", "package_cpus_list", "cluster_cpus_list"):
            write(os.path.join(topology, name), span + "\n")


def build_plugin(at):
    so = os.path.join(at, "qemu_insn_count.so")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", so,
                    os.path.join(HERE, "qemu_insn_count.c")], check=True)
    return so


def photos(at, photo, count):
    folder = os.path.join(at, f"photos{count}")
    os.makedirs(folder)
    ext = os.path.splitext(photo)[1]
    for n in range(count):
        shutil.copy(photo, os.path.join(folder, f"{n}{ext}"))
    return folder


def count(args, prefix, plugin, model, backend, folder, out):
    cmd = ["qemu-aarch64", "-L", prefix, "-cpu", args.cpu, "-plugin", f"{plugin},out={out}",
           args.edgert, "run", "-m", model, "--input", folder, "--backend", backend,
           "--threads", str(args.threads)]
    if backend == "ort":
        cmd += ["--ort-lib", args.ort_lib]
    try:
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=args.timeout_s)
    except subprocess.TimeoutExpired:
        sys.exit(f"aarch64_instructions: {backend} on {model} ran past --timeout-s {args.timeout_s:g}")
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        sys.exit(f"aarch64_instructions: {backend} on {model} exited {done.returncode}: {' | '.join(tail)}")
    with open(out) as f:
        return int(f.read())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgert", default=os.path.join(
        ROOT, "target/aarch64-dist/aarch64-unknown-linux-gnu/dist/edgert"))
    p.add_argument("--ort-lib", help="onnxruntime's aarch64 libonnxruntime.so; without it, cpu only")
    p.add_argument("--models", default="models/mobilenetv2_fp32.toml,models/mobilenetv2_int8_qdq.toml,"
                   "models/yolov3_tiny_coco_int8_qdq.toml")
    p.add_argument("--photo", default=os.path.join(ROOT, "models/images/bus.jpg"))
    p.add_argument("--extra", type=int, default=4, help="inferences counted (past the first)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cpu", default="cortex-a76", help="qemu's -cpu")
    p.add_argument("--sysroot", default="/usr/aarch64-linux-gnu")
    p.add_argument("--timeout-s", type=float, default=1800)
    args = p.parse_args()
    if args.extra < 1 or args.threads < 1:
        sys.exit("aarch64_instructions: --extra and --threads must be at least 1")
    for path, what in ((args.edgert, "--edgert"), (args.photo, "--photo"), (args.ort_lib, "--ort-lib")):
        if path is not None and not os.path.isfile(path):
            sys.exit(f"aarch64_instructions: {what} {path}: no such file")
    backends = ["cpu"] + (["ort"] if args.ort_lib else [])

    with tempfile.TemporaryDirectory(prefix="edgert-insns-") as tmp:
        prefix = os.path.join(tmp, "prefix")
        os.makedirs(prefix)
        make_prefix(prefix, args.sysroot, args.threads)
        plugin = build_plugin(tmp)
        one, more = photos(tmp, args.photo, 1), photos(tmp, args.photo, 1 + args.extra)
        print(f"guest instructions per inference, qemu-aarch64 -cpu {args.cpu}, {args.threads} thread(s), "
              f"{os.path.basename(args.photo)}, {args.extra} inferences past the first")
        print("| model | " + " | ".join(f"`{b}`" for b in backends) + (" | cpu / ort |" if len(backends) > 1 else " |"))
        print("|---" * (len(backends) + 1 + (len(backends) > 1)) + "|")
        for model in args.models.split(","):
            per = {}
            for backend in backends:
                base = count(args, prefix, plugin, model, backend, one, os.path.join(tmp, "a"))
                total = count(args, prefix, plugin, model, backend, more, os.path.join(tmp, "b"))
                per[backend] = (total - base) / args.extra
            cells = [f"{per[b] / 1e6:,.1f} M" for b in backends]
            if len(backends) > 1:
                cells.append(f"{per['cpu'] / per['ort']:.2f}×")
            print(f"| {os.path.basename(model)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
