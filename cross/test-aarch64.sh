#!/usr/bin/env bash
# Builds the test suite for aarch64 in the release profile, linked as cross/build-aarch64.sh links
# the release binary (zig, glibc 2.27: the two share every dependency build), and runs it under
# qemu-aarch64: no Docker, no board. Needs what build-aarch64.sh needs, plus qemu-user and
# libc6-dev-arm64-cross (the aarch64 glibc qemu loads). Extra arguments go to `cargo test`.
#
# The emulated CPU is a Cortex-A76 (EDGERT_QEMU_CPU to change it): ARMv8.2 with FP16 and dot
# product, as Orin's Cortex-A78AE. Not qemu's default `max`, which adds what no Jetson has (SVE,
# ARMv9) and under which the model tests took 1.7x as long (cross/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
runner="qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu ${EDGERT_QEMU_CPU:-cortex-a76}"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$runner"
# The CLI tests start the edgert binary themselves; it is aarch64 too.
export EDGERT_TEST_RUNNER="$runner"
# A target folder of its own, so native builds are not blocked meanwhile.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/aarch64}
export EDGERT_GIT_HASH=${EDGERT_GIT_HASH:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
cargo-zigbuild test --release --workspace --target aarch64-unknown-linux-gnu.2.27 "$@"
