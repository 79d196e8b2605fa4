#!/usr/bin/env bash
# Checks what a board needs to run an aarch64 edgert: only glibc's own libraries (`readelf -d`),
# and no glibc symbol newer than 2.27, the oldest glibc of the supported boards (JetPack 4 is
# Ubuntu 18.04). Prints the stripped size. Needs binutils-aarch64-linux-gnu.
#   cross/check-aarch64.sh [BINARY]   (default: the release binary under target/aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-${CARGO_TARGET_DIR:-target/aarch64}/aarch64-unknown-linux-gnu/release/edgert}
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
