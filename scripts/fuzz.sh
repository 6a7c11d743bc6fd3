#!/usr/bin/env bash
# Runs autotune's libFuzzer targets (fuzz/, docs/fuzzing.md), each for a given time, from the committed
# seed corpus; new inputs go to a scratch folder, never into the committed corpus.
#
#   scripts/fuzz.sh [--build-dir DIR] [SECONDS_PER_TARGET] [TARGET...]    default: 60 s, every target
#
# Builds with clang 16 (Debian's clang-16 and libclang-rt-16-dev, installed here when missing; clang 14
# lacks what libstdc++ 12's std::source_location needs) in a build folder of its own, outside the
# checkout (which may be read-only or shared): DIR, else $AUTOTUNE_FUZZ_BUILD_DIR, else
# ${TMPDIR:-/tmp}/autotune-fuzz-build-<user>-<checksum of the checkout's path>. It writes nothing into
# the checkout (web/'s npm packages aside, when they are missing).
# Prints, per target, the executions run, the coverage reached and the crashes found (0, or where the
# crashing input was saved); exits non-zero when any target found one. Reproduce a finding with
#   BUILD_DIR/fuzz/fuzz_TARGET ARTIFACT
# then minimise it (-minimize_crash=1), fix the reader, and add the input to fuzz/corpus/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AUTOTUNE_FUZZ_BUILD_DIR:-}
if [ "${1:-}" = "--build-dir" ]; then
  [ $# -ge 2 ] || { echo "fuzz: --build-dir needs a folder" >&2; exit 2; }
  build=$2
  shift 2
fi
if [ -z "$build" ]; then
  build="${TMPDIR:-/tmp}/autotune-fuzz-build-$(id -un)-$(pwd -P | cksum | cut -d' ' -f1)"
fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(goal space expression cachefile plugin_reply llm_reply cli_values)

missing=()
command -v clang++-16 >/dev/null 2>&1 || missing+=(clang-16)
compgen -G "/usr/lib/llvm-16/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || missing+=(libclang-rt-16-dev)
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
scripts/setup.sh --packages-only >/dev/null  # Debian's libraries and web/'s packages the build needs
mkdir -p "$build"
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++-16 CC=clang-16 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTOTUNE_FUZZ=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >"$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log" >&2; echo "fuzz: build failed ($build/build.log)" >&2; exit 1; }

scratch=$(mktemp -d /tmp/autotune-fuzz-XXXXXX)
found=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf "%-14s %12s %8s %8s  %s\n" target executions cov ft crashes
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target/corpus" "$scratch/$target/artifacts"
  log="$scratch/$target/log"
  set +e
  "$build/fuzz/fuzz_$target" "$scratch/$target/corpus" "fuzz/corpus/$target" -max_total_time="$seconds" \
    -max_len=262144 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$scratch/$target/artifacts/" >"$log" 2>&1
  set -e
  executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || echo "?")
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*' || echo "?")
  artifacts=$(find "$scratch/$target/artifacts" -type f | head -n 3 | tr '\n' ' ')
  if [ -n "$artifacts" ]; then
    found=1
    crashes="$(find "$scratch/$target/artifacts" -type f | wc -l): $artifacts(log: $log)"
  else
    crashes=0
  fi
  printf "%-14s %12s %8s %8s  %s\n" "$target" "$executions" "$cov" "$ft" "$crashes"
done
echo "new inputs and logs: $scratch"
exit $found
