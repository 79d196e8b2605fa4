#!/usr/bin/env bash
# Builds the edgert that goes onto aarch64 Jetson boards, without Docker, then checks it
# (cross/check-aarch64.sh). The `dist` profile (fat LTO, one codegen unit, panic = abort) makes the
# smallest binary, within 2 % of release speed (benches/RESULTS.md); EDGERT_PROFILE=release builds
# the quicker-to-build release binary instead. zig (through cargo-zigbuild) links against glibc
# 2.27, the oldest glibc of the supported boards (JetPack 4: Ubuntu 18.04): Debian's own cross gcc
# would link against its glibc (2.36), and the binary would refuse to start on JetPack 4 and 5.
# Needs: `rustup target add aarch64-unknown-linux-gnu`, `pip install ziglang`,
# `cargo install --locked cargo-zigbuild`, and binutils-aarch64-linux-gnu (for the checks).
# Extra arguments go to `cargo zigbuild` (e.g. --features ...).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${EDGERT_PROFILE:-dist}
# release shares target/aarch64 with cross/test-aarch64.sh; dist builds every dependency its own way.
default_dir=target/aarch64
[[ $profile == release ]] || default_dir=target/aarch64-$profile
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$default_dir}
export EDGERT_GIT_HASH=${EDGERT_GIT_HASH:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
cargo zigbuild --profile "$profile" --locked --target aarch64-unknown-linux-gnu.2.27 "$@"
# The issue's size target, for the binary that ships with the default features.
if [[ $profile == dist && $# -eq 0 ]]; then
  export EDGERT_MAX_BYTES=${EDGERT_MAX_BYTES:-15000000}
fi
cross/check-aarch64.sh "$CARGO_TARGET_DIR/aarch64-unknown-linux-gnu/$profile/edgert"
