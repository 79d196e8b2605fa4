#!/usr/bin/env bash
# Builds edgert for aarch64-unknown-linux-gnu and runs the test suite under qemu-aarch64: no Docker,
# no board. Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user and
# `rustup target add aarch64-unknown-linux-gnu`. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
runner="qemu-aarch64 -L /usr/aarch64-linux-gnu"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$runner"
# The CLI tests start the edgert binary themselves; it is aarch64 too.
export EDGERT_TEST_RUNNER="$runner"
# A target folder of its own, so native builds are not blocked meanwhile.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/aarch64}
cargo test --workspace --target aarch64-unknown-linux-gnu "$@"
