#!/usr/bin/env bash
# Installs, builds, then runs every test through CTest; non-zero on any failure.
#
#   scripts/test.sh [CTEST ARGS...]             the build in build/
#   scripts/test.sh --sanitize [CTEST ARGS...]  everything built with ASan and UBSan in build-sanitize/
#                                               (user kernels compiled with the same flags); any report fails
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  export AUTOTUNE_BUILD_DIR=${AUTOTUNE_BUILD_DIR:-build-sanitize}
  export AUTOTUNE_CMAKE_ARGS="${AUTOTUNE_CMAKE_ARGS:-} -DAUTOTUNE_SANITIZE=ON"
  # Leak checking needs ptrace, which containers often refuse; memory errors and UB are what is checked.
  # handle_segv=0: a kernel that crashes on purpose (tests/e2e/test_kernel_sources.py) must die of SIGSEGV.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:handle_segv=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
scripts/setup.sh --all
build_dir=${AUTOTUNE_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
