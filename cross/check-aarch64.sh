#!/usr/bin/env bash
# Checks what a board needs to run an aarch64 edgert: only glibc's own libraries (`readelf -d`),
# and no glibc symbol newer than 2.27, the oldest glibc of the supported boards (JetPack 4 is
# Ubuntu 18.04). Prints the stripped size, and fails above EDGERT_MAX_BYTES when that is set.
# Where qemu-aarch64 is installed, also runs the binary on a shipped model and photo and checks its
# answer, and on a model tract panics on, which must still be one line and exit 2 where panics
# abort: the dist binary is not the one the tests ran.
# Needs binutils-aarch64-linux-gnu (and, for the run, qemu-user and libc6-dev-arm64-cross).
#   cross/check-aarch64.sh [BINARY]   (default: the dist binary under target/aarch64-dist)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-target/aarch64-dist/aarch64-unknown-linux-gnu/dist/edgert}
glibc=2.27
[[ -f $binary ]] || { echo "check-aarch64: $binary: no such binary" >&2; exit 2; }
allowed='^(libc|libm|libdl|libpthread|librt|ld-linux-aarch64)\.so'
needed=$(aarch64-linux-gnu-readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
extra=$(grep -Ev "$allowed" <<<"$needed" || true)
if [[ -n $extra ]]; then
  echo "check-aarch64: $binary needs libraries beyond glibc: $(tr '\n' ' ' <<<"$extra")" >&2
  exit 1
fi
newest=$(aarch64-linux-gnu-objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
if [[ $(printf '%s\n' "GLIBC_$glibc" "$newest" | sort -V | tail -n 1) != "GLIBC_$glibc" ]]; then
  echo "check-aarch64: $binary needs $newest, newer than glibc $glibc" >&2
  exit 1
fi
size=$(stat -c %s "$binary")
echo "check-aarch64: $binary: $size bytes ($((size / 1048576)) MiB) stripped; needs $(tr '\n' ' ' <<<"$needed")(newest symbol $newest)"
if [[ -n ${EDGERT_MAX_BYTES:-} ]] && ((size > EDGERT_MAX_BYTES)); then
  echo "check-aarch64: $binary is $size bytes, over the $EDGERT_MAX_BYTES allowed (benches/RESULTS.md, aarch64 size)" >&2
  exit 1
fi

if ! command -v qemu-aarch64 >/dev/null; then
  echo "check-aarch64: qemu-aarch64 not installed: the binary was not run"
  exit 0
fi
# MobileNetV2 INT8 on two threads: the thread pool, edgert's kernels and the Q/DQ path at once.
if ! answer=$(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${EDGERT_QEMU_CPU:-cortex-a76}" "$binary" run \
  -m models/mobilenetv2_int8_qdq.toml -i models/images/chelsea.png --threads 2); then
  echo "check-aarch64: $binary failed under qemu-aarch64 on models/mobilenetv2_int8_qdq.toml" >&2
  exit 1
fi
if [[ $answer != "models/images/chelsea.png: 285 Egyptian cat "* ]]; then
  echo "check-aarch64: $binary under qemu-aarch64 did not answer 'Egyptian cat' first for chelsea.png: $answer" >&2
  exit 1
fi
echo "check-aarch64: under qemu-aarch64: $answer"
# A model tract panics on (tests/hardening.rs): one line and exit 2, also where panics abort.
broken=runtime/tests/fixtures/hostile/tract_gather_constant.onnx
status=0
said=$(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "${EDGERT_QEMU_CPU:-cortex-a76}" "$binary" bench \
  -m "$broken" --task raw --duration-s 0 2>&1 >/dev/null) || status=$?
if ((status != 2)) || [[ $said != "edgert: error: $broken: "*"tract failed unexpectedly: "* ]] || (($(wc -l <<<"$said") != 1)); then
  echo "check-aarch64: $binary on $broken: exit $status, not 2 with one line: $said" >&2
  exit 1
fi
echo "check-aarch64: a model tract panics on: $said"
