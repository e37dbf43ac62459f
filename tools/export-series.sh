#!/bin/sh
# Write the cached tree's commits on top of the baseline back to src/ as the
# patch series of its kernel series, src/<KVER>/ (after developing a kernel
# change there with git commit).
# Usage: tools/export-series.sh [KVER]
set -eu
kver=${1:-6.12}
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(python3 "$repo/tools/cpuhpk/tree.py" --kver "$kver" --path)
src=$repo/src/$kver
mkdir -p "$src"
rm -f "$src"/*.patch
git -C "$tree" format-patch -q --zero-commit --no-signature -o "$src" baseline..HEAD
(cd "$src" && ls ./*.patch | sed 's|^\./||' > series)
cat "$src/series"
