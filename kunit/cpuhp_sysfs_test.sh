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
CASES="states_lists_the_table target_down_and_up online_file_follows_target fail_rolls_back_online bad_target_input bad_fail_input boot_cpu_stays boot_cpu_goes_and_comes_back hibernate_cpus_come_back hibernate_fail_aborts hibernate_offline_cpu_stays suspend_cpus_come_back suspend_fail_aborts suspend_offline_cpu_stays smt_control_off_on smt_control_numeric smt_control_fail_keeps_state smt_control_first_thread_fail_keeps_state smt_control_forceoff_fail_keeps_state smt_control_on_fail_retries smt_control_on_again_changes_nothing smt_control_forceoff control_without_smt_refuses nosmt_boot_threads_offline nosmt_control_on_off nosmt_force_refuses nosmt_forceoff_after_off hotadd_first_bringup hotadd_fail_rolls_back hotremove_takes_cpu_away maxcpus_first_bringup_fail_rolls_back maxcpus_smt_on_skips_absent_slots"
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

# Whether the boot CPU is hotpluggable, as the kernel says: register_cpu()
# disables a CPU device's offline unless the architecture calls the CPU
# hotpluggable, and only then does the device get an online file. Never on
# x86 (6.12: arch_cpu_is_hotpluggable() is cpu > 0; 6.1: not without
# cpu0_hotplug), on arm64 whenever PSCI can take it down (cpu_can_disable()).
boot_cpu_hotpluggable() {
	[ -e "$SYS/cpu0/online" ]
}

# A boot CPU that is not hotpluggable stays online.
boot_cpu_stays() {
	expect "cpu0 state" "$(cat "$SYS/cpu0/hotplug/state")" "$(state_nr online)"
}

# A hotpluggable boot CPU goes offline through its online file (another
# CPU is then the one the others are controlled from) and comes back.
boot_cpu_goes_and_comes_back() {
	write "$SYS/cpu0/online" 0 &&
		expect "cpu0 state after offline" "$(cat "$SYS/cpu0/hotplug/state")" \
			"$(state_nr offline)" &&
		expect "cpu0/online after offline" "$(cat "$SYS/cpu0/online")" 0 &&
		write "$SYS/cpu0/online" 1 &&
		expect "cpu0 state after online" "$(cat "$SYS/cpu0/hotplug/state")" \
			"$(state_nr online)"
}

# Hibernation as far as the power management test level $1 goes
# (/sys/power/pm_test, CONFIG_PM_DEBUG): "processors" notifies the PM
# chain (which disables CPU hotplug), freezes the tasks, suspends the
# devices, takes the secondary CPUs down through freeze_secondary_cpus() and
# brings everything back. No image is
# made (in_suspend stays 0), so no swap device is needed. $2 "mem":
# suspend to RAM instead, which takes the same path (suspend_enter()) and
# needs ACPI S3 (QEMU's DSDT, which loads only with CONFIG_PCI). Returns
# the write's status; the error text is in $ERR.
suspend_to() {
	echo "$1" >/sys/power/pm_test || return 1
	echo "${2:-disk}" 2>"$ERR" >/sys/power/state
}

# Can this guest suspend to RAM through the firmware's S3 (deep) under
# pm_test? 1 or 0.
can_suspend_mem() {
	[ -w /sys/power/pm_test ] && grep -q '\[deep\]' /sys/power/mem_sleep 2>/dev/null &&
		echo 1 || echo 0
}

# Suspend to RAM waits pm_test_delay seconds (5) at its test level: no need.
PM_TEST_DELAY=/sys/module/suspend/parameters/pm_test_delay
[ -w "$PM_TEST_DELAY" ] && echo 0 >"$PM_TEST_DELAY"

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

# sleep_fail_aborts CPU WHAT SUSPEND_TO_ARGS...: a teardown that fails
# while the sleep WHAT ("hibernation", "suspend to RAM") takes CPU down
# aborts it with its error; every CPU comes back, the failure has fired,
# and the next one goes through.
sleep_fail_aborts() {
	cpu=$1 what=$2 cpus=$(online_cpus)
	shift 2
	write "$SYS/cpu$cpu/hotplug/fail" "$(state_nr sched:active)" || return 1
	if suspend_to "$@"; then
		echo "    # $what with cpu$cpu's sched:active teardown failing succeeded"
		return 1
	fi
	grep -q "Resource temporarily unavailable" "$ERR" ||
		{ echo "    # $what failed with '$(cat "$ERR")', wanted the teardown's EAGAIN"; return 1; }
	all_online "$cpus" &&
	expect "cpu$cpu fail" "$(cat "$SYS/cpu$cpu/hotplug/fail")" -1 &&
	{ suspend_to "$@" || { echo "    # next $what: $(cat "$ERR")"; return 1; }; } &&
	all_online "$cpus"
}

# sleep_offline_cpu_stays CPU WHAT SUSPEND_TO_ARGS...: a CPU offline
# before the sleep WHAT is offline after it: the thaw brings up only the
# CPUs the freeze took down.
sleep_offline_cpu_stays() {
	cpu=$1 what=$2
	shift 2
	write "$SYS/cpu$cpu/online" 0 || return 1
	cpus=$(online_cpus)
	suspend_to "$@" || { echo "    # $what: $(cat "$ERR")"; return 1; }
	all_online "$cpus" &&
	expect "cpu$cpu online" "$(cat "$SYS/cpu$cpu/online")" 0 &&
	expect "cpu$cpu state" "$(cat "$SYS/cpu$cpu/hotplug/state")" "$(state_nr offline)" &&
	write "$SYS/cpu$cpu/online" 1
}

# A teardown failing while hibernation takes CPU N down aborts it
# (create_image()).
hibernate_fail_aborts() {
	sleep_fail_aborts "$1" hibernation processors
}

# A CPU offline before hibernation is offline after it.
hibernate_offline_cpu_stays() {
	sleep_offline_cpu_stays "$1" hibernation processors
}

# Suspend to RAM at the core test level (the deepest before the platform
# enters S3: CPUs down, interrupts off, syscore suspend) brings every CPU
# back online.
suspend_cpus_come_back() {
	cpus=$(online_cpus)
	suspend_to core mem || { echo "    # suspend to RAM (core): $(cat "$ERR")"; return 1; }
	all_online "$cpus"
}

# A teardown failing while suspend to RAM takes CPU N down aborts it
# (suspend_enter()).
suspend_fail_aborts() {
	sleep_fail_aborts "$1" "suspend to RAM" processors mem
}

# A CPU offline before suspend to RAM is offline after it.
suspend_offline_cpu_stays() {
	sleep_offline_cpu_stays "$1" "suspend to RAM" core mem
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

# The CPUs that are not the first thread of their core (all CPUs online),
# in the order smt/control walks them.
secondary_threads() {
	for d in "$SYS"/cpu[0-9]*; do
		l=$(cat "$d/topology/thread_siblings_list" 2>/dev/null) || continue
		[ "${d##*/cpu}" != "${l%%[-,]*}" ] && echo "${d##*/cpu}"
	done | sort -n
}

# "off" takes exactly the secondary threads offline (online file, online
# mask, state), none of them can be brought up alone then (online file or
# target: EPERM), and "on" brings every one of them back.
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
			"$(cat "$SYS/cpu$k/hotplug/state")" "$(state_nr offline)" &&
			write "$SYS/cpu$k/online" 1 "Operation not permitted" &&
			write "$SYS/cpu$k/hotplug/target" "$(state_nr online)" \
				"Operation not permitted" || return 1; }
	done
	write "$SMT/control" on &&
	expect "smt/control" "$(cat "$SMT/control")" on &&
	expect "smt/active" "$(cat "$SMT/active")" 1 &&
	all_online "$cpus"
}

# Does the kernel take a thread count in smt/control? 1 or 0. Since
# 7f48405c3c34 (v6.6, "cpu/SMT: Allow enabling partial SMT states via
# sysfs") "1" means off and the number of threads of a core means on; a
# count other than those is refused (x86 has no partial SMT).
smt_takes_counts() {
	v=$(uname -r) major=${v%%.*} minor=${v#*.}
	minor=${minor%%[!0-9]*}
	[ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 6 ]; } && echo 1 || echo 0
}

# The numeric control: "1" takes the secondary threads offline like "off",
# "2" (two threads per core) brings them back like "on"; "3", "0", "-1"
# and any word but on, off and forceoff are refused (EINVAL) and change
# nothing (cpu_smt_num_threads_valid() takes 1 to the threads per core).
# Before v6.6 every number is refused.
smt_control_numeric() {
	sec=$(secondary_threads) cpus=$(online_cpus)
	if [ "$(smt_takes_counts)" = 0 ]; then
		write "$SMT/control" 1 "Invalid argument" &&
		write "$SMT/control" 2 "Invalid argument" &&
		write "$SMT/control" 0 "Invalid argument" &&
		write "$SMT/control" -1 "Invalid argument" &&
		expect "smt/control" "$(cat "$SMT/control")" on &&
		all_online "$cpus"
		return
	fi
	write "$SMT/control" 3 "Invalid argument" &&
	write "$SMT/control" 0 "Invalid argument" &&
	write "$SMT/control" -1 "Invalid argument" &&
	write "$SMT/control" half "Invalid argument" &&
	expect "smt/control after 3, 0 and -1" "$(cat "$SMT/control")" on &&
	all_online "$cpus" || return 1
	write "$SMT/control" 1 || return 1
	ok=0
	expect "smt/control after 1" "$(cat "$SMT/control")" off &&
	expect "smt/active after 1" "$(cat "$SMT/active")" 0 || ok=1
	for t in $sec; do
		expect "cpu$t online after 1" "$(cat "$SYS/cpu$t/online")" 0 || ok=1
	done
	write "$SMT/control" 2 &&
	expect "smt/control after 2" "$(cat "$SMT/control")" on &&
	expect "smt/active after 2" "$(cat "$SMT/active")" 1 &&
	all_online "$cpus" || ok=1
	return $ok
}

# A secondary thread whose teardown fails makes "off" (or "forceoff", $1)
# fail with that error and stop there: the thread is rolled back online,
# the threads after it are not taken down, the control still says what it
# said ("on"; a failed forceoff is not the one-way forceoff), and writing
# "on" brings back every thread it took down. $2 says which secondary
# thread fails: the first (no thread is left down) or the last (every
# other one was taken down before it).
smt_fail_keeps_state() {
	cpus=$(online_cpus) sec=$(secondary_threads) t=
	for k in $sec; do { [ "$2" = last ] || [ -z "$t" ]; } && t=$k; done
	write "$SYS/cpu$t/hotplug/fail" "$(state_nr sched:active)" &&
	write "$SMT/control" "$1" "Resource temporarily unavailable" &&
	expect "cpu$t online" "$(cat "$SYS/cpu$t/online")" 1 &&
	expect "cpu$t state" "$(cat "$SYS/cpu$t/hotplug/state")" "$(state_nr online)" &&
	expect "cpu$t fail" "$(cat "$SYS/cpu$t/hotplug/fail")" -1 || return 1
	after=
	for k in $sec; do
		[ -n "$after" ] && { expect "cpu$k online after cpu$t failed" \
			"$(in_online_mask "$k")" 1 || return 1; }
		[ "$k" = "$t" ] && after=1
	done
	ok=0
	expect "smt/control after the failed $1" "$(cat "$SMT/control")" on || ok=1
	write "$SMT/control" on && all_online "$cpus" || ok=1
	return $ok
}

smt_control_fail_keeps_state() {
	smt_fail_keeps_state off last
}

smt_control_first_thread_fail_keeps_state() {
	smt_fail_keeps_state off first
}

smt_control_forceoff_fail_keeps_state() {
	smt_fail_keeps_state forceoff last
}

# Writing what the control already reads changes nothing: a secondary
# thread taken offline through its own online file stays offline when "on"
# is written to a control reading on. __store_smt_control() walks the
# threads only when a write changes the control: 6.1 when the state
# differs, 6.12 when the count of threads per core grows or shrinks (or
# forceoff comes over off).
smt_control_on_again_changes_nothing() {
	cpus=$(online_cpus) t=$(secondary_threads | head -n 1)
	write "$SYS/cpu$t/online" 0 &&
	write "$SMT/control" on &&
	expect "smt/control" "$(cat "$SMT/control")" on &&
	expect "cpu$t online after on written to on" "$(cat "$SYS/cpu$t/online")" 0 &&
	expect "cpu$t in the online mask" "$(in_online_mask "$t")" 0 || return 1
	write "$SYS/cpu$t/online" 1 && all_online "$cpus"
}

# "forceoff" takes the secondary threads down as "off" does, and for good:
# the control reads forceoff and refuses every write (EPERM), and a thread
# cannot be brought up through its online file. One-way until reboot, so
# this is the last SMT control case of CASES: the CPUs it takes down stay
# down for the rest of the boot (restore() cannot bring them back).
smt_control_forceoff() {
	sec=$(secondary_threads)
	write "$SMT/control" forceoff &&
	expect "smt/control" "$(cat "$SMT/control")" forceoff &&
	expect "smt/active" "$(cat "$SMT/active")" 0 || return 1
	for t in $sec; do
		expect "cpu$t in the online mask" "$(in_online_mask "$t")" 0 &&
		expect "cpu$t state" "$(cat "$SYS/cpu$t/hotplug/state")" "$(state_nr offline)" &&
		write "$SYS/cpu$t/online" 1 "Operation not permitted" || return 1
	done
	write "$SMT/control" on "Operation not permitted" &&
	write "$SMT/control" off "Operation not permitted" &&
	write "$SMT/control" forceoff "Operation not permitted" &&
	expect "smt/control after on, off and forceoff" "$(cat "$SMT/control")" forceoff
}

# Where there are no threads to switch (one thread per core: the control
# reads notsupported; no CONFIG_HOTPLUG_SMT: notimplemented) every write
# of a state is refused with ENODEV and the control reads as before. The
# forceoff goes last: a control that took it would be forceoff for good.
control_without_smt_refuses() {
	was=$(cat "$SMT/control") cpus=$(online_cpus)
	write "$SMT/control" on "No such device" &&
	write "$SMT/control" off "No such device" &&
	write "$SMT/control" forceoff "No such device" &&
	expect "smt/control after on, off and forceoff" "$(cat "$SMT/control")" "$was" &&
	all_online "$cpus"
}

# SMT disabled on the kernel command line (make run TOPOLOGY=nosmt and
# TOPOLOGY=nosmt-force, 05736e4ac13c): "nosmt", "nosmt=force" or nothing
# (mitigations=auto,nosmt is another word). The control as the boot left it
# is what restore() puts back.
NOSMT=
# The CPUs a boot with maxcpus= brought up (make run TOPOLOGY=maxcpus), or nothing.
MAXCPUS=
# shellcheck disable=SC2013 # the words of the one line are wanted
for w in $(cat /proc/cmdline); do
	case $w in
	nosmt | nosmt=force) NOSMT=$w ;;
	maxcpus=*) MAXCPUS=${w#maxcpus=} ;;
	esac
done
BOOT_SMT=$(cat "$SMT/control" 2>/dev/null)
# Each CPU's target as the boot left it ("1:0 3:0 "), read before any case
# walks a CPU: a sleep's way out with SMT off walks every thread again.
BOOT_TARGETS=$(for d in "$SYS"/cpu[0-9]*; do
	[ -r "$d/hotplug/target" ] && printf '%s:%s ' "${d##*/cpu}" "$(cat "$d/hotplug/target")"
done)

# The target CPU $1 had when the boot ended.
boot_target() {
	for p in $BOOT_TARGETS; do [ "${p%%:*}" = "$1" ] && echo "${p#*:}"; done
}

# The CPUs with a cpuN directory that are not in the online mask, on one
# line ("1 3 "), so that two such lists compare as strings.
offline_cpus() {
	for d in "$SYS"/cpu[0-9]*; do
		[ "$(in_online_mask "${d##*/cpu}")" = 0 ] && printf '%s ' "${d##*/cpu}"
	done
}

# The CPUs the boot started, on one line: x86 lists them between "Booting
# SMP configuration" and "smp: Brought up" (".... node  #0, CPUs:  #1 #2
# #3", a line another message interrupts going on as " #2 #3").
boot_started_cpus() {
	dmesg | awk '/smp: Brought up/ { exit } f { print } /Booting SMP configuration/ { f = 1 }' |
		tr ' ' '\n' | sed -n 's/^#\([0-9][0-9]*\)$/\1/p' | tr '\n' ' '
}

# After a boot with nosmt the control reads off (forceoff with =force),
# smt/active 0, no two online CPUs are threads of one core, and the CPUs
# kept offline were started once all the same (x86: each thread must set
# CR4.MCE; the boot's list of the CPUs it started), rest at the offline
# state with their target there since the boot (writing it again changes
# nothing), and cannot be brought up one by one (cpu_bootable(): EPERM).
nosmt_boot_threads_offline() {
	want=off
	[ "$NOSMT" = nosmt=force ] && want=forceoff
	expect "smt/control" "$(cat "$SMT/control")" "$want" &&
	expect "smt/active" "$(cat "$SMT/active")" 0 || return 1
	off=$(offline_cpus)
	[ -n "$off" ] || { echo "    # every CPU is online after a boot with $NOSMT"; return 1; }
	for k in $(online_cpus); do
		expect "cpu$k thread siblings" \
			"$(cat "$SYS/cpu$k/topology/thread_siblings_list")" "$k" || return 1
	done
	started=" $(boot_started_cpus)"
	[ "$started" != " " ] || { echo "    # dmesg has no list of the CPUs the boot started"; return 1; }
	for k in $off; do
		case $started in *" $k "*) ;; *)
			echo "    # cpu$k was never started at boot (started:$started)"
			return 1
			;;
		esac
		expect "cpu$k state" "$(cat "$SYS/cpu$k/hotplug/state")" "$(state_nr offline)" &&
		expect "cpu$k target after the boot" "$(boot_target "$k")" "$(state_nr offline)" &&
		write "$SYS/cpu$k/hotplug/target" "$(state_nr offline)" &&
		write "$SYS/cpu$k/online" 1 "Operation not permitted" &&
		expect "cpu$k in the online mask after a write of 1" "$(in_online_mask "$k")" 0 ||
			return 1
	done
}

# After a boot with nosmt (not forced) "on" brings up every CPU, and the
# ones nosmt kept offline are exactly the secondary threads; "off" takes
# the same ones down again.
nosmt_control_on_off() {
	off=$(offline_cpus)
	write "$SMT/control" on &&
	expect "smt/control" "$(cat "$SMT/control")" on &&
	expect "smt/active" "$(cat "$SMT/active")" 1 || return 1
	expect "CPUs offline after on" "$(offline_cpus)" "" &&
	all_online "$off" &&
	expect "the CPUs nosmt kept offline" "$off" "$(secondary_threads | tr '\n' ' ')" ||
		return 1
	write "$SMT/control" off &&
	expect "smt/control" "$(cat "$SMT/control")" off &&
	expect "CPUs offline after off" "$(offline_cpus)" "$off"
}

# After a boot with nosmt=force the control refuses every write (EPERM),
# "forceoff" too, until reboot, and the threads stay offline.
nosmt_force_refuses() {
	off=$(offline_cpus)
	write "$SMT/control" on "Operation not permitted" &&
	write "$SMT/control" off "Operation not permitted" &&
	write "$SMT/control" forceoff "Operation not permitted" &&
	expect "smt/control" "$(cat "$SMT/control")" forceoff &&
	expect "CPUs offline" "$(offline_cpus)" "$off"
}

# After a boot with nosmt (not forced) the control reads off, and
# "forceoff" written then makes it forceoff for good: the threads stay
# offline and every later write, "on" among them, is refused (EPERM).
# One-way until reboot, so the last nosmt case of CASES.
nosmt_forceoff_after_off() {
	off=$(offline_cpus)
	expect "smt/control" "$(cat "$SMT/control")" off &&
	write "$SMT/control" forceoff &&
	expect "smt/control after forceoff" "$(cat "$SMT/control")" forceoff &&
	write "$SMT/control" on "Operation not permitted" &&
	write "$SMT/control" forceoff "Operation not permitted" &&
	expect "smt/control after on and forceoff" "$(cat "$SMT/control")" forceoff &&
	expect "CPUs offline" "$(offline_cpus)" "$off"
}

# A secondary thread whose startup fails makes "on" fail with that error:
# the thread is walked back offline with its failure fired, and
# cpuhp_smt_enable() stops there, so the threads after it stay offline
# too. Writing "on" again is the way back the control offers: it brings
# every thread up.
smt_control_on_fail_retries() {
	cpus=$(online_cpus) t=
	for k in $(secondary_threads); do [ -z "$t" ] && t=$k; done
	write "$SMT/control" off &&
	write "$SYS/cpu$t/hotplug/fail" "$(state_nr sched:active)" &&
	write "$SMT/control" on "Resource temporarily unavailable" &&
	expect "cpu$t online" "$(cat "$SYS/cpu$t/online")" 0 &&
	expect "cpu$t state" "$(cat "$SYS/cpu$t/hotplug/state")" "$(state_nr offline)" &&
	expect "cpu$t fail" "$(cat "$SYS/cpu$t/hotplug/fail")" -1 || return 1
	write "$SMT/control" on && all_online "$cpus"
}

# Physical CPU hot-add and hot-remove (make run TOPOLOGY=hotplug): the guest
# boots with fewer CPUs present than possible, and asks the host, which
# drives QEMU (tools/cpuhpk/hostctl.py), on the port the kernel argument
# cpuhpk_hostctl= names: "add" plugs an absent CPU in, "del" pulls out the
# one plugged in last. ACPI then tells the kernel (acpi_processor_add(),
# the eject path), which registers the CPU present and offline, or takes
# it offline and away. Each case plugs in a CPU of its own and leaves it;
# only the last case pulls one out, since QEMU 7.2's TCG aborts at a plug
# after an unplug (the host refuses it, with that reason).
HOSTCTL=$(sed -n 's/.*cpuhpk_hostctl=\([A-Za-z0-9]*\).*/\1/p' /proc/cmdline)
# The initramfs has no /dev/ttyS1 of its own: the 8250's second port.
[ "$HOSTCTL" = ttyS1 ] && [ ! -e /dev/ttyS1 ] && mknod /dev/ttyS1 c 4 65
# Seconds the host and ACPI get for one plug or unplug.
HOTPLUG_WAIT=30

# Is there a host control and a possible CPU that is not present? 1 or 0.
can_hotadd() {
	[ -n "$HOSTCTL" ] && [ -c "/dev/$HOSTCTL" ] && [ -n "$(absent_cpus)" ] && echo 1 || echo 0
}

# The numbers of the CPUs in the mask file $1 (e.g. 0-2,4).
mask_cpus() {
	for range in $(tr ',' ' ' <"$1"); do
		k=${range%-*}
		while [ "$k" -le "${range#*-}" ]; do echo "$k"; k=$((k + 1)); done
	done
}

# Possible CPUs that are not present.
absent_cpus() {
	present=" $(mask_cpus "$SYS/present" | tr '\n' ' ')"
	for k in $(mask_cpus "$SYS/possible"); do
		case $present in *" $k "*) ;; *) echo "$k" ;; esac
	done
}

# ask REQUEST: send it to the host and wait for the answer (at most
# HOTPLUG_WAIT seconds); 0 when the host answered ok.
ask() {
	exec 3<>"/dev/$HOSTCTL" || return 1
	stty -F "/dev/$HOSTCTL" raw -echo || { exec 3>&-; return 1; }
	echo "$1" >&3
	answer=$(timeout "$HOTPLUG_WAIT" head -n 1 <&3)
	exec 3>&-
	case $answer in
	ok*) return 0 ;;
	'') echo "    # host: no answer to '$1' within $HOTPLUG_WAIT s" ;;
	*) echo "    # host: '$answer' to '$1'" ;;
	esac
	return 1
}

# wait_for WHAT COMMAND...: run COMMAND until it succeeds, for at most
# HOTPLUG_WAIT seconds (ACPI handles the event in a workqueue of its own).
wait_for() {
	what=$1 tries=$((HOTPLUG_WAIT * 10))
	shift
	while ! "$@"; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || { echo "    # $what: not within $HOTPLUG_WAIT s"; return 1; }
		sleep 0.1
	done
}

# Is CPU $1 present (in /sys/devices/system/cpu/present)?
is_present() {
	mask_cpus "$SYS/present" | grep -qx "$1"
}

is_absent() {
	! is_present "$1" && [ ! -e "$SYS/cpu$1/online" ]
}

# Is one of the CPUs $1 present? Sets new to it.
one_present() {
	for k in $1; do is_present "$k" && { new=$k; return 0; }; done
	return 1
}

# Plug a CPU in: echoes its number; it must come up present and offline.
plug() {
	absent=$(absent_cpus)
	{
		ask add &&
		wait_for "a CPU of $(echo "$absent" | tr '\n' ' ')present" one_present "$absent" &&
		wait_for "cpu$new/online" test -e "$SYS/cpu$new/online" &&
		expect "new cpu$new online" "$(cat "$SYS/cpu$new/online")" 0 &&
		expect "new cpu$new in the online mask" "$(in_online_mask "$new")" 0
	} >&2 || return 1
	echo "$new"
}

# Pull the CPU plugged in last ($1) out: it goes offline and away.
unplug() {
	ask del && wait_for "cpu$1 removed" is_absent "$1"
}

# The steps whose startup callbacks cpuhp_enter traced for CPU $1 while
# "$2 $3" ran (tracefs, the cpuhp events of 4.6's cpuhp_invoke_callback()).
TRACING=/sys/kernel/tracing
traced_steps() {
	cpu=$1
	shift
	[ -d "$TRACING/events/cpuhp" ] || mount -t tracefs tracefs "$TRACING" || return 1
	echo >"$TRACING/trace"
	echo 1 >"$TRACING/events/cpuhp/cpuhp_enter/enable"
	"$@" || { echo 0 >"$TRACING/events/cpuhp/cpuhp_enter/enable"; return 1; }
	echo 0 >"$TRACING/events/cpuhp/cpuhp_enter/enable"
	sed -n "s/.*cpuhp_enter: cpu: 0*\([0-9][0-9]*\) .*step: *\([0-9]*\) .*/\1 \2/p" \
		"$TRACING/trace" | awk -v c="$cpu" '$1 == c { print $2 }' | sort -n | uniq | tr '\n' ' '
}

# The files of cpuN/hotplug/ (state, target, fail), one line.
hotplug_files() {
	for f in "$SYS/cpu$1/hotplug"/*; do [ -e "$f" ] && printf '%s ' "${f##*/}"; done
}

# A CPU plugged in while the system runs is present and offline, with the
# state machine's sysfs files of every other CPU (98f8cdce1db5); its first
# bring-up runs the startup of every step a CPU that was there at boot runs
# when it comes back online (traced both), and ends online.
hotadd_first_bringup() {
	cpu=$1
	write "$SYS/cpu$cpu/online" 0 || return 1
	want=$(traced_steps "$cpu" write "$SYS/cpu$cpu/online" 1) || return 1
	new=$(plug) || return 1
	ok=0
	expect "cpu$new/hotplug/" "$(hotplug_files "$new")" "$(hotplug_files "$cpu")" || ok=1
	got=$(traced_steps "$new" write "$SYS/cpu$new/online" 1)
	expect "steps of cpu$new's first bring-up" "$got" "$want" &&
	expect "cpu$new online" "$(cat "$SYS/cpu$new/online")" 1 &&
	expect "cpu$new in the online mask" "$(in_online_mask "$new")" 1 || ok=1
	[ -e "$SYS/cpu$new/hotplug/state" ] && { expect "cpu$new state" \
		"$(cat "$SYS/cpu$new/hotplug/state")" "$(state_nr online)" || ok=1; }
	return $ok
}

# CPU $1, offline, brought up with the state called $2 armed to fail: the
# write fails with the error, the CPU is offline at the offline state, the
# failure has fired; the next bring-up goes through.
fails_then_comes_up() {
	write "$SYS/cpu$1/hotplug/fail" "$(state_nr "$2")" &&
	write "$SYS/cpu$1/online" 1 "Resource temporarily unavailable" &&
	expect "cpu$1 online" "$(cat "$SYS/cpu$1/online")" 0 &&
	expect "cpu$1 state" "$(cat "$SYS/cpu$1/hotplug/state")" "$(state_nr offline)" &&
	expect "cpu$1 in the online mask" "$(in_online_mask "$1")" 0 &&
	expect "cpu$1 fail" "$(cat "$SYS/cpu$1/hotplug/fail")" -1 &&
	write "$SYS/cpu$1/online" 1 &&
	expect "cpu$1 state" "$(cat "$SYS/cpu$1/hotplug/state")" "$(state_nr online)"
}

# A startup that fails on a plugged-in CPU's first bring-up rolls it back as
# on any other: the write fails with the error, the CPU is offline at the
# offline state, the failure has fired; the next bring-up goes through.
hotadd_fail_rolls_back() {
	new=$(plug) || return 1
	[ -e "$SYS/cpu$new/hotplug/fail" ] ||
		{ echo "    # no cpu$new/hotplug/fail: '$(hotplug_files "$new")'"; return 1; }
	fails_then_comes_up "$new" sched:active
}

# A boot with maxcpus=N brings up N CPUs, the boot CPU counted, and leaves
# the other present CPUs offline at the offline state with their hotplug/
# files, never started (the boot's list of the CPUs it started). A startup
# failing in a PREPARE state on such a CPU's very first bring-up is rolled
# back as on any other: the write fails with the error, the CPU is offline
# at the offline state, the failure has fired; the next bring-up goes
# through. The first maxcpus case: it needs the CPUs as the boot left them.
maxcpus_first_bringup_fail_rolls_back() {
	expect "CPUs online after a boot with maxcpus=$MAXCPUS" \
		"$(online_cpus | wc -l | tr -d ' ')" "$MAXCPUS" || return 1
	off=$(offline_cpus)
	[ -n "$off" ] || { echo "    # no present CPU is offline after a boot with maxcpus=$MAXCPUS"; return 1; }
	expect "CPUs the boot started" "$(boot_started_cpus | tr ' ' '\n' | sort -n | tr '\n' ' ')" \
		"$(online_cpus | grep -vx 0 | sort -n | tr '\n' ' ')" || return 1
	for k in $off; do
		expect "cpu$k/hotplug/" "$(hotplug_files "$k")" "$(hotplug_files 0)" &&
		expect "cpu$k state" "$(cat "$SYS/cpu$k/hotplug/state")" "$(state_nr offline)" ||
			return 1
	done
	fails_then_comes_up "${off%% *}" workqueue:prepare
}

# With a core's slots left empty (possible CPUs that are not present),
# "on" brings up the present threads and passes the empty slots by: the
# write succeeds and no present CPU is left offline.
maxcpus_smt_on_skips_absent_slots() {
	[ -n "$(absent_cpus)" ] || { echo "    # every possible CPU is present"; return 1; }
	[ "$(has_smt)" = 1 ] || { echo "    # no SMT siblings to switch"; return 1; }
	write "$SMT/control" off &&
	write "$SMT/control" on &&
	expect "smt/control" "$(cat "$SMT/control")" on &&
	expect "CPUs offline after on" "$(offline_cpus)" ""
}

# Pulling out an online CPU takes it offline (the eject offlines it first)
# and out of the present mask.
hotremove_takes_cpu_away() {
	new=$(plug) || return 1
	write "$SYS/cpu$new/online" 1 &&
	unplug "$new" &&
	expect "cpu$new in the online mask" "$(in_online_mask "$new")" 0 &&
	expect "cpu$new absent" "$(absent_cpus | grep -cx "$new")" 1
}

# Leave every CPU online and nothing armed, whatever happened: through the
# target file too, since cpuN/online does not see what the target file did.
restore() {
	# First (back to what the boot left: on, or off after nosmt): after a
	# failed "off" 6.12 refuses to online a secondary thread.
	[ -w "$SMT/control" ] && [ "$(cat "$SMT/control")" != "$BOOT_SMT" ] &&
		echo "$BOOT_SMT" >"$SMT/control" 2>/dev/null
	for d in "$SYS"/cpu[0-9]*; do
		# (No hotplug/ on a CPU plugged in after boot: findings/16.)
		if [ -d "$d/hotplug" ]; then
			echo -1 2>/dev/null >"$d/hotplug/fail"
			state_nr online 2>/dev/null >"$d/hotplug/target"
		fi
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
	case $c in boot_cpu_stays)
		if boot_cpu_hotpluggable; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP the boot CPU is hotpluggable here (cpu0/online exists)"
			continue
		fi
		;;
	boot_cpu_goes_and_comes_back)
		if ! boot_cpu_hotpluggable; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP the boot CPU is not hotpluggable here (no cpu0/online)"
			continue
		fi
		;;
	hibernate_*)
		if [ "$(can_suspend)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs /sys/power/pm_test (CONFIG_PM_DEBUG) and disk in /sys/power/state (CONFIG_HIBERNATION)"
			continue
		fi
		;;
	suspend_*)
		if [ "$(can_suspend_mem)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs /sys/power/pm_test (CONFIG_PM_DEBUG) and deep in /sys/power/mem_sleep (ACPI S3, PSCI SYSTEM_SUSPEND)"
			continue
		fi
		;;
	smt_*)
		if [ -n "$NOSMT" ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs SMT on at boot (booted with $NOSMT)"
			continue
		elif [ "$(has_smt)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs SMT siblings (make run TOPOLOGY=smt)"
			continue
		fi
		;;
	control_without_smt_*)
		case $(cat "$SMT/control" 2>/dev/null) in notsupported | notimplemented) ;; *)
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs a machine without SMT threads (smt/control notsupported or notimplemented)"
			continue
			;;
		esac
		;;
	nosmt_*)
		why=
		case $NOSMT/$c in
		/*) why="needs a boot with nosmt (make run TOPOLOGY=nosmt)" ;;
		nosmt=force/nosmt_control_on_off | nosmt=force/nosmt_forceoff_after_off) why="needs nosmt without =force (make run TOPOLOGY=nosmt)" ;;
		nosmt/nosmt_force_*) why="needs nosmt=force (make run TOPOLOGY=nosmt-force)" ;;
		esac
		if [ -n "$why" ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP $why"
			continue
		fi
		;;
	hotadd_* | hotremove_*)
		if [ "$(can_hotadd)" = 0 ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs a CPU to plug in (make run TOPOLOGY=hotplug)"
			continue
		fi
		;;
	maxcpus_*)
		if [ -z "$MAXCPUS" ] || [ "$MAXCPUS" -ge "$(mask_cpus "$SYS/present" | wc -l)" ]; then
			n=$((n + 1))
			echo "    ok $n $c # SKIP needs a boot with maxcpus= (make run TOPOLOGY=maxcpus)"
			continue
		fi
		;;
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
