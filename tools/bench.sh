#!/bin/sh
# make bench: where the time to a verdict goes, on this machine. Prints a
# table and writes it to out/bench.txt; the numbers go to README
# ("Performance"). No pass/fail: targets are in README, not here.
#
#   warm     make test with nothing changed (tools-test, then every job of
#            make matrix-list, each timed), make run warm, one kunit/ file
#            edited -> verdict of the default config
#   anchor   kunit.py's own x86_64 build (only CONFIG_KUNIT=y and
#            CONFIG_KUNIT_EXAMPLE_TEST=y) next to ours (kconfigs/default.config,
#            CPUHP_KUNIT_GCOV=y), same tree, cold and incremental (one test
#            source touched), and the ratio; then ours without each option
#            we add, cold, to say what each costs
#   cold     make run with an empty cache (packages installed)
#
# Usage: tools/bench.sh [warm] [anchor] [cold]   (default: warm anchor)
# The anchor and option builds go to scratch build directories under the
# cache (removed after), on the tree make run prepared; the cache's lock is
# held around each of them.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache=${CPUHP_KUNIT_CACHE:-$HOME/.cache/cpuhp-kunit}
python=${PYTHON:-/usr/bin/python3}
jobs=$(nproc)
mkdir -p out
table=$repo/out/bench.txt
log=$repo/out/bench.log
: >"$table"

now() { date +%s.%N; }
secs() { printf "%.1f" "$(echo "$2 - $1" | bc)"; }
say() { printf '%-62s %s\n' "$1" "$2" | tee -a "$table"; }
die() { echo "bench: $*" >&2; exit 1; }

# timed LABEL COMMAND...: run it quietly, say how long it took, fail loudly.
timed() {
	label=$1; shift
	t0=$(now)
	"$@" >"$log" 2>&1 || die "$label: '$*' failed; see $log"
	t1=$(now)
	say "$label" "$(secs "$t0" "$t1") s"
}

warm() {
	make -s run >/dev/null 2>&1 || die "make run failed; see out/6.12/kunit.log"
	t0=$(now)
	timed "  tools-test (mypy, unit tests)" make -s tools-test
	make -s matrix-list >out/bench.jobs
	while read -r job; do
		# shellcheck disable=SC2086 # job is make arguments
		timed "  make $job" make -s $job
	done <out/bench.jobs
	t1=$(now)
	say "warm make test, nothing changed (sum of the above)" "$(secs "$t0" "$t1") s"
	timed "warm make run, nothing changed" make -s run
	sed -n 's/.*Elapsed time: \([0-9.]*\)s total, \([0-9.]*\)s configuring, \([0-9.]*\)s building, \([0-9.]*\)s running.*/  kunit.py: \2 s configuring, \3 s building (no-op make), \4 s running/p' \
		out/6.12/kunit.log | tee -a "$table"
	f=kunit/timekeeping_crosststamp_kunit.c
	cp "$f" "$f.bench"
	trap 'mv "$repo/$f.bench" "$repo/$f"' EXIT INT TERM
	printf '/* bench %s */\n' "$(date +%s)" >>"$f"
	timed "one kunit/ file edited -> verdict (make run)" make -s run
	sed -n 's/.*Elapsed time: \([0-9.]*\)s total, \([0-9.]*\)s configuring, \([0-9.]*\)s building, \([0-9.]*\)s running.*/  kunit.py: \3 s building, \4 s running/p' \
		out/6.12/kunit.log | tee -a "$table"
	mv "$f.bench" "$f"
	trap - EXIT INT TERM
	make -s run >/dev/null 2>&1 || die "make run on the committed sources failed"
}

# kbuild NAME KUNITCONFIG [MAKE_OPTION]: a cold kunit.py build in a scratch
# directory, then an incremental one after touching TOUCH; prints both.
kbuild() {
	name=$1 kconf=$2 opt=${3:-}
	dir=$cache/bench-$name
	rm -rf "$dir"
	set -- "$python" tools/testing/kunit/kunit.py build --arch=x86_64 --jobs="$jobs" \
		--build_dir="$dir" --kunitconfig="$kconf"
	[ -n "$opt" ] && set -- "$@" --make_options="$opt"
	(cd "$tree" && timed "  $name: cold build" flock "$cache/lock" "$@")
	touch "$tree/$TOUCH"
	(cd "$tree" && timed "  $name: incremental build (one test source touched)" \
		flock "$cache/lock" "$@")
	grep -c '=y$' "$dir/.config" | sed "s/^/  $name: options =y: /" | tee -a "$table"
	rm -rf "$dir"
}

cold_of() { sed -n "s/^  $1: cold build *\([0-9.]*\) s$/\1/p" "$table"; }

# variant NAME OPTIONS...: default.config without OPTIONS (each also
# written as 'is not set'), to measure what they cost.
variant() {
	name=$1; shift
	frag=$cache/bench-$name.config
	cp kconfigs/default.config "$frag"
	for o in "$@"; do
		sed -i "/^CONFIG_$o=/d" "$frag"
		echo "# CONFIG_$o is not set" >>"$frag"
	done
	echo "$frag"
}

anchor() {
	make -s prepare >/dev/null 2>&1 || die "make prepare failed"
	tree=$("$python" tools/cpuhpk/tree.py --path)
	anchor_conf=$cache/bench-anchor.config
	printf 'CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n' >"$anchor_conf"
	TOUCH=lib/kunit/kunit-example-test.c
	kbuild kunit.py-default "$anchor_conf"
	TOUCH=kernel/tests/cpuhp_install_kunit.c
	kbuild ours "$repo/kconfigs/default.config" CPUHP_KUNIT_GCOV=y
	a=$(cold_of kunit.py-default) o=$(cold_of ours)
	say "ratio ours / kunit.py cold build" "$(echo "scale=2; $o / $a" | bc)"
	kbuild ours-no-tracing "$(variant no-tracing FTRACE ENABLE_DEFAULT_TRACERS)" CPUHP_KUNIT_GCOV=y
	kbuild ours-no-suspend "$(variant no-suspend SUSPEND)" CPUHP_KUNIT_GCOV=y
	kbuild ours-no-debug-kernel "$(variant no-debug-kernel DEBUG_KERNEL CPU_HOTPLUG_STATE_CONTROL)" \
		CPUHP_KUNIT_GCOV=y
	kbuild ours-no-gcov "$(variant no-gcov GCOV_KERNEL)"
	for v in no-tracing no-suspend no-debug-kernel no-gcov; do
		say "  cost of what ours-$v drops (cold, ours - it)" \
			"$(echo "$o - $(cold_of "ours-$v")" | bc) s"
	done
	rm -f "$cache"/bench-*.config
}

cold() {
	dir=$(mktemp -d)
	t0=$(now)
	CPUHP_KUNIT_CACHE=$dir make -s run >/dev/null 2>&1 || { rm -rf "$dir"; die "cold make run failed"; }
	t1=$(now)
	rm -rf "$dir"
	say "cold make run (empty cache, packages installed)" "$(secs "$t0" "$t1") s"
}

[ $# -gt 0 ] || set -- warm anchor
for what in "$@"; do
	case $what in
	warm | anchor | cold) say "== $what ($(date -u +%H:%M), $jobs CPUs)" "" && "$what" ;;
	*) die "unknown part '$what' (warm, anchor, cold)" ;;
	esac
done
echo "bench: table in $table"
