#!/usr/bin/env bash
# Installs what is missing from Debian's packages (idempotent, quiet when all is
# there), then configures and builds autotune into build/, saying how far the
# build has come.
#
#   scripts/setup.sh            the autotune executable only (what the README's first command needs)
#   scripts/setup.sh --all      also every test and benchmark, Debian's python3-numpy for the NKI
#                               export test, python3-yaml for the docs' YAML check, python3-optuna and
#                               python3-xgboost for the search protocol's TPE and AutoTVM peers, the
#                               PostgreSQL server the store's tests start a throwaway cluster of, and
#                               Chromium for the report's browser tests
#                               (scripts/test.sh uses this)
#   scripts/setup.sh --optuna   also Debian's python3-optuna, for bench/search_compare.sh's TPE column and
#                               bench/search_protocol.py --strategy tpe
#   scripts/setup.sh --kernel-tuner   also Debian's python3-numpy, python3-scipy and python3-sklearn, for
#                               bench/search_protocol.py --strategy kt:NAME (Kernel Tuner's strategies, read
#                               from a checkout of Kernel Tuner, which is not in Debian)
#   scripts/setup.sh --autotvm  also Debian's python3-numpy and python3-xgboost, for bench/search_protocol.py
#                               --strategy autotvm (AutoTVM's XGBTuner, bench/search_autotvm.py)
#   scripts/setup.sh --packages-only   the packages only (Debian's and web/'s npm ones), no build
set -euo pipefail
cd "$(dirname "$0")/.."

all=0
optuna=0
kernel_tuner=0
autotvm=0
packages_only=0
for argument in "$@"; do
  case "$argument" in
    --all) all=1 ;;
    --optuna) optuna=1 ;;
    --kernel-tuner) kernel_tuner=1 ;;
    --autotvm) autotvm=1 ;;
    --packages-only) packages_only=1 ;;
    *) echo "setup: unknown option '$argument' (accepted: --all, --optuna, --kernel-tuner, --autotvm, --packages-only)" >&2; exit 2 ;;
  esac
done

packages=(g++ cmake ninja-build pkg-config python3 sqlite3 bubblewrap
          libboost-dev nlohmann-json3-dev libsqlite3-dev libcurl4-openssl-dev
          libcli11-dev doctest-dev libyaml-cpp-dev libeigen3-dev libpq-dev libpqxx-dev)
((all)) && packages+=(python3-numpy python3-yaml python3-optuna python3-xgboost postgresql chromium)
# Node.js and npm fetch the pages' charting library (web/package.json); a machine may have its own.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
((optuna)) && packages+=(python3-optuna)
((kernel_tuner)) && packages+=(python3-numpy python3-scipy python3-sklearn)
((autotvm)) && packages+=(python3-numpy python3-xgboost)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The report's charting library (inlined into every page) and the browser tests' driver, pinned by
# web/package-lock.json.
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "setup: installing web/'s npm packages (ECharts, playwright-core)" >&2
  npm ci --prefix web --no-audit --no-fund --loglevel=error >/dev/null
fi

((packages_only)) && exit 0
build_dir=${AUTOTUNE_BUILD_DIR:-build}
if [ ! -f "$build_dir/build.ninja" ]; then
  echo "setup: configuring $build_dir/" >&2
  # shellcheck disable=SC2086  # AUTOTUNE_CMAKE_ARGS: extra -D options, word-split on purpose
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${AUTOTUNE_CMAKE_ARGS:-} >/dev/null
fi
targets=(--target autotune)
what="autotune"
if ((all)); then
  targets=()
  what="autotune, its tests and benchmarks"
fi
# Ninja's "[done/total]" lines, reported about every tenth of the way; the
# whole log stays in build.log.
echo "setup: building $what with $(nproc) jobs (log: $build_dir/build.log)" >&2
set +e
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}" 2>&1 | tee "$build_dir/build.log" |
  awk '
    /^\[[0-9]+\/[0-9]+\]/ {
      gsub(/[][]/, "", $1);
      split($1, n, "/");
      step = int(10 * n[1] / n[2]);
      if (step > last) { last = step; printf "setup: %3d%% of %d build steps\n", 10 * step, n[2] > "/dev/stderr"; fflush("/dev/stderr") }
    }'
status=${PIPESTATUS[0]}
set -e
if ((status != 0)); then
  tail -n 60 "$build_dir/build.log" >&2
  echo "setup: build failed (full log: $build_dir/build.log)" >&2
  exit 1
fi
echo "setup: done: $build_dir/autotune" >&2
