#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The CPU hotplug sysfs interface as a user drives it (merge 710d60cbf1b3:
# /sys/devices/system/cpu/hotplug/states, cpuN/hotplug/{state,target,fail}),
# from user space, in KTAP shaped like a KUnit suite so that the harness
# judges it with the others. Runs from the initramfs of every run (busybox sh)
# after the KUnit suites; states are looked up by name, never by number.
#
# The harness reads SUITE and CASES below to know what must be reported.
# Arguments, if any, are the cases to run (the harness's FILTER).

SUITE=cpuhp_sysfs
CASES="states_lists_the_table target_down_and_up online_file_follows_target fail_rolls_back_online bad_target_input bad_fail_input boot_cpu_stays hibernate_cpus_come_back hibernate_fail_aborts hibernate_offline_cpu_stays smt_control_off_on smt_control_fail_keeps_state"
[ $# -gt 0 ] && CASES="$*"

SYS=/sys/devices/system/cpu
mkdir -p "${TMPDIR:=/tmp}"
ERR=$TMPDIR/cpuhp_sysfs.err
n=0
failed=0

# Number of the state called $1 in the states file, or nothing.
state_nr() {
	sed -n "s/^ *\([0-9]*\): $1\$/\1/p" "$SYS/hotplug/states"
}

# The last online CPU other than 0.
last_cpu() {
	cpu=
	for d in "$SYS"/cpu[0-9]*; do
		c=${d##*/cpu}
		[ "$c" != 0 ] && [ "$(cat "$d/online" 2>/dev/null)" = 1 ] && cpu=$c
	done
	echo "$cpu"
}

# write FILE VALUE EXPECTED_ERROR: the write fails with that error text
# (e.g. "Invalid argument"), or succeeds when EXPECTED_ERROR is empty.
write() {
	if echo "$2" 2>"$ERR" >"$1"; then
		[ -z "$3" ] && return 0
		echo "    # write of '$2' to $1 succeeded, wanted: $3"
		return 1
	fi
	[ -n "$3" ] && grep -q "$3" "$ERR" && return 0
	echo "    # write of '$2' to $1 failed: $(cat "$ERR"), wanted: ${3:-success}"
	return 1
}

# expect WHAT GOT WANT
expect() {
	[ "$2" = "$3" ] && return 0
	echo "    # $1 is '$2', wanted '$3'"
	return 1
}

result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "    ok $n $2"
	else
		failed=1
		echo "    not ok $n $2"
	fi
}

states_lists_the_table() {
	expect "state 0" "$(sed -n 's/^ *0: //p' "$SYS/hotplug/states")" offline &&
	expect "last state" "$(tail -n 1 "$SYS/hotplug/states" | sed 's/^ *[0-9]*: //')" online &&
	[ -n "$(state_nr sched:active)" ]
}

# Is CPU $1 in the online mask (/sys/devices/system/cpu/online)? 1 or 0.
in_online_mask() {
	for range in $(tr ',' ' ' <"$SYS/online"); do
		lo=${range%-*} hi=${range#*-}
		[ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ] && { echo 1; return; }
	done
	echo 0
}

# cpuN driven to a PREPARE-section state and back, as the target file promises.
target_down_and_up() {
	cpu=$1 on=$(state_nr online) to=$(state_nr workqueue:prepare)
	write "$SYS/cpu$cpu/hotplug/target" "$to" &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$to" &&
	expect "cpu$cpu in the online mask" "$(in_online_mask "$cpu")" 0 &&
	write "$SYS/cpu$cpu/hotplug/target" "$on" &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$on" &&
	expect "cpu$cpu in the online mask" "$(in_online_mask "$cpu")" 1
}

# cpuN/online says what the target file did (it reads the device's state).
online_file_follows_target() {
	cpu=$1 on=$(state_nr online)
	write "$SYS/cpu$cpu/hotplug/target" "$(state_nr offline)" &&
	expect "cpu$cpu/online after target offline" "$(cat "$SYS/cpu$cpu/online")" 0 &&
	write "$SYS/cpu$cpu/hotplug/target" "$on" &&
	expect "cpu$cpu/online after target online" "$(cat "$SYS/cpu$cpu/online")" 1
}

# A failure armed through fail makes the write of online fail and roll back.
fail_rolls_back_online() {
	cpu=$1 on=$(state_nr online) s=$(state_nr sched:active)
	write "$SYS/cpu$cpu/hotplug/fail" "$s" &&
	write "$SYS/cpu$cpu/online" 0 "Resource temporarily unavailable" &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$on" &&
	expect "cpu$cpu fail" "$(cat "$SYS/cpu$cpu/hotplug/fail")" -1 &&
	expect "cpu$cpu online" "$(cat "$SYS/cpu$cpu/online")" 1 &&
	write "$SYS/cpu$cpu/online" 0 && write "$SYS/cpu$cpu/online" 1
}

# Bad targets get -EINVAL and change nothing.
bad_target_input() {
	cpu=$1 on=$(state_nr online) f=$SYS/cpu$1/hotplug/target
	unnamed=1
	while grep -q "^ *$unnamed: " "$SYS/hotplug/states"; do unnamed=$((unnamed + 1)); done
	write "$f" abc "Invalid argument" &&
	write "$f" 9999 "Invalid argument" &&
	write "$f" -5 "Invalid argument" &&
	write "$f" "$unnamed" "Invalid argument" &&
	write "$f" "$(state_nr cpu:bringup)" "Invalid argument" &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$on" &&
	expect "cpu$cpu target" "$(cat "$f")" "$on"
}

# Bad failures get -EINVAL and arm nothing.
bad_fail_input() {
	cpu=$1 f=$SYS/cpu$1/hotplug/fail
	write "$f" abc "Invalid argument" &&
	write "$f" 9999 "Invalid argument" &&
	write "$f" "$(state_nr sched:starting)" "Invalid argument" &&
	write "$f" "$(state_nr workqueue:prepare)" "Invalid argument" &&
	write "$f" "$(state_nr online)" "Invalid argument" &&
	expect "cpu$cpu fail" "$(cat "$f")" -1
}

# The boot CPU cannot go offline on x86: no online file, or the write fails.
boot_cpu_stays() {
	if [ -e "$SYS/cpu0/online" ]; then
		write "$SYS/cpu0/online" 0 "Operation not permitted\|Device or resource busy"
	fi
	expect "cpu0 state" "$(cat "$SYS/cpu0/hotplug/state")" "$(state_nr online)"
}

# Hibernation as far as the power management test level $1 goes
# (/sys/power/pm_test, CONFIG_PM_DEBUG): "processors" notifies the PM
# chain (which disables CPU hotplug), freezes the tasks, suspends the
# devices, takes the secondary CPUs down through freeze_secondary_cpus() and
# brings everything back. No image is
# made (in_suspend stays 0), so no swap device is needed. Suspend to RAM
# takes the same path but needs ACPI S3, which this guest has not (no PCI:
# QEMU's DSDT does not load). Returns the write's status; the error text
# is in $ERR.
suspend_to() {
	echo "$1" >/sys/power/pm_test || return 1
	echo disk 2>"$ERR" >/sys/power/state
}

# Can this guest hibernate (CONFIG_HIBERNATION) under pm_test? 1 or 0.
can_suspend() {
	[ -w /sys/power/pm_test ] && grep -qw disk /sys/power/state && echo 1 || echo 0
}

# Every CPU in $1 (numbers) is online at the online state.
all_online() {
	on=$(state_nr online)
	for k in $1; do
		expect "cpu$k online" "$(cat "$SYS/cpu$k/online" 2>/dev/null || echo 1)" 1 &&
		expect "cpu$k state" "$(cat "$SYS/cpu$k/hotplug/state")" "$on" || return 1
	done
}

# The CPUs online now, by number.
online_cpus() {
	for d in "$SYS"/cpu[0-9]*; do
		[ "$(cat "$d/online" 2>/dev/null || echo 1)" = 1 ] && echo "${d##*/cpu}"
	done
}

# Hibernation at the processors test level takes the secondary CPUs down
# and brings every one of them back online (freeze/thaw_secondary_cpus).
# Each hibernation at a test level waits 5 s there (hibernation_debug_sleep(),
# not adjustable): three in all.
hibernate_cpus_come_back() {
	cpus=$(online_cpus)
	suspend_to processors || { echo "    # hibernation (processors): $(cat "$ERR")"; return 1; }
	all_online "$cpus"
}

# A teardown that fails while hibernation takes CPU N down aborts it with
# its error; every CPU comes back, the failure has fired, and the next
# hibernation goes through.
hibernate_fail_aborts() {
	cpu=$1 cpus=$(online_cpus)
	write "$SYS/cpu$cpu/hotplug/fail" "$(state_nr sched:active)" || return 1
	if suspend_to processors; then
		echo "    # hibernation with cpu$cpu's sched:active teardown failing succeeded"
		return 1
	fi
	grep -q "Resource temporarily unavailable" "$ERR" ||
		{ echo "    # hibernation failed with '$(cat "$ERR")', wanted the teardown's EAGAIN"; return 1; }
	all_online "$cpus" &&
	expect "cpu$cpu fail" "$(cat "$SYS/cpu$cpu/hotplug/fail")" -1 &&
	{ suspend_to processors || { echo "    # next hibernation: $(cat "$ERR")"; return 1; }; } &&
	all_online "$cpus"
}

# A CPU offline before hibernation is offline after it: the thaw brings up
# only the CPUs the freeze took down.
hibernate_offline_cpu_stays() {
	cpu=$1
	write "$SYS/cpu$cpu/online" 0 || return 1
	cpus=$(online_cpus)
	suspend_to processors || { echo "    # hibernation: $(cat "$ERR")"; return 1; }
	all_online "$cpus" &&
	expect "cpu$cpu online" "$(cat "$SYS/cpu$cpu/online")" 0 &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$(state_nr offline)" &&
	write "$SYS/cpu$cpu/online" 1
}

# The SMT control (/sys/devices/system/cpu/smt/, 05736e4ac13c: "off" takes
# the secondary thread of every core offline, "on" brings them back),
# under QEMU with two threads per core (make run TOPOLOGY=smt).
SMT=$SYS/smt

# Does this guest have SMT siblings the control can switch? 1 or 0.
has_smt() {
	[ "$(cat "$SMT/control" 2>/dev/null)" = on ] && [ -n "$(secondary_threads)" ] &&
		echo 1 || echo 0
}

# The CPUs that are not the first thread of their core (all CPUs online).
secondary_threads() {
	for d in "$SYS"/cpu[0-9]*; do
		l=$(cat "$d/topology/thread_siblings_list" 2>/dev/null) || continue
		[ "${d##*/cpu}" != "${l%%[-,]*}" ] && echo "${d##*/cpu}"
	done
}

# "off" takes exactly the secondary threads offline (online file, online
# mask, state) and "on" brings every one of them back.
smt_control_off_on() {
	sec=$(secondary_threads) cpus=$(online_cpus)
	write "$SMT/control" off || return 1
	expect "smt/control" "$(cat "$SMT/control")" off &&
	expect "smt/active" "$(cat "$SMT/active")" 0 || return 1
	for k in $cpus; do
		want=1
		for t in $sec; do [ "$t" = "$k" ] && want=0; done
		expect "cpu$k in the online mask after off" "$(in_online_mask "$k")" "$want" &&
		expect "cpu$k online after off" "$(cat "$SYS/cpu$k/online" 2>/dev/null || echo 1)" \
			"$want" || return 1
		[ "$want" = 0 ] && { expect "cpu$k state after off" \
			"$(cat "$SYS/cpu$k/hotplug/state")" "$(state_nr offline)" || return 1; }
	done
	write "$SMT/control" on &&
	expect "smt/control" "$(cat "$SMT/control")" on &&
	expect "smt/active" "$(cat "$SMT/active")" 1 &&
	all_online "$cpus"
}

# A secondary thread whose teardown fails makes "off" fail with that error
# and stop: the thread is rolled back online, the control still says what it
# said ("on"), and writing "on" brings back every thread "off" took down.
smt_control_fail_keeps_state() {
	cpus=$(online_cpus) t=
	for k in $(secondary_threads); do t=$k; done
	write "$SYS/cpu$t/hotplug/fail" "$(state_nr sched:active)" &&
	write "$SMT/control" off "Resource temporarily unavailable" &&
	expect "cpu$t online" "$(cat "$SYS/cpu$t/online")" 1 &&
	expect "cpu$t state" "$(cat "$SYS/cpu$t/hotplug/state")" "$(state_nr online)" &&
	expect "cpu$t fail" "$(cat "$SYS/cpu$t/hotplug/fail")" -1 || return 1
	ok=0
	expect "smt/control after the failed off" "$(cat "$SMT/control")" on || ok=1
	write "$SMT/control" on && all_online "$cpus" || ok=1
	return $ok
}

# Leave every CPU online and nothing armed, whatever happened: through the
# target file too, since cpuN/online does not see what the target file did.
restore() {
	# First: after a failed "off" 6.12 refuses to online a secondary thread.
	[ -w "$SMT/control" ] && [ "$(cat "$SMT/control")" != on ] && echo on >"$SMT/control" 2>/dev/null
	for d in "$SYS"/cpu[0-9]*; do
		echo -1 >"$d/hotplug/fail" 2>/dev/null
		state_nr online >"$d/hotplug/target" 2>/dev/null
		[ -e "$d/online" ] && echo 1 >"$d/online" 2>/dev/null
	done
	[ -w /sys/power/pm_test ] && echo none >/sys/power/pm_test
}

# shellcheck disable=SC2086 # split CASES into the positional parameters
set -- $CASES
echo "    KTAP version 1"
echo "    # Subtest: $SUITE"
echo "    1..$#"
cpu=$(last_cpu)
for c in $CASES; do
	if [ -z "$cpu" ] && [ "$c" != states_lists_the_table ] && [ "$c" != boot_cpu_stays ]; then
		n=$((n + 1))
		echo "    ok $n $c # SKIP needs two online CPUs"
		continue
	fi
	case $c in hibernate_*)
		if [ "$(can_suspend)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs /sys/power/pm_test (CONFIG_PM_DEBUG) and disk in /sys/power/state (CONFIG_HIBERNATION)"
			continue
		fi
		;;
	smt_*)
		if [ "$(has_smt)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs SMT siblings (make run TOPOLOGY=smt)"
			continue
		fi
	esac
	"$c" "$cpu"
	result $? "$c"
	restore
done
if [ "$failed" = 0 ]; then
	echo "ok 99 $SUITE"
else
	echo "not ok 99 $SUITE"
fi
