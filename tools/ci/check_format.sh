#!/usr/bin/env bash
# CI: every C++/CUDA source is as clang-format (the root .clang-format) writes
# it. Fix with: git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/../.."
cf=$(command -v clang-format-14 || command -v clang-format) || { echo "check_format.sh: clang-format not found" >&2; exit 1; }
git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs "$cf" --dry-run -Werror
echo "check_format.sh: $(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | wc -l) files formatted"
