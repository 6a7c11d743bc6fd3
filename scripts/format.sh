#!/usr/bin/env bash
# Formats the tracked C++ sources (*.cpp, *.hpp) with .clang-format, and nothing else: clang-format
# formats whatever it is given as C++, so Markdown, YAML and the web pages are never passed to it
# (tests/e2e/test_docs_markdown.py catches the damage if they are).
#
#   scripts/format.sh           format in place
#   scripts/format.sh --check   list the files that are not formatted; non-zero if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${files[@]}"
elif [ -n "${1:-}" ]; then
  echo "format: unknown option '$1' (accepted: --check)" >&2
  exit 2
else
  clang-format -i "${files[@]}"
fi
