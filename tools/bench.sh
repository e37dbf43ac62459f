#!/bin/sh
# make bench: where the time to a verdict goes, on this machine. Prints a
# table and writes it to out/bench.txt; the numbers go to
# Documentation/performance.md. No pass/fail: the targets are there, not here.
#
#   warm     make test with nothing changed (every job up to date), then
#            tools-test and every job of make test (make matrix-list
#            TIER=1) run again, each timed, make run warm, one kunit/ file
#            edited -> verdict of the default config, and the same edit ->
#            make test
#   ratio    kunit.py's own x86_64 build (only CONFIG_KUNIT=y and
#            CONFIG_KUNIT_EXAMPLE_TEST=y) next to ours (kconfigs/default.config
#            with kconfigs/x86_64/, CPUHP_KUNIT_GCOV=y), same tree, cold and
#            incremental (one test source touched), and the ratio (wall, CPU,
#            objects compiled)
#   options  ours without each option we add, each right after ours again,
#            cold, to say what each costs (eight builds: about 35 min here)
#   cold     make run with an empty cache (packages installed)
#
# Usage: tools/bench.sh [warm] [ratio] [options] [cold]   (default: warm ratio)
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
# quotient A B: A / B rounded to two places (bc's scale truncates: 1312 /
# 1132 is 1.159, which bc printed as 1.15).
quotient() { printf "%.2f" "$(echo "scale=6; $1 / $2" | bc)"; }
say() { printf '%-62s %s\n' "$1" "$2" | tee -a "$table"; }
die() { echo "bench: $*" >&2; exit 1; }
[ -x /usr/bin/time ] || die "needs GNU time: apt-get install -y time"

# timed LABEL COMMAND...: run it quietly, say how long it took (wall, and
# CPU: user + system of it and its children, which other load on the
# machine disturbs far less), fail loudly.
timed() {
	label=$1; shift
	/usr/bin/time -f '%e %U %S' -o "$log.time" "$@" >"$log" 2>&1 ||
		die "$label: '$*' failed; see $log"
	say "$label" "$(awk '{printf "%.1f s (cpu %.1f s)", $1, $2 + $3}' "$log.time")"
}

warm() {
	make -s run >/dev/null 2>&1 || die "make run failed; see out/6.12/kunit.log"
	# Every job passed once (its stamp in out/.jobs/): the first make test
	# of a clone runs them all, which is not what is measured here.
	make -s test >/dev/null 2>&1 || die "make test failed; see the jobs' out/ directories"
	timed "warm make test, nothing changed (every job up to date)" make -s test
	# What each job costs when one of its inputs changed: each run again.
	start=$(now)
	timed "  tools-test (mypy, unit tests)" make -s tools-test
	make -s matrix-list TIER=1 >out/bench.jobs
	while read -r job; do
		# shellcheck disable=SC2086 # job is make arguments
		timed "  make $job" make -s $job
	done <out/bench.jobs
	say "make test, every job run again without a rebuild (all of the above)" "$(secs "$start" "$(now)") s"
	timed "warm make run, nothing changed" make -s run
	# Nothing changed: the kernel built before boots again (kunit.py exec).
	sed -n -e 's/.*Elapsed time: \([0-9.]*\)s total, \([0-9.]*\)s configuring, \([0-9.]*\)s building, \([0-9.]*\)s running.*/  kunit.py: \2 s configuring, \3 s building (no-op make), \4 s running/p' \
		-e 's/.*Elapsed time: \([0-9.]*\)s$/  kunit.py exec (no make): \1 s running/p' \
		out/6.12/kunit.log | tee -a "$table"
	f=kunit/timekeeping_crosststamp_kunit.c
	cp "$f" "$f.bench"
	trap 'mv "$repo/$f.bench" "$repo/$f"' EXIT INT TERM
	printf '/* bench %s */\n' "$(date +%s)" >>"$f"
	timed "one kunit/ file edited -> verdict (make run)" make -s run
	sed -n 's/.*Elapsed time: \([0-9.]*\)s total, \([0-9.]*\)s configuring, \([0-9.]*\)s building, \([0-9.]*\)s running.*/  kunit.py: \3 s building, \4 s running/p' \
		out/6.12/kunit.log | tee -a "$table"
	# The same edit, make test: the tier's jobs that read kunit/ run again.
	printf '/* bench %s */\n' "$(date +%s)" >>"$f"
	timed "one kunit/ file edited -> make test (the tier)" make -s test
	mv "$f.bench" "$f"
	trap - EXIT INT TERM
	make -s run >/dev/null 2>&1 || die "make run on the committed sources failed"
}

# kbuild NAME KUNITCONFIG [MAKE_OPTION]: a cold kunit.py build in a scratch
# directory (with INCR=1 also an incremental one after touching TOUCH);
# prints the times, the options set and the objects compiled (the one
# figure here that no other load on the machine can change).
kbuild() {
	name=$1 kconf=$2 opt=${3:-}
	dir=$cache/bench-$name
	rm -rf "$dir"
	set -- "$python" tools/testing/kunit/kunit.py build --arch=x86_64 --jobs="$jobs" \
		--build_dir="$dir" --kunitconfig="$kconf"
	[ -n "$opt" ] && set -- "$@" --make_options="$opt"
	(cd "$tree" && timed "  $name: cold build" flock "$cache/lock" "$@")
	if [ "${INCR:-0}" = 1 ]; then
		touch "$tree/$TOUCH"
		(cd "$tree" && timed "  $name: incremental build (one test source touched)" \
			flock "$cache/lock" "$@")
	fi
	say "  $name: options =y" "$(grep -c '=y$' "$dir/.config")"
	say "  $name: objects compiled" "$(find "$dir" -name '*.o' | wc -l)"
	rm -rf "$dir"
}

# The wall and CPU seconds of NAME's cold build and its objects, from the table.
cold_of() { sed -n "s/^  $1: cold build *\([0-9.]*\) s (cpu .*/\1/p" "$table"; }
cpu_of() { sed -n "s/^  $1: cold build .*(cpu \([0-9.]*\) s)$/\1/p" "$table"; }
objects_of() { sed -n "s/^  $1: objects compiled *\([0-9]*\)$/\1/p" "$table"; }

# Our default x86_64 kernel's fragment: default.config and what x86_64 adds.
ours_conf() {
	cat "$repo/kconfigs/default.config" "$repo/kconfigs/x86_64/default.config" \
		>"$cache/bench-ours.config"
	echo "$cache/bench-ours.config"
}

# variant NAME OPTIONS...: ours without OPTIONS (each also written as
# 'is not set'), to measure what they cost.
variant() {
	name=$1; shift
	frag=$cache/bench-$name.config
	cp "$(ours_conf)" "$frag"
	for o in "$@"; do
		sed -i "/^CONFIG_$o=/d" "$frag"
		echo "# CONFIG_$o is not set" >>"$frag"
	done
	echo "$frag"
}

setup_tree() {
	make -s prepare >/dev/null 2>&1 || die "make prepare failed"
	tree=$("$python" tools/cpuhpk/tree.py --path)
}

# kunit.py's own default x86_64 build next to ours, one after the other.
ratio() {
	setup_tree
	anchor_conf=$cache/bench-anchor.config
	printf 'CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n' >"$anchor_conf"
	INCR=1
	TOUCH=lib/kunit/kunit-example-test.c
	kbuild kunit.py-default "$anchor_conf"
	TOUCH=kernel/tests/cpuhp_install_kunit.c
	kbuild ours "$(ours_conf)" CPUHP_KUNIT_GCOV=y
	INCR=0
	rm -f "$cache/bench-ours.config"
	a=$(cold_of kunit.py-default) o=$(cold_of ours)
	ac=$(cpu_of kunit.py-default) oc=$(cpu_of ours)
	say "ratio ours / kunit.py cold build" \
		"$(quotient "$o" "$a") (cpu $(quotient "$oc" "$ac"), objects $(quotient "$(objects_of ours)" "$(objects_of kunit.py-default)"))"
	rm -f "$anchor_conf"
}

# What each option we add costs: ours without it, right after ours again
# (builds minutes apart on a shared machine drift; a pair does not).
options() {
	setup_tree
	INCR=0
	for v in "no-tracing FTRACE ENABLE_DEFAULT_TRACERS" \
		"no-smp SMP HOTPLUG_CPU CPU_HOTPLUG_STATE_CONTROL CPUHP_KUNIT_TEST" \
		"no-debug-kernel DEBUG_KERNEL CPU_HOTPLUG_STATE_CONTROL" "no-gcov GCOV_KERNEL"; do
		# shellcheck disable=SC2086 # a name and its options
		set -- $v
		name=$1
		kbuild "ours@$name" "$(ours_conf)" CPUHP_KUNIT_GCOV=y
		kbuild "ours-$name" "$(variant "$@")" CPUHP_KUNIT_GCOV=y
		say "  cost of what ours-$name drops (ours - it, pair)" \
			"$(echo "$(cold_of "ours@$name") - $(cold_of "ours-$name")" | bc) s (cpu $(echo "$(cpu_of "ours@$name") - $(cpu_of "ours-$name")" | bc) s, objects $(($(objects_of "ours@$name") - $(objects_of "ours-$name"))))"
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

[ $# -gt 0 ] || set -- warm ratio
for what in "$@"; do
	case $what in
	warm | ratio | options | cold) say "== $what ($(date -u +%H:%M), $jobs CPUs)" "" && "$what" ;;
	*) die "unknown part '$what' (warm, ratio, options, cold)" ;;
	esac
done
echo "bench: table in $table"
