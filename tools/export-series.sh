#!/bin/sh
# Write the cached tree's commits on top of the baseline back to src/ as the
# patch series (after developing a kernel change there with git commit).
# Usage: tools/export-series.sh [KVER]
set -eu
kver=${1:-6.12}
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(python3 "$repo/tools/cpuhpk/tree.py" --kver "$kver" --path)
rm -f "$repo"/src/*.patch
git -C "$tree" format-patch -q --zero-commit --no-signature -o "$repo/src" baseline..HEAD
(cd "$repo/src" && ls ./*.patch | sed 's|^\./||' > series)
cat "$repo/src/series"
