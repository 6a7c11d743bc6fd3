#!/usr/bin/env bash
# Installs, builds, then runs every test through CTest; non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --all
build_dir=${AUTOTUNE_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
