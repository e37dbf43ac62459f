#!/bin/sh
# Time to verdict on this machine: cold (empty cache, packages installed),
# warm rerun with no change, one kunit/ file edited, and the QEMU boot+suites
# part as kunit.py reports it. Prints a table; numbers go to the README.
# Usage: tools/bench.sh [--no-cold]
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
now() { date +%s.%N; }
secs() { printf "%.1f" "$(echo "$2 - $1" | bc)"; }
run() { make -s run >/dev/null 2>&1 || { echo "bench: make run failed; see out/6.12/kunit.log" >&2; exit 1; }; }
running() { sed -n 's/.*building, \([0-9.]*\)s running.*/\1/p' out/6.12/kunit.log; }

if [ "${1:-}" != "--no-cold" ]; then
	cold=$(mktemp -d)
	trap 'rm -rf "$cold"' EXIT
	t0=$(now); CPUHP_KUNIT_CACHE=$cold run; t1=$(now)
	echo "cold (empty cache):        $(secs "$t0" "$t1") s"
	rm -rf "$cold"
fi

run	# make sure the default cache is current
t0=$(now); run; t1=$(now)
echo "warm rerun, no change:     $(secs "$t0" "$t1") s"

f=kunit/timekeeping_crosststamp_kunit.c
cp "$f" "$f.bench"
trap 'mv "$repo/$f.bench" "$repo/$f"' EXIT INT TERM
printf '/* bench %s */\n' "$(date +%s)" >> "$f"
t0=$(now); run; t1=$(now)
echo "one kunit/ file edited:    $(secs "$t0" "$t1") s"
mv "$f.bench" "$f"
trap - EXIT INT TERM
run	# back to the committed source
echo "QEMU boot + suites:        $(running) s (kunit.py, incl. parsing)"
