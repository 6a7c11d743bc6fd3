#!/usr/bin/env bash
# Installs what is missing from Debian's packages (idempotent, quiet when all is
# there), then configures and builds autotune into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build pkg-config python3 sqlite3
          libboost-dev nlohmann-json3-dev libsqlite3-dev libcurl4-openssl-dev
          libcli11-dev doctest-dev libyaml-cpp-dev libeigen3-dev python3-optuna)
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

build_dir=${AUTOTUNE_BUILD_DIR:-build}
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
if ! cmake --build "$build_dir" -j "$(nproc)" >"$build_dir/build.log" 2>&1; then
  tail -n 60 "$build_dir/build.log" >&2
  echo "setup: build failed (full log: $build_dir/build.log)" >&2
  exit 1
fi
