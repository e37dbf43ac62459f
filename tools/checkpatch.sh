#!/bin/sh
# Run the cached tree's scripts/checkpatch.pl --strict on kunit/ sources and
# the patches of src/<KVER>/, src/<KVER>/fixes/ and fixes/upstream/. Usage: tools/checkpatch.sh [KVER]
set -eu
kver=${1:-6.12}
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(python3 "$repo/tools/cpuhpk/tree.py" --kver "$kver" | tail -n 1)
# A pipeline's status is its last command's: check what came out instead.
if [ ! -f "$tree/scripts/checkpatch.pl" ]; then
	echo "checkpatch: no prepared linux-source-$kver tree (make prepare KVER=$kver said why above)" >&2
	exit 1
fi
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
# The test sources build on every kernel series of src/ (6.1 and 6.12):
# one version check is theirs by design (LINUX_VERSION_CODE, with the
# constant on the left as checkpatch sees it), and the compat header's
# KUNIT_ARRAY_PARAM_DESC() uses the array twice and a member name that
# cannot be parenthesised, as 6.12's own does.
kunit_ignore=LINUX_VERSION_CODE,CONSTANT_COMPARISON
for f in "$repo"/kunit/*.c "$repo"/kunit/*.h; do
	[ -e "$f" ] || continue
	ignore=$kunit_ignore
	[ "${f##*/}" = cpuhp_kunit_compat.h ] && ignore=$ignore,MACRO_ARG_REUSE,MACRO_ARG_PRECEDENCE
	(cd "$tree" && PATH=/usr/bin:$PATH $cp --ignore "$ignore" -f "$f") || status=1
done
for p in "$repo"/src/"$kver"/*.patch "$repo"/src/"$kver"/fixes/*.patch "$repo"/src/"$kver"/fixes/upstream/*.patch; do
	[ -e "$p" ] || continue
	(cd "$tree" && PATH=/usr/bin:$PATH $cp "$p") || status=1
done
[ "$status" = 0 ] && echo "checkpatch --strict: clean"
exit "$status"
