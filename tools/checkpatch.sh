#!/bin/sh
# Run the cached tree's scripts/checkpatch.pl --strict on kunit/ sources and
# src/ and src/fixes/ patches. Usage: tools/checkpatch.sh [KVER]
set -eu
kver=${1:-6.12}
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(python3 "$repo/tools/cpuhpk/tree.py" --kver "$kver" | tail -n 1)
# checkpatch runs scripts/spdxcheck.py with python3, which needs ply and git.
if ! /usr/bin/python3 -c 'import ply, git' 2>/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-ply python3-git >/dev/null
	else
		echo "checkpatch needs python3-ply and python3-git; this is not root: run 'apt-get install -y python3-ply python3-git' as root" >&2
		exit 1
	fi
fi
# The cached tree has no upstream history: commit ids cannot be checked.
cp="perl scripts/checkpatch.pl --strict --terse --no-summary --ignore UNKNOWN_COMMIT_ID"
status=0
for f in "$repo"/kunit/*.c "$repo"/kunit/*.h; do
	[ -e "$f" ] || continue
	(cd "$tree" && PATH=/usr/bin:$PATH $cp -f "$f") || status=1
done
for p in "$repo"/src/*.patch "$repo"/src/fixes/*.patch; do
	[ -e "$p" ] || continue
	(cd "$tree" && PATH=/usr/bin:$PATH $cp "$p") || status=1
done
[ "$status" = 0 ] && echo "checkpatch --strict: clean"
exit "$status"
