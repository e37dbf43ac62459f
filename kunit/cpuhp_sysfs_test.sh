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
CASES="states_lists_the_table target_down_and_up online_file_follows_target fail_rolls_back_online bad_target_input bad_fail_input boot_cpu_stays"
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

# Leave every CPU online and nothing armed, whatever happened: through the
# target file too, since cpuN/online does not see what the target file did.
restore() {
	for d in "$SYS"/cpu[0-9]*; do
		echo -1 >"$d/hotplug/fail" 2>/dev/null
		state_nr online >"$d/hotplug/target" 2>/dev/null
		[ -e "$d/online" ] && echo 1 >"$d/online" 2>/dev/null
	done
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
	"$c" "$cpu"
	result $? "$c"
	restore
done
if [ "$failed" = 0 ]; then
	echo "ok 99 $SUITE"
else
	echo "not ok 99 $SUITE"
fi
