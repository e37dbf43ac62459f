// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the rollback of CPU hotplug operations
 *
 * What is verified, from the smp-hotplug merge (710d60cbf1b3) and its
 * patches:
 *
 *  - a startup that fails while a CPU comes up walks the CPU back to where it
 *    started (undo_cpu_up in cff7d378d3fd/4baa0afc6719, cpuhp_reset_state()
 *    and the reverse walk today): the states below the failed one are torn
 *    down in reverse order, the failed one is not, the CPU ends offline;
 *  - a teardown that fails while a CPU goes down walks it forward again
 *    (undo_cpu_down): the CPU ends online with every state back up;
 *  - a multi-instance state that fails for one instance while a CPU comes up
 *    or goes down is undone for the instances before it first: in the AP
 *    thread through st->last, on the control CPU inside
 *    cpuhp_invoke_callback(); without the reverse callback nothing is undone;
 *  - cpuhp_tasks_frozen (090e77c391dd) is clear in ordinary hotplug;
 *  - the cpuhp_enter/cpuhp_multi_enter/cpuhp_exit tracepoints (5ba9ac8e2c45)
 *    follow every callback with its result, cpuhp_multi_enter with the
 *    instance for a multi-instance state;
 *  - many down/up cycles, with the completion based waits of 8df3e07e7f21
 *    and e69aab13117e, stay balanced and quiet;
 *  - "If set, cpu_up and cpu_down will return -EBUSY and do nothing"
 *    (cpu_hotplug_disabled, kernel/cpu.c): while cpu_hotplug_disable() is in
 *    force, every way into the state machine is refused and runs nothing;
 *    the disables nest.
 *
 * Not tested: a teardown failing in the PREPARE section (L) while a CPU goes
 * down. The CPU is dead by then; the core warns "DEAD callback error", returns
 * the error and leaves the CPU half-dead (cpu_online() still true, state
 * above target), and bringing it back warns in RCU: no later case could run.
 *
 * How it is observed: three recorder states on one CPU N (the last online
 * one, never the boot CPU): L at CPUHP_BP_PREPARE_DYN, run by the control
 * CPU, and M below H in CPUHP_AP_ONLINE_DYN, run by N's cpuhp thread; in the
 * multi-instance cases one of them has instances A and B; the CPU's state
 * and target through cpuhp_kunit_cpu_state(); and probes on the cpuhp
 * tracepoints, registered for the suite.
 */

#ifdef CPUHP_KUNIT_PART_freeze
/*
 * Suspend and resume take the secondary CPUs down and up with
 * freeze_secondary_cpus() and thaw_secondary_cpus():
 *  - cpuhp_tasks_frozen tells the callbacks that they run for suspend and
 *    resume, and only then; a failing teardown aborts the freeze with every
 *    CPU back, and a failing startup at the thaw leaves its CPU offline,
 *    device included;
 *  - the freeze keeps one CPU online, the one asked for or, when that one is
 *    offline or none is named (-1), the first online CPU; a wakeup event
 *    while it runs aborts it with -EBUSY, and the thaw brings back exactly
 *    the CPUs it took down;
 *  - between the two, add_cpu() brings no frozen CPU up and no callback
 *    runs.
 */
#endif

#ifdef CPUHP_KUNIT_HARNESS
/*
 * Also, with cases that warn on purpose, need CONFIG_CPU_HOTPLUG_STATE_CONTROL
 * or drive the real suspend:
 *  - "rollback must not fail": a teardown that fails while undoing a failed
 *    bringup is warned about, the walk back goes on (instances) or stops
 *    (states) and the bringup's error is returned;
 *  - the same cpuhp_tasks_frozen promises through the real suspend to RAM
 *    path (suspend_devices_and_enter() at the processors test level);
 *  - a CPU can be driven to any named state that is not cant_stop and back,
 *    as the sysfs target file does (cff7d378d3fd): from online down to an AP
 *    or a PREPARE state, from offline up to either, running exactly the
 *    callbacks between; target writes are refused like the rest while
 *    hotplug is disabled or the CPUs are frozen.
 */
#endif

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/sched/isolation.h>
#include <linux/spinlock.h>
#include <linux/suspend.h>
#include <trace/events/cpuhp.h>

#ifdef CPUHP_KUNIT_HARNESS
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/kthread.h>
#include <linux/sched/task.h>
#include <linux/topology.h>
#include <asm/sections.h>
#include "../power/power.h"
#ifdef CONFIG_X86
#include <asm/memtype.h>
#include <asm/msr.h>
#endif
#endif

#include "cpuhp_kunit_compat.h"
#include "cpuhp_recorder.h"

/* The recorder slots of the three states, named as in the comment above. */
enum { L, M, H };

/*
 * The instances of a multi-instance slot, added A first. The state's list
 * is LIFO (hlist_add_head() in __cpuhp_state_add_instance_cpuslocked()), so
 * hotplug calls B before A in both directions.
 */
enum { A, B };
static const int cpuhp_rollback_list_order[] = { B, A };

/* No slot of the case is multi-instance. */
#define CPUHP_ROLLBACK_SINGLE	(-1)

/* Errors no part of the hotplug core returns by itself. */
#define CPUHP_ROLLBACK_UP_ERR	(-ENODATA)
#define CPUHP_ROLLBACK_DOWN_ERR	(-ENOLINK)

/* Down/up cycles of the stress case. */
#define CPUHP_ROLLBACK_CYCLES	50

struct cpuhp_rollback {
	struct cpuhp_recorder *rec;
	struct cpuhp_rec_log *want;
	unsigned int cpu;		/* N */
	int multi;			/* the multi-instance slot, or CPUHP_ROLLBACK_SINGLE */
};

/* The dynamic range each of L, M and H is installed in. */
static enum cpuhp_state cpuhp_rollback_range(int slot)
{
	return slot == L ? CPUHP_BP_PREPARE_DYN : CPUHP_AP_ONLINE_DYN;
}

/*
 * Install L, M and H (@multi, unless CPUHP_ROLLBACK_SINGLE, as a
 * multi-instance state with instances A and B and the extra @flags) and pick
 * N; the recorder removes them and brings N back when the case ends. The log
 * starts empty.
 */
static struct cpuhp_rollback *cpuhp_rollback_start_with(struct kunit *test, int multi,
							unsigned int flags)
{
	struct cpuhp_rollback *rb = kunit_kzalloc(test, sizeof(*rb), GFP_KERNEL);
	int slot;

	KUNIT_ASSERT_NOT_NULL(test, rb);
	rb->rec = cpuhp_rec_start(test);
	rb->want = cpuhp_rec_log_alloc(test);
	rb->multi = multi;
	rb->cpu = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_LAST);
	if (rb->cpu == cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	if (!cpu_is_hotpluggable(rb->cpu))
		kunit_skip(test, "CPU %u cannot be taken offline", rb->cpu);

	for (slot = L; slot <= H; slot++) {
		enum cpuhp_state range = cpuhp_rollback_range(slot);
		struct cpuhp_recorder *rec = rb->rec;
		unsigned int how = slot == multi ? CPUHP_REC_MULTI | flags : CPUHP_REC_INVOKE;

		KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, slot, range, how), 0);
		if (slot != multi)
			continue;
		KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, slot, A, CPUHP_REC_INVOKE), 0);
		KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, slot, B, CPUHP_REC_INVOKE), 0);
	}
	KUNIT_ASSERT_LT(test, cpuhp_rec_state(rb->rec, M), cpuhp_rec_state(rb->rec, H));
	cpuhp_rec_clear(rb->rec);
	return rb;
}

static struct cpuhp_rollback *cpuhp_rollback_start(struct kunit *test)
{
	return cpuhp_rollback_start_with(test, CPUHP_ROLLBACK_SINGLE, 0);
}

/* Expect this slot/direction/result on N next. */
static void cpuhp_rollback_want(struct cpuhp_rollback *rb, int slot, enum cpuhp_rec_dir dir,
				int ret)
{
	cpuhp_rec_log_add(rb->want, rb->cpu, slot, CPUHP_REC_ANY, dir, ret);
}

/* Expect this instance of the multi-instance slot on N next, with this result. */
static void cpuhp_rollback_want_instance(struct cpuhp_rollback *rb, int slot, int instance,
					 enum cpuhp_rec_dir dir, int ret)
{
	cpuhp_rec_log_add(rb->want, rb->cpu, slot, instance, dir, ret);
}

/* Expect @slot's callback in direction @dir on N: once, or per instance in list order. */
static void cpuhp_rollback_want_slot(struct cpuhp_rollback *rb, int slot, enum cpuhp_rec_dir dir)
{
	int i;

	if (slot != rb->multi) {
		cpuhp_rollback_want(rb, slot, dir, 0);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(cpuhp_rollback_list_order); i++)
		cpuhp_rollback_want_instance(rb, slot, cpuhp_rollback_list_order[i], dir, 0);
}

/* Expect the slots @lo..@hi in direction @dir: ascending up, descending down. */
static void cpuhp_rollback_want_range(struct cpuhp_rollback *rb, int lo, int hi,
				      enum cpuhp_rec_dir dir)
{
	int i;

	for (i = 0; i <= hi - lo; i++)
		cpuhp_rollback_want_slot(rb, dir == CPUHP_REC_STARTUP ? lo + i : hi - i, dir);
}

/* Compare the log with what was wanted, then start both afresh. */
static void cpuhp_rollback_check(struct kunit *test, struct cpuhp_rollback *rb)
{
	cpuhp_rec_expect_log(test, rb->rec, rb->want);
	cpuhp_rec_next(rb->rec, rb->want);
}

/* N is fully online: cpu_online(), state and target CPUHP_ONLINE. */
static void cpuhp_rollback_expect_online(struct kunit *test, struct cpuhp_rollback *rb)
{
	KUNIT_EXPECT_TRUE_MSG(test, cpu_online(rb->cpu), "CPU %u", rb->cpu);
	cpuhp_rec_expect_state(test, rb->cpu, CPUHP_ONLINE, CPUHP_ONLINE);
}

/* N is fully offline: not cpu_online(), state and target CPUHP_OFFLINE. */
static void cpuhp_rollback_expect_offline(struct kunit *test, struct cpuhp_rollback *rb)
{
	KUNIT_EXPECT_FALSE_MSG(test, cpu_online(rb->cpu), "CPU %u", rb->cpu);
	cpuhp_rec_expect_state(test, rb->cpu, CPUHP_OFFLINE, CPUHP_OFFLINE);
}

/* What cpuhp_tasks_frozen the callbacks of an operation should see. */
enum cpuhp_rollback_context {
	CPUHP_ROLLBACK_HOTPLUG,		/* clear: ordinary hotplug */
	CPUHP_ROLLBACK_SUSPEND,		/* set: freeze/thaw_secondary_cpus() */
};

/* Every call logged saw cpuhp_tasks_frozen as @context says; AP ones ran on their CPU. */
static void cpuhp_rollback_expect_calls(struct kunit *test, struct cpuhp_rollback *rb,
					enum cpuhp_rollback_context context)
{
	bool frozen = context == CPUHP_ROLLBACK_SUSPEND;
	struct cpuhp_rec_log *got = cpuhp_rec_read(rb->rec);
	unsigned int i;

	for (i = 0; i < got->len; i++)
		KUNIT_EXPECT_EQ_MSG(test, got->calls[i].frozen, frozen, "call %u: cpu %u slot %d",
				    i, got->calls[i].cpu, got->calls[i].slot);
	cpuhp_rec_expect_on_cpu(test, rb->rec, M);
	cpuhp_rec_expect_on_cpu(test, rb->rec, H);
}

/* Take N down cleanly and forget the calls that took. */
static void cpuhp_rollback_offline(struct kunit *test, struct cpuhp_rollback *rb)
{
	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	cpuhp_rec_clear(rb->rec);
}

/* N offline; bring it up with H's startup failing; return add_cpu()'s result. */
static int cpuhp_rollback_up_failing(struct cpuhp_rollback *rb)
{
	cpuhp_rec_arm_once(rb->rec, H, CPUHP_REC_STARTUP, rb->cpu, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_UP_ERR);
	return add_cpu(rb->cpu);
}

/* N online; take it down with M's teardown failing; return remove_cpu()'s result. */
static int cpuhp_rollback_down_failing(struct cpuhp_rollback *rb)
{
	cpuhp_rec_arm_once(rb->rec, M, CPUHP_REC_TEARDOWN, rb->cpu, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_DOWN_ERR);
	return remove_cpu(rb->cpu);
}

/*
 * undo_cpu_up, AP side: H's startup fails on N; M and L are torn down in
 * that order, H never; N is offline at CPUHP_OFFLINE. A clean bringup then
 * runs each startup once.
 */
static void cpuhp_rollback_up_ap_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_offline(test, rb);
	KUNIT_EXPECT_EQ(test, cpuhp_rollback_up_failing(rb), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want(rb, L, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want(rb, M, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want(rb, H, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want(rb, M, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want(rb, L, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);

	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_STARTUP);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);
}

/*
 * undo_cpu_up, BP side: L's startup fails; nothing above L runs, L is not
 * torn down, N stays offline at CPUHP_OFFLINE.
 */
static void cpuhp_rollback_up_bp_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rec_arm_once(rb->rec, L, CPUHP_REC_STARTUP, rb->cpu, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_UP_ERR);

	KUNIT_EXPECT_EQ(test, add_cpu(rb->cpu), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want(rb, L, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);
}

/*
 * undo_cpu_down: M's teardown fails on N; H, which was torn down before, is
 * brought up again, L is not touched; N is online at CPUHP_ONLINE. A clean
 * teardown then succeeds.
 */
static void cpuhp_rollback_down_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	KUNIT_EXPECT_EQ(test, cpuhp_rollback_down_failing(rb), CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_want(rb, H, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want(rb, M, CPUHP_REC_TEARDOWN, CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_want(rb, H, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);

	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_TEARDOWN);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);
}

/*
 * A multi-instance AP state (H) whose startup fails for its second instance
 * while N comes up: the AP thread notes the instance in st->last, tears down
 * the instance before it, then M and L; N ends offline.
 */
static void cpuhp_rollback_up_ap_multi_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start_with(test, H, 0);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rec_arm_once(rb->rec, H, CPUHP_REC_STARTUP, rb->cpu, A, CPUHP_ROLLBACK_UP_ERR);

	KUNIT_EXPECT_EQ(test, add_cpu(rb->cpu), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want(rb, L, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want(rb, M, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want_instance(rb, H, B, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want_instance(rb, H, A, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want_instance(rb, H, B, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want(rb, M, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want(rb, L, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);
}

/*
 * A multi-instance AP state (H) whose teardown fails for its second instance
 * while N goes down: the instance before it is brought up again, nothing
 * below H was touched; N ends online.
 */
static void cpuhp_rollback_down_ap_multi_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start_with(test, H, 0);

	cpuhp_rec_arm_once(rb->rec, H, CPUHP_REC_TEARDOWN, rb->cpu, A, CPUHP_ROLLBACK_DOWN_ERR);

	KUNIT_EXPECT_EQ(test, remove_cpu(rb->cpu), CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_want_instance(rb, H, B, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want_instance(rb, H, A, CPUHP_REC_TEARDOWN, CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_want_instance(rb, H, B, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);
}

struct cpuhp_rollback_bp_multi {
	unsigned int flags;		/* extra enum cpuhp_rec_flags for L */
	const char *desc;
};

static const struct cpuhp_rollback_bp_multi cpuhp_rollback_bp_multi_params[] = {
	{ 0, "with_teardown" },
	{ CPUHP_REC_NO_TEARDOWN, "without_teardown" },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_rollback_bp_multi, cpuhp_rollback_bp_multi_params, desc);

/*
 * A multi-instance PREPARE state (L) whose startup fails for its second
 * instance while N comes up: the control CPU tears down the instance before
 * it inside cpuhp_invoke_callback(), if L has a teardown; nothing else runs,
 * N stays offline.
 */
static void cpuhp_rollback_up_bp_multi_fails(struct kunit *test)
{
	const struct cpuhp_rollback_bp_multi *p = test->param_value;
	struct cpuhp_rollback *rb = cpuhp_rollback_start_with(test, L, p->flags);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rec_arm_once(rb->rec, L, CPUHP_REC_STARTUP, rb->cpu, A, CPUHP_ROLLBACK_UP_ERR);

	KUNIT_EXPECT_EQ(test, add_cpu(rb->cpu), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want_instance(rb, L, B, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want_instance(rb, L, A, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	if (!(p->flags & CPUHP_REC_NO_TEARDOWN))
		cpuhp_rollback_want_instance(rb, L, B, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);
}

#ifdef CPUHP_KUNIT_HARNESS
/*
 * "Rollback must not fail": when the teardown of L's instance B fails while
 * undoing the failed startup of instance A, cpuhp_invoke_callback() warns
 * (declared to the log checks), goes on and returns the startup's
 * error; N stays offline.
 */
static void cpuhp_rollback_bp_multi_undo_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start_with(test, L, 0);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rec_arm_once(rb->rec, L, CPUHP_REC_STARTUP, rb->cpu, A, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rec_arm_once(rb->rec, L, CPUHP_REC_TEARDOWN, rb->cpu, B, CPUHP_ROLLBACK_DOWN_ERR);

	cpuhp_rec_expect_report_begin("at kernel/cpu.c:");
	KUNIT_EXPECT_EQ(test, add_cpu(rb->cpu), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rec_expect_report_end();
	cpuhp_rollback_want_instance(rb, L, B, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want_instance(rb, L, A, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want_instance(rb, L, B, CPUHP_REC_TEARDOWN, CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);
}

/*
 * The same on the way back from an AP failure: H's startup fails, M is torn
 * down by N's thread, then L's teardown fails in the control CPU's walk
 * back; cpuhp_up_callbacks() warns and returns H's error. The walk stops
 * there: N is offline, its target CPUHP_OFFLINE, its state just below L
 * (cpuhp_next_state() moves the state below a state before its teardown
 * runs, and nothing moves it back when the teardown fails), so the state
 * machine counts L as down although its teardown failed.
 */
static void cpuhp_rollback_up_undo_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	int l = cpuhp_rec_state(rb->rec, L);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rec_arm_once(rb->rec, L, CPUHP_REC_TEARDOWN, rb->cpu, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_DOWN_ERR);

	cpuhp_rec_expect_report_begin("at kernel/cpu.c:");
	KUNIT_EXPECT_EQ(test, cpuhp_rollback_up_failing(rb), CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rec_expect_report_end();
	cpuhp_rollback_want(rb, L, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want(rb, M, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_want(rb, H, CPUHP_REC_STARTUP, CPUHP_ROLLBACK_UP_ERR);
	cpuhp_rollback_want(rb, M, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_want(rb, L, CPUHP_REC_TEARDOWN, CPUHP_ROLLBACK_DOWN_ERR);
	cpuhp_rollback_check(test, rb);
	KUNIT_EXPECT_FALSE(test, cpu_online(rb->cpu));
	cpuhp_rec_expect_state(test, rb->cpu, l - 1, CPUHP_OFFLINE);
}
#endif

/*
 * cpuhp_tasks_frozen is clear for ordinary hotplug: a down/up of N ran each
 * of the case's states once per direction, and every call saw it clear.
 */
static void cpuhp_rollback_frozen_clear_in_hotplug(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int states = cpuhp_rec_installed(rb->rec);

	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
					      rb->cpu, CPUHP_REC_ANY), states);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP,
					      rb->cpu, CPUHP_REC_ANY), states);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
}

#ifdef CPUHP_KUNIT_PART_freeze
/* The skip of every case that freezes CPUs, in a kernel that cannot. */
#define CPUHP_ROLLBACK_NO_FREEZE "needs CONFIG_PM_SLEEP_SMP for freeze_secondary_cpus()"

#ifdef CONFIG_PM_SLEEP_SMP
/* freeze_secondary_cpus(@primary), as suspend does; its result. */
static int cpuhp_rollback_freeze(struct kunit *test, int primary)
{
	return freeze_secondary_cpus(primary);
}

static void cpuhp_rollback_thaw(void *unused)
{
	thaw_secondary_cpus();
}
#else
static int cpuhp_rollback_freeze(struct kunit *test, int primary)
{
	kunit_skip(test, CPUHP_ROLLBACK_NO_FREEZE);
	return -EOPNOTSUPP;
}

static void cpuhp_rollback_thaw(void *unused)
{
}
#endif

/*
 * Per CPU and state: as many successful startups as teardowns, so every state
 * a CPU went through is up again exactly once.
 */
static void cpuhp_rollback_expect_balanced(struct kunit *test, struct cpuhp_rollback *rb)
{
	struct cpuhp_rec_log *got = cpuhp_rec_read(rb->rec);
	int slot, balance;
	unsigned int cpu, i;

	for_each_cpu(cpu, rb->rec->online) {
		for (slot = L; slot <= H; slot++) {
			balance = 0;
			for (i = 0; i < got->len; i++) {
				const struct cpuhp_rec_call *c = &got->calls[i];

				if (c->cpu != cpu || c->slot != slot || c->ret)
					continue;
				balance += c->dir == CPUHP_REC_STARTUP ? 1 : -1;
			}
			KUNIT_EXPECT_EQ_MSG(test, balance, 0, "CPU %u slot %d", cpu, slot);
		}
	}
}

/* Take the secondary CPUs down and bring them back as suspend does; its result. */
typedef int (*cpuhp_rollback_sleep_fn)(struct kunit *test);

/* freeze_secondary_cpus(), then thaw_secondary_cpus(), without suspending. */
static int cpuhp_rollback_freeze_thaw(struct kunit *test)
{
	int ret = cpuhp_rollback_freeze(test, 0);

	cpuhp_rollback_thaw(NULL);
	return ret;
}

#ifdef CPUHP_KUNIT_HARNESS
#if defined(CONFIG_SUSPEND) && defined(CONFIG_PM_SLEEP_DEBUG) && defined(CONFIG_PM_SLEEP_SMP)
/*
 * The real suspend to RAM without the platform's sleep:
 * suspend_devices_and_enter() at the processors test level suspends the
 * devices, prepares the platform, and suspend_enter() takes the secondary
 * CPUs down and brings them back, as "echo mem > /sys/power/state" with
 * pm_test set to processors does after freezing the tasks. The freezer and
 * the PM notifiers are left out: a built-in case runs in a kthread while
 * PID 1 waits for it uninterruptibly, which the freezer cannot freeze (the
 * user-space cpuhp_sysfs.suspend_* cases go the whole way). The test level
 * waits suspend.pm_test_delay seconds at the CPUs (the runs boot with
 * 0).
 */
static int cpuhp_rollback_real_suspend(struct kunit *test)
{
	int saved = pm_test_level, ret;
	unsigned int flags;

	/* Set by suspend_set_ops() when the platform can suspend to RAM. */
	if (!mem_sleep_states[PM_SUSPEND_MEM])
		kunit_skip(test, "needs suspend to RAM (ACPI S3, PSCI SYSTEM_SUSPEND)");
	flags = lock_system_sleep();
	pm_test_level = TEST_CPUS;
	ret = suspend_devices_and_enter(PM_SUSPEND_MEM);
	pm_test_level = saved;
	unlock_system_sleep(flags);
	return ret;
}
#else
static int cpuhp_rollback_real_suspend(struct kunit *test)
{
	if (!IS_ENABLED(CONFIG_PM_SLEEP_SMP))
		kunit_skip(test, CPUHP_ROLLBACK_NO_FREEZE);
	kunit_skip(test, "needs CONFIG_SUSPEND and CONFIG_PM_DEBUG");
	return -EOPNOTSUPP;
}
#endif
#endif

/*
 * Every callback of every secondary CPU ran once per direction, all with
 * cpuhp_tasks_frozen set, and every state is up again.
 */
static void cpuhp_rollback_expect_sleep(struct kunit *test, cpuhp_rollback_sleep_fn sleep)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int secondaries = cpumask_weight(rb->rec->online) - 1;
	unsigned int calls = cpuhp_rec_installed(rb->rec) * secondaries;

	KUNIT_ASSERT_EQ(test, sleep(test), 0);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), calls);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), calls);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_SUSPEND);
	cpuhp_rollback_expect_balanced(test, rb);
}

/*
 * A state installed right after the CPUs came back runs its startups with
 * cpuhp_tasks_frozen clear, as for any install outside suspend/resume.
 */
static void cpuhp_rollback_expect_clear_after(struct kunit *test, cpuhp_rollback_sleep_fn sleep)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	struct cpuhp_rec_log *got;

	cpuhp_rec_remove(rb->rec, H, CPUHP_REC_NOCALLS);
	KUNIT_ASSERT_EQ(test, sleep(test), 0);
	cpuhp_rec_clear(rb->rec);

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rb->rec, H, CPUHP_AP_ONLINE_DYN, CPUHP_REC_INVOKE),
			0);
	got = cpuhp_rec_read(rb->rec);
	KUNIT_ASSERT_EQ(test, got->len, cpumask_weight(rb->rec->online));
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
}

/*
 * A teardown that fails while the CPUs go down: the sleep returns its
 * error, and after it every CPU is online with every state up.
 */
static void cpuhp_rollback_expect_sleep_fails(struct kunit *test,
					      cpuhp_rollback_sleep_fn sleep)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int k = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_MIDDLE), cpu;

	if (k == cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST))
		k = rb->cpu;
	cpuhp_rec_arm_once(rb->rec, M, CPUHP_REC_TEARDOWN, k, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_DOWN_ERR);

	KUNIT_EXPECT_EQ(test, sleep(test), CPUHP_ROLLBACK_DOWN_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, M, CPUHP_REC_TEARDOWN, k, CPUHP_REC_ANY), 1);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_SUSPEND);
	for_each_cpu(cpu, rb->rec->online) {
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	cpuhp_rollback_expect_balanced(test, rb);
}

/*
 * A startup that fails while the CPUs come back: thaw_secondary_cpus() has
 * no error to return, it warns and goes on with the other CPUs, so the
 * sleep succeeds. The failing CPU is walked back to offline, and its
 * device must say so: cpuN/online reads 0 and onlining it goes through
 * the state machine again (the SMT control keeps the device in step the
 * same way, cpuhp_offline_cpu_device()).
 */
static void cpuhp_rollback_expect_resume_fails(struct kunit *test,
					       cpuhp_rollback_sleep_fn sleep)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int k = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_MIDDLE), cpu;

	if (k == cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST))
		k = rb->cpu;
	cpuhp_rec_arm_once(rb->rec, H, CPUHP_REC_STARTUP, k, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_UP_ERR);

	KUNIT_EXPECT_EQ(test, sleep(test), 0);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, H, CPUHP_REC_STARTUP, k, CPUHP_REC_ANY), 1);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_SUSPEND);
	for_each_cpu(cpu, rb->rec->online) {
		if (cpu == k)
			continue;
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	KUNIT_EXPECT_FALSE_MSG(test, cpu_online(k), "CPU %u", k);
	cpuhp_rec_expect_state(test, k, CPUHP_OFFLINE, CPUHP_OFFLINE);
	KUNIT_EXPECT_TRUE_MSG(test, get_cpu_device(k)->offline,
			      "CPU %u is offline, its device says online", k);
}

/*
 * cpuhp_tasks_frozen is set for suspend/resume: the suspend path
 * (freeze_secondary_cpus(), then thaw_secondary_cpus(), without
 * suspending) runs every callback of every secondary CPU once per
 * direction, all with it set.
 */
static void cpuhp_rollback_frozen_set_in_suspend(struct kunit *test)
{
	cpuhp_rollback_expect_sleep(test, cpuhp_rollback_freeze_thaw);
}

/* cpuhp_tasks_frozen is clear once the secondary CPUs are thawed. */
static void cpuhp_rollback_frozen_clear_after_thaw(struct kunit *test)
{
	cpuhp_rollback_expect_clear_after(test, cpuhp_rollback_freeze_thaw);
}

/* A teardown that fails during the freeze: freeze_secondary_cpus() returns it. */
static void cpuhp_rollback_freeze_fails(struct kunit *test)
{
	cpuhp_rollback_expect_sleep_fails(test, cpuhp_rollback_freeze_thaw);
}

/* A startup that fails during the thaw leaves its CPU offline, and says so. */
static void cpuhp_rollback_thaw_fails(struct kunit *test)
{
	cpuhp_rollback_expect_resume_fails(test, cpuhp_rollback_freeze_thaw);
}

#ifdef CPUHP_KUNIT_HARNESS
/* The same through the real suspend path (cpuhp_rollback_real_suspend()). */
static void cpuhp_rollback_frozen_set_in_real_suspend(struct kunit *test)
{
	cpuhp_rollback_expect_sleep(test, cpuhp_rollback_real_suspend);
}

static void cpuhp_rollback_frozen_clear_after_real_resume(struct kunit *test)
{
	cpuhp_rollback_expect_clear_after(test, cpuhp_rollback_real_suspend);
}

/* A failing teardown aborts the real suspend with its error (suspend_enter()). */
static void cpuhp_rollback_real_suspend_fails(struct kunit *test)
{
	cpuhp_rollback_expect_sleep_fails(test, cpuhp_rollback_real_suspend);
}

static void cpuhp_rollback_real_resume_fails(struct kunit *test)
{
	cpuhp_rollback_expect_resume_fails(test, cpuhp_rollback_real_suspend);
}
#endif

/*
 * Between freeze_secondary_cpus() and thaw_secondary_cpus() nothing brings
 * a frozen CPU up: add_cpu() does not succeed (the freeze goes below the
 * driver core, so the CPU device still counts the CPU online and
 * device_online() returns 1 without calling into the state machine), and
 * no callback runs. After the thaw every CPU is online and hotplug works
 * again.
#ifdef CPUHP_KUNIT_HARNESS
 * A target write, which does reach the state machine, gives -EBUSY.
#endif
 */
static void cpuhp_rollback_frozen_refuses(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int cpu;
	int ret;

	ret = cpuhp_rollback_freeze(test, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	cpuhp_rec_clear(rb->rec);

	KUNIT_EXPECT_NE(test, add_cpu(rb->cpu), 0);
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu, CPUHP_ONLINE), -EBUSY);
#endif
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_offline(test, rb);

	kunit_release_action(test, cpuhp_rollback_thaw, NULL);
	for_each_cpu(cpu, rb->rec->online)
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
	cpuhp_rec_clear(rb->rec);
	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_TEARDOWN);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_STARTUP);
	cpuhp_rollback_check(test, rb);
}

/* Callbacks of the case's states that ran for @cpu, either direction. */
static unsigned int cpuhp_rollback_calls_for(struct cpuhp_rollback *rb, unsigned int cpu)
{
	return cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP, cpu, CPUHP_REC_ANY) +
	       cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN, cpu, CPUHP_REC_ANY);
}

/*
 * The freeze leaves only @keep online; the thaw brings back every CPU
 * online when the case started except @down, which stays offline at
 * CPUHP_OFFLINE, its states untouched by either.
 */
static void cpuhp_rollback_expect_freeze_keeps(struct kunit *test, struct cpuhp_rollback *rb,
					       int primary, unsigned int keep, int down)
{
	unsigned int cpu;
	int ret;

	cpuhp_rec_clear(rb->rec);
	ret = cpuhp_rollback_freeze(test, primary);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, num_online_cpus(), 1);
	KUNIT_EXPECT_TRUE_MSG(test, cpu_online(keep), "CPU %u kept online", keep);

	kunit_release_action(test, cpuhp_rollback_thaw, NULL);
	for_each_cpu(cpu, rb->rec->online) {
		if ((int)cpu == down)
			continue;
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	KUNIT_EXPECT_EQ(test, cpuhp_rollback_calls_for(rb, keep), 0);
	if (down >= 0) {
		cpuhp_rollback_expect_offline(test, rb);
		KUNIT_EXPECT_EQ(test, cpuhp_rollback_calls_for(rb, down), 0);
	}
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_SUSPEND);
	cpuhp_rollback_expect_balanced(test, rb);
}

/*
 * freeze_secondary_cpus(-1), what suspend does where it may run on another
 * CPU than 0 (CONFIG_PM_SLEEP_SMP_NONZERO_CPU): the first online CPU stays,
 * if it is a timer housekeeping CPU (there is no nohz_full= here).
 */
static void cpuhp_rollback_freeze_any_primary(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int first = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST);

	if (!housekeeping_cpu(first, HK_TYPE_TIMER))
		kunit_skip(test, "CPU %u is not a timer housekeeping CPU", first);
	cpuhp_rollback_expect_freeze_keeps(test, rb, -1, first, -1);
}

/*
 * freeze_secondary_cpus() asked to keep a CPU that is offline keeps the
 * first online CPU instead; the offline one is not frozen, so the thaw
 * leaves it offline.
 */
static void cpuhp_rollback_freeze_offline_primary(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rollback_expect_freeze_keeps(test, rb, rb->cpu,
					   cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST), rb->cpu);
}

/* The first CPU the freeze takes down, which reports a wakeup event. */
static int cpuhp_rollback_wakeup_cpu = -1;

static int cpuhp_rollback_wakeup_teardown(unsigned int cpu)
{
	if (cmpxchg(&cpuhp_rollback_wakeup_cpu, -1, cpu) == -1)
		pm_system_wakeup();
	return 0;
}

static void cpuhp_rollback_remove_wakeup(void *state)
{
	cpuhp_remove_state_nocalls((long)state);
}

static void cpuhp_rollback_clear_wakeup(void *unused)
{
	pm_wakeup_clear(0);
}

/*
 * A wakeup event while the freeze takes the CPUs down aborts it
 * (pm_wakeup_pending(), checked before each CPU): the first CPU it takes
 * down, W (which one depends on the order it walks the CPUs in), reports one
 * from a teardown; the freeze returns -EBUSY before the next CPU, which
 * stays online, and the thaw brings back W alone.
 */
static void cpuhp_rollback_freeze_wakeup_aborts(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int states = cpuhp_rec_installed(rb->rec), cpu, w;
	long state;
	int ret;

	if (cpumask_weight(rb->rec->online) < 3)
		kunit_skip(test, "needs three online CPUs");
	WRITE_ONCE(cpuhp_rollback_wakeup_cpu, -1);
	state = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test/cpuhp_rollback:wakeup",
					  NULL, cpuhp_rollback_wakeup_teardown);
	KUNIT_ASSERT_GT(test, state, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_remove_wakeup,
							(void *)state), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_clear_wakeup, NULL),
			0);

	ret = cpuhp_rollback_freeze(test, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_EXPECT_EQ(test, ret, -EBUSY);
	KUNIT_ASSERT_GE(test, READ_ONCE(cpuhp_rollback_wakeup_cpu), 0);
	w = READ_ONCE(cpuhp_rollback_wakeup_cpu);
	KUNIT_EXPECT_FALSE_MSG(test, cpu_online(w), "CPU %u", w);
	cpuhp_rec_expect_state(test, w, CPUHP_OFFLINE, CPUHP_OFFLINE);
	for_each_cpu(cpu, rb->rec->online) {
		if (cpu == w)
			continue;
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), states);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
					      w, CPUHP_REC_ANY), states);

	kunit_release_action(test, cpuhp_rollback_thaw, NULL);
	KUNIT_EXPECT_TRUE_MSG(test, cpu_online(w), "CPU %u", w);
	cpuhp_rec_expect_state(test, w, CPUHP_ONLINE, CPUHP_ONLINE);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), states);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_SUSPEND);
	cpuhp_rollback_expect_balanced(test, rb);
}
#endif

/*
 * What the cpuhp tracepoints reported, for N and the case's states: the
 * enter events carry the instance cpuhp_multi_enter was handed, or
 * CPUHP_REC_ANY for cpuhp_enter.
 */
struct cpuhp_rollback_trace {
	raw_spinlock_t lock;	/* probes: any CPU, preemption off, also on RT */
	unsigned int cpu;
	int states[CPUHP_REC_SLOTS];
	struct cpuhp_rec_log *log;	/* startup/teardown unknown: dir unused */
	bool enter[CPUHP_REC_LOG_SIZE];
	bool active;
};

static struct cpuhp_rollback_trace cpuhp_rollback_trace = {
	.lock = __RAW_SPIN_LOCK_UNLOCKED(cpuhp_rollback_trace.lock),
};

static void cpuhp_rollback_trace_event(unsigned int cpu, int idx, bool enter,
				       struct hlist_node *node, int ret)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	unsigned long flags;
	int slot;

	raw_spin_lock_irqsave(&t->lock, flags);
	if (!t->active || cpu != t->cpu)
		goto out;
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++) {
		if (t->states[slot] != idx || t->log->len >= CPUHP_REC_LOG_SIZE)
			continue;
		t->enter[t->log->len] = enter;
		/* Only now: a node of another state is not one of ours. */
		cpuhp_rec_log_add(t->log, cpu, slot,
				  node ? cpuhp_rec_instance_of(node) : CPUHP_REC_ANY,
				  CPUHP_REC_STARTUP, ret);
		break;
	}
out:
	raw_spin_unlock_irqrestore(&t->lock, flags);
}

static void cpuhp_rollback_probe_enter(void *data, unsigned int cpu, int target, int idx,
				       int (*fun)(unsigned int))
{
	cpuhp_rollback_trace_event(cpu, idx, true, NULL, 0);
}

static void cpuhp_rollback_probe_multi_enter(void *data, unsigned int cpu, int target,
					     int idx, int (*fun)(unsigned int,
								 struct hlist_node *),
					     struct hlist_node *node)
{
	cpuhp_rollback_trace_event(cpu, idx, true, node, 0);
}

static void cpuhp_rollback_probe_exit(void *data, unsigned int cpu, int state, int idx, int ret)
{
	cpuhp_rollback_trace_event(cpu, idx, false, NULL, ret);
}

static void cpuhp_rollback_trace_stop(void *data)
{
	raw_spin_lock_irq(&cpuhp_rollback_trace.lock);
	cpuhp_rollback_trace.active = false;
	raw_spin_unlock_irq(&cpuhp_rollback_trace.lock);
}

static void cpuhp_rollback_trace_start(struct kunit *test, struct cpuhp_rollback *rb)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	int states[CPUHP_REC_SLOTS];
	struct cpuhp_rec_log *log;
	int slot;

	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		kunit_skip(test, "needs CONFIG_TRACEPOINTS");
	log = cpuhp_rec_log_alloc(test);
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		states[slot] = cpuhp_rec_state(rb->rec, slot);
	raw_spin_lock_irq(&t->lock);
	t->cpu = rb->cpu;
	memcpy(t->states, states, sizeof(states));
	t->log = log;
	t->active = true;
	raw_spin_unlock_irq(&t->lock);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_trace_stop, NULL), 0);
}

/*
 * The tracepoints saw an enter/exit pair per logged callback, in the order
 * of the recorder's log, each exit with the callback's result; the enter of
 * a multi-instance callback came through cpuhp_multi_enter with its
 * instance, the others through cpuhp_enter.
 */
static void cpuhp_rollback_trace_expect(struct kunit *test, struct cpuhp_rollback *rb)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	struct cpuhp_rec_log *got = cpuhp_rec_read(rb->rec);
	unsigned int i, n;

	cpuhp_rollback_trace_stop(NULL);
	n = t->log->len;
	KUNIT_ASSERT_GT(test, got->len, 0);
	KUNIT_ASSERT_EQ_MSG(test, n, 2 * got->len, "trace events for %u callbacks", got->len);
	for (i = 0; i < got->len; i++) {
		const struct cpuhp_rec_call *enter = &t->log->calls[2 * i];
		const struct cpuhp_rec_call *exit = &t->log->calls[2 * i + 1];

		KUNIT_EXPECT_TRUE_MSG(test, t->enter[2 * i], "event %u is an enter", 2 * i);
		KUNIT_EXPECT_FALSE_MSG(test, t->enter[2 * i + 1], "event %u is an exit", 2 * i + 1);
		KUNIT_EXPECT_EQ_MSG(test, enter->slot, got->calls[i].slot, "call %u", i);
		KUNIT_EXPECT_EQ_MSG(test, enter->instance, got->calls[i].instance,
				    "call %u: the instance the enter tracepoint was handed", i);
		KUNIT_EXPECT_EQ_MSG(test, exit->slot, got->calls[i].slot, "call %u", i);
		KUNIT_EXPECT_EQ_MSG(test, exit->ret, got->calls[i].ret, "call %u", i);
	}
}

/* The tracepoints follow the undo_cpu_up walk of cpuhp_rollback_up_ap_fails. */
static void cpuhp_rollback_trace_up(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rollback_trace_start(test, rb);
	KUNIT_EXPECT_EQ(test, cpuhp_rollback_up_failing(rb), CPUHP_ROLLBACK_UP_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, H, CPUHP_REC_STARTUP, rb->cpu,
					      CPUHP_REC_ANY), 1);
	cpuhp_rollback_trace_expect(test, rb);
}

/* The tracepoints follow the undo_cpu_down walk of cpuhp_rollback_down_fails. */
static void cpuhp_rollback_trace_down(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_trace_start(test, rb);
	KUNIT_EXPECT_EQ(test, cpuhp_rollback_down_failing(rb), CPUHP_ROLLBACK_DOWN_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, M, CPUHP_REC_TEARDOWN, rb->cpu,
					      CPUHP_REC_ANY), 1);
	cpuhp_rollback_trace_expect(test, rb);
}

/*
 * The tracepoints follow the multi-instance walk of
 * cpuhp_rollback_up_ap_multi_fails, cpuhp_multi_enter for each instance.
 */
static void cpuhp_rollback_trace_multi(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start_with(test, H, 0);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rollback_trace_start(test, rb);
	cpuhp_rec_arm_once(rb->rec, H, CPUHP_REC_STARTUP, rb->cpu, A, CPUHP_ROLLBACK_UP_ERR);
	KUNIT_EXPECT_EQ(test, add_cpu(rb->cpu), CPUHP_ROLLBACK_UP_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, H, CPUHP_REC_STARTUP, rb->cpu, A), 1);
	cpuhp_rollback_trace_expect(test, rb);
}

#ifdef CPUHP_KUNIT_HARNESS
struct cpuhp_rollback_target {
	bool from_online;	/* N starts online, else offline */
	int slot;		/* N is driven to this slot's state */
	const char *desc;
};

static const struct cpuhp_rollback_target cpuhp_rollback_targets[] = {
	{ true, M, "online_down_to_ap_state" },
	{ true, L, "online_down_to_prepare_state" },
	{ false, M, "offline_up_to_ap_state" },
	{ false, L, "offline_up_to_prepare_state" },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_rollback_target, cpuhp_rollback_targets, desc);

/*
 * Partial targets: N, online or offline, driven to the state of M (an AP
 * state) or L (a PREPARE state) runs exactly the callbacks between and rests
 * there, online if the state is above CPUHP_TEARDOWN_CPU; driven back, it
 * runs the same callbacks the other way and is where it started.
 */
static void cpuhp_rollback_partial_target(struct kunit *test)
{
	const struct cpuhp_rollback_target *p = test->param_value;
	enum cpuhp_state start = p->from_online ? CPUHP_ONLINE : CPUHP_OFFLINE;
	enum cpuhp_rec_dir there, back;
	struct cpuhp_rollback *rb;
	int to, lo, hi;

	if (!IS_ENABLED(CONFIG_CPU_HOTPLUG_STATE_CONTROL))
		kunit_skip(test, "needs CONFIG_CPU_HOTPLUG_STATE_CONTROL");
	rb = cpuhp_rollback_start(test);
	to = cpuhp_rec_state(rb->rec, p->slot);
	if (!p->from_online)
		cpuhp_rollback_offline(test, rb);
	/*
	 * From online down to the slot's state: the slots above it go down;
	 * from offline up to it: the slots up to it come up.
	 */
	lo = p->from_online ? p->slot + 1 : L;
	hi = p->from_online ? H : p->slot;
	there = p->from_online ? CPUHP_REC_TEARDOWN : CPUHP_REC_STARTUP;
	back = p->from_online ? CPUHP_REC_STARTUP : CPUHP_REC_TEARDOWN;

	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(rb->cpu, to), 0);
	cpuhp_rollback_want_range(rb, lo, hi, there);
	cpuhp_rollback_check(test, rb);
	cpuhp_rec_expect_state(test, rb->cpu, to, to);
	KUNIT_EXPECT_EQ(test, cpu_online(rb->cpu), to > CPUHP_TEARDOWN_CPU);

	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(rb->cpu, start), 0);
	cpuhp_rollback_want_range(rb, lo, hi, back);
	cpuhp_rollback_check(test, rb);
	if (p->from_online)
		cpuhp_rollback_expect_online(test, rb);
	else
		cpuhp_rollback_expect_offline(test, rb);
}

/*
 * A target that is cant_stop (CPUHP_BRINGUP_CPU in cpuhp_hp_states[]) or
 * unnamed is refused with -EINVAL, runs nothing and leaves N online.
 */
static void cpuhp_rollback_target_refused(struct kunit *test)
{
	struct cpuhp_rollback *rb;
	int unnamed;

	if (!IS_ENABLED(CONFIG_CPU_HOTPLUG_STATE_CONTROL))
		kunit_skip(test, "needs CONFIG_CPU_HOTPLUG_STATE_CONTROL");
	rb = cpuhp_rollback_start(test);
	unnamed = cpuhp_rec_free_state(CPUHP_AP_ONLINE_DYN);
	KUNIT_ASSERT_GT(test, unnamed, 0);

	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu, CPUHP_BRINGUP_CPU), -EINVAL);
	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu, unnamed), -EINVAL);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);
}
#endif

static void cpuhp_rollback_enable(void *unused)
{
	cpu_hotplug_enable();
}

/* cpu_hotplug_disable() until the case enables again, or ends. */
static void cpuhp_rollback_disable(struct kunit *test)
{
	cpu_hotplug_disable();
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_enable, NULL), 0);
}

/* N cannot go down or up now: each way in gives -EBUSY and runs nothing. */
static void cpuhp_rollback_expect_refused(struct kunit *test, struct cpuhp_rollback *rb)
{
	bool online = cpu_online(rb->cpu);

	cpuhp_rec_clear(rb->rec);
	KUNIT_EXPECT_EQ(test, online ? remove_cpu(rb->cpu) : add_cpu(rb->cpu), -EBUSY);
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu,
						     online ? CPUHP_OFFLINE : CPUHP_ONLINE),
			-EBUSY);
#endif
	cpuhp_rollback_check(test, rb);
	if (online)
		cpuhp_rollback_expect_online(test, rb);
	else
		cpuhp_rollback_expect_offline(test, rb);
}

/*
 * cpu_hotplug_disable() refuses remove_cpu() (the CPU device's offline
 * path) and add_cpu() with -EBUSY; two disables need two enables, and after
 * the last one N goes down and up as before.
#ifdef CPUHP_KUNIT_HARNESS
 * Target writes are refused alike.
#endif
 */
static void cpuhp_rollback_disabled(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);

	cpuhp_rollback_disable(test);
	cpuhp_rollback_disable(test);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_enable, NULL);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_enable, NULL);

	cpuhp_rollback_offline(test, rb);
	cpuhp_rollback_disable(test);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_enable, NULL);

	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_STARTUP);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);
}

#ifdef CPUHP_KUNIT_HARNESS
/* N, offline, comes up: each of the case's startups once, N online. */
static void cpuhp_rollback_expect_up(struct kunit *test, struct cpuhp_rollback *rb)
{
	cpuhp_rec_clear(rb->rec);
	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_want_range(rb, L, H, CPUHP_REC_STARTUP);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb);
}

/* The skip of the SMT control's cases where it has nothing to switch. */
#define CPUHP_ROLLBACK_NO_SMT "needs SMT siblings and SMT control on (make run TOPOLOGY=smt)"

#ifdef CONFIG_HOTPLUG_SMT
/* smt/control's "on": every secondary thread brought back. */
static void cpuhp_rollback_smt_on(void *unused)
{
	lock_device_hotplug();
	cpuhp_smt_enable();
	unlock_device_hotplug();
}

/*
 * While CPU hotplug is disabled cpu_up() refuses with -EBUSY before it asks
 * whether the CPU may boot: a secondary thread that SMT control took down
 * (smt/control's "off": cpu_up() refuses it with -EPERM) gets -EBUSY too,
 * and -EPERM again once hotplug is enabled. SMT control's "off" and "on"
 * are ordinary hotplug: the thread's callbacks ran, and none of them saw
 * cpuhp_tasks_frozen.
 */
static void cpuhp_rollback_disabled_smt_off(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int cpu, thread = nr_cpu_ids;
	int ret;

	for_each_cpu(cpu, rb->rec->online) {
		if (!topology_is_primary_thread(cpu)) {
			thread = cpu;
			break;
		}
	}
	if (cpu_smt_control != CPU_SMT_ENABLED || thread >= nr_cpu_ids)
		kunit_skip(test, CPUHP_ROLLBACK_NO_SMT);
	lock_device_hotplug();
	ret = cpuhp_smt_disable(CPU_SMT_DISABLED);
	unlock_device_hotplug();
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_smt_on, NULL), 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_ASSERT_FALSE_MSG(test, cpu_online(thread), "CPU %u", thread);

	cpuhp_rollback_disable(test);
	KUNIT_EXPECT_EQ(test, add_cpu(thread), -EBUSY);
	kunit_release_action(test, cpuhp_rollback_enable, NULL);
	KUNIT_EXPECT_EQ(test, add_cpu(thread), -EPERM);

	kunit_release_action(test, cpuhp_rollback_smt_on, NULL);
	KUNIT_EXPECT_TRUE_MSG(test, cpu_online(thread), "CPU %u", thread);
	KUNIT_EXPECT_GT_MSG(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
						  thread, CPUHP_REC_ANY), 0U, "CPU %u", thread);
	KUNIT_EXPECT_GT_MSG(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP,
						  thread, CPUHP_REC_ANY), 0U, "CPU %u", thread);
	cpuhp_rollback_expect_calls(test, rb, CPUHP_ROLLBACK_HOTPLUG);
}
#else
static void cpuhp_rollback_disabled_smt_off(struct kunit *test)
{
	kunit_skip(test, CPUHP_ROLLBACK_NO_SMT);
}
#endif

/* An add_cpu() held in a startup while another thread disables hotplug. */
struct cpuhp_rollback_held {
	unsigned int cpu;
	long state;
	struct completion entered;	/* the startup runs on @cpu, or add_cpu() ended */
	struct completion release;	/* lets the startup return */
	struct completion up_done;	/* add_cpu() returned @up_ret */
	struct completion disable_done;	/* cpu_hotplug_disable() returned */
	bool up_started;
	bool held;			/* the startup ran on @cpu */
	bool disabled;			/* cpu_hotplug_disable() has returned */
	int up_ret;
	struct task_struct *disabler;
};

/* The case's operation, for the startup, which has no other context. */
static struct cpuhp_rollback_held *cpuhp_rollback_held_op;

static int cpuhp_rollback_held_startup(unsigned int cpu)
{
	struct cpuhp_rollback_held *h = READ_ONCE(cpuhp_rollback_held_op);

	if (h && cpu == h->cpu) {
		WRITE_ONCE(h->held, true);
		complete_all(&h->entered);
		wait_for_completion(&h->release);
	}
	return 0;
}

static int cpuhp_rollback_held_up(void *data)
{
	struct cpuhp_rollback_held *h = data;

	h->up_ret = add_cpu(h->cpu);
	complete_all(&h->entered);
	complete_all(&h->up_done);
	return 0;
}

static int cpuhp_rollback_held_disable(void *data)
{
	struct cpuhp_rollback_held *h = data;

	cpu_hotplug_disable();
	WRITE_ONCE(h->disabled, true);
	complete_all(&h->disable_done);
	return 0;
}

/* The startup released, both threads ended, hotplug enabled, the state gone. */
static void cpuhp_rollback_held_end(void *data)
{
	struct cpuhp_rollback_held *h = data;

	complete_all(&h->release);
	if (h->up_started)
		wait_for_completion(&h->up_done);
	if (h->disabler) {
		wait_for_completion(&h->disable_done);
		put_task_struct(h->disabler);
		cpu_hotplug_enable();
	}
	WRITE_ONCE(cpuhp_rollback_held_op, NULL);
	cpuhp_remove_state_nocalls(h->state);
}

/*
 * cpu_hotplug_disable() waits for an operation in flight (it takes the
 * lock cpu_up() and cpu_down() hold): while add_cpu(N) is held in a
 * startup, a thread calling it sleeps on that lock and returns only once
 * add_cpu() did; N is online and hotplug disabled then. Whether the
 * thread sleeps is read from its state, not from time: the lock is the
 * only place cpu_hotplug_disable() sleeps in.
 */
static void cpuhp_rollback_disable_waits(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	struct cpuhp_rollback_held *h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	struct task_struct *up, *t;
	unsigned long deadline;

	KUNIT_ASSERT_NOT_NULL(test, h);
	h->cpu = rb->cpu;
	init_completion(&h->entered);
	init_completion(&h->release);
	init_completion(&h->up_done);
	init_completion(&h->disable_done);
	cpuhp_rollback_offline(test, rb);
	h->state = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test/cpuhp_rollback:held",
					     cpuhp_rollback_held_startup, NULL);
	KUNIT_ASSERT_GT(test, h->state, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_held_end, h), 0);
	WRITE_ONCE(cpuhp_rollback_held_op, h);

	up = kthread_run(cpuhp_rollback_held_up, h, "cpuhp_rollback/up");
	KUNIT_ASSERT_FALSE(test, IS_ERR(up));
	h->up_started = true;
	wait_for_completion(&h->entered);
	KUNIT_ASSERT_TRUE_MSG(test, READ_ONCE(h->held), "add_cpu(%u) gave %d before the startup",
			      h->cpu, h->up_ret);

	t = kthread_create(cpuhp_rollback_held_disable, h, "cpuhp_rollback/disable");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	h->disabler = t;
	wake_up_process(t);
	/* It returns, or it sleeps on the lock add_cpu() holds. */
	deadline = jiffies + 30 * HZ;
	while (!READ_ONCE(h->disabled) && !wait_task_inactive(t, TASK_UNINTERRUPTIBLE)) {
		KUNIT_ASSERT_TRUE_MSG(test, time_before(jiffies, deadline),
				      "cpu_hotplug_disable() neither returned nor slept in 30 s");
		cond_resched();
	}
	KUNIT_EXPECT_FALSE_MSG(test, READ_ONCE(h->disabled),
			       "cpu_hotplug_disable() returned while add_cpu(%u) ran", h->cpu);

	complete_all(&h->release);
	wait_for_completion(&h->up_done);
	wait_for_completion(&h->disable_done);
	KUNIT_EXPECT_EQ(test, h->up_ret, 0);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_held_end, h);
}

/*
 * An enable with no disable to end warns ("Unbalanced cpu hotplug
 * enable") and changes nothing: hotplug stays enabled, one disable still
 * refuses N and its enable lets N go down and come up. The warning is
 * WARN_ONCE: the once flags are put back as they were before the enable,
 * so that a later unbalanced enable (a freeze's or a thaw's) warns too.
 */
static void cpuhp_rollback_unbalanced_enable(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	size_t once = __end_once - __start_once;
	char *flags = kunit_kmalloc(test, once + 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, flags);
	memcpy(flags, __start_once, once);
	cpuhp_rec_expect_report_begin("cpu_hotplug_enable");
	cpu_hotplug_enable();
	cpuhp_rec_expect_report_end();
	memcpy(__start_once, flags, once);

	cpuhp_rollback_disable(test);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_enable, NULL);
	cpuhp_rollback_offline(test, rb);
	cpuhp_rollback_expect_up(test, rb);
}

/*
 * Every online CPU has run at least once: cpus_booted_once_mask holds the
 * boot CPU (boot_cpu_hotplug_init()) and each CPU that came up since
 * (notify_cpu_starting()), and a CPU leaves it never, N across a down and
 * an up too. With SMT not on, cpu_bootable() lets a secondary thread up
 * only while it is not in the mask yet (x86: each thread must run once to
 * set CR4.MCE); x86 uses IPI shorthands only once every present CPU is in
 * it (apic_smt_update()).
 */
static void cpuhp_rollback_online_booted_once(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int cpu;

	for_each_online_cpu(cpu)
		KUNIT_EXPECT_TRUE_MSG(test, cpumask_test_cpu(cpu, &cpus_booted_once_mask),
				      "CPU %u online, not in cpus_booted_once_mask", cpu);
	cpuhp_rollback_offline(test, rb);
	KUNIT_EXPECT_TRUE_MSG(test, cpumask_test_cpu(rb->cpu, &cpus_booted_once_mask),
			      "CPU %u offline", rb->cpu);
	cpuhp_rollback_expect_up(test, rb);
	KUNIT_EXPECT_TRUE_MSG(test, cpumask_test_cpu(rb->cpu, &cpus_booted_once_mask),
			      "CPU %u up again", rb->cpu);
}

#ifdef CPUHP_KUNIT_PART_freeze
/*
 * A wakeup event pending before freeze_secondary_cpus() begins aborts it
 * before the first CPU (pm_wakeup_pending() is checked before each CPU
 * goes down): -EBUSY, every CPU online at the online state, no callback
 * run, and the thaw has nothing to bring back.
 */
static void cpuhp_rollback_freeze_wakeup_pending(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int cpu;
	int ret;

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_clear_wakeup, NULL),
			0);
	cpuhp_rec_clear(rb->rec);
	pm_system_wakeup();
	ret = cpuhp_rollback_freeze(test, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_EXPECT_EQ(test, ret, -EBUSY);
	for_each_cpu(cpu, rb->rec->online) {
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	kunit_release_action(test, cpuhp_rollback_thaw, NULL);
	for_each_cpu(cpu, rb->rec->online)
		KUNIT_EXPECT_EQ_MSG(test, cpuhp_rollback_calls_for(rb, cpu), 0, "CPU %u", cpu);
}

/*
 * A freeze that finds no CPU to take down (every CPU but the one it keeps
 * is offline) disables hotplug all the same, and the thaw enables it
 * again: N, offline, is refused in between and comes up afterwards.
 */
static void cpuhp_rollback_freeze_takes_none(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int keep = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST), cpu;
	int ret;

	for_each_cpu(cpu, rb->rec->online) {
		if (cpu != keep && !cpu_is_hotpluggable(cpu))
			kunit_skip(test, "CPU %u cannot go offline", cpu);
	}
	for_each_cpu(cpu, rb->rec->online) {
		if (cpu != keep)
			KUNIT_ASSERT_EQ_MSG(test, remove_cpu(cpu), 0, "CPU %u", cpu);
	}
	ret = cpuhp_rollback_freeze(test, keep);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_thaw, NULL);

	cpuhp_rollback_expect_up(test, rb);
}

#ifdef CONFIG_X86
/* The page attribute table after a reset (Intel SDM vol. 3, 13.12.4): WB WT UC- UC, twice. */
#define CPUHP_ROLLBACK_PAT_RESET 0x0007040600070406ULL

struct cpuhp_rollback_pat {
	unsigned int cpu;
	u64 pat;
};

static u64 cpuhp_rollback_read_pat(struct kunit *test, unsigned int cpu)
{
	u64 pat = 0;

	KUNIT_ASSERT_EQ_MSG(test, rdmsrl_on_cpu(cpu, MSR_IA32_CR_PAT, &pat), 0, "CPU %u", cpu);
	return pat;
}

static void cpuhp_rollback_reset_pat(struct kunit *test, unsigned int cpu)
{
	KUNIT_ASSERT_EQ_MSG(test, wrmsrl_on_cpu(cpu, MSR_IA32_CR_PAT, CPUHP_ROLLBACK_PAT_RESET),
			    0, "CPU %u", cpu);
}

/* Give the CPU the kernel's table back, when the case ended with it online. */
static void cpuhp_rollback_restore_pat(void *data)
{
	struct cpuhp_rollback_pat *p = data;

	if (cpu_online(p->cpu))
		wrmsrl_on_cpu(p->cpu, MSR_IA32_CR_PAT, p->pat);
}

/*
 * x86 writes the page attribute table of a CPU coming up from its
 * STARTING callback, except in a thaw, whose end writes every online
 * CPU's at once (arch_thaw_secondary_cpus_end()). INIT keeps the table,
 * so N is given the one a reset leaves, as a CPU that lost power has it:
 * after a freeze and thaw N holds the kernel's table again, and after a
 * down and up that follows, too. N runs with the reset table, its TLB
 * not flushed, only until it goes down; write-combining, write-protect
 * and write-through mappings take other types meanwhile, which nothing
 * in QEMU's TCG notices.
 */
static void cpuhp_rollback_thaw_sets_pat(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int keep = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST);
	struct cpuhp_rollback_pat *saved = kunit_kzalloc(test, sizeof(*saved), GFP_KERNEL);
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, saved);
	saved->cpu = rb->cpu;
	saved->pat = cpuhp_rollback_read_pat(test, keep);
	if (!pat_enabled() || saved->pat == CPUHP_ROLLBACK_PAT_RESET)
		kunit_skip(test, "needs the page attribute table set up by the kernel (x86/PAT)");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_restore_pat, saved),
			0);

	cpuhp_rollback_reset_pat(test, rb->cpu);
	ret = cpuhp_rollback_freeze(test, keep);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_thaw, NULL), 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	kunit_release_action(test, cpuhp_rollback_thaw, NULL);
	KUNIT_EXPECT_EQ_MSG(test, cpuhp_rollback_read_pat(test, rb->cpu), saved->pat,
			    "CPU %u after the thaw", rb->cpu);

	cpuhp_rollback_reset_pat(test, rb->cpu);
	cpuhp_rollback_offline(test, rb);
	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	KUNIT_EXPECT_EQ_MSG(test, cpuhp_rollback_read_pat(test, rb->cpu), saved->pat,
			    "CPU %u brought up after the thaw", rb->cpu);
}
#endif

/* The PM notifier events a sleep begins and ends with. */
struct cpuhp_rollback_pm_events {
	const char *desc;
	unsigned long prepare;
	unsigned long post;
	unsigned int sleep_flags;	/* lock_system_sleep()'s, while the events run */
};

static const struct cpuhp_rollback_pm_events cpuhp_rollback_sleeps[] = {
	{ "suspend", PM_SUSPEND_PREPARE, PM_POST_SUSPEND },
	{ "hibernation", PM_HIBERNATION_PREPARE, PM_POST_HIBERNATION },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_rollback_sleep, cpuhp_rollback_sleeps, desc);

#ifdef CONFIG_PM_SLEEP_SMP
/* The sleep's post event, then the sleep lock taken with its prepare event. */
static void cpuhp_rollback_pm_post(void *events)
{
	const struct cpuhp_rollback_pm_events *ev = events;

	pm_notifier_call_chain(ev->post);
	unlock_system_sleep(ev->sleep_flags);
}

/* As a sleep begins: the sleep lock, then the prepare event. */
static void cpuhp_rollback_pm_prepare(struct kunit *test, struct cpuhp_rollback_pm_events *ev)
{
	int ret;

	ev->sleep_flags = lock_system_sleep();
	ret = pm_notifier_call_chain_robust(ev->prepare, ev->post);
	if (ret)
		unlock_system_sleep(ev->sleep_flags);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_pm_post, ev), 0);
}

/*
 * From the PM notifiers' prepare event of a suspend or a hibernation to
 * their post event CPU hotplug is disabled (cpu_hotplug_pm_callback()): N
 * neither goes down nor, once offline, comes up (-EBUSY, no callback run);
 * after the post event it does both. The events run under the sleep lock
 * as a sleep's do; the sleep itself is left out.
 */
static void cpuhp_rollback_pm_notifier_disables(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	struct cpuhp_rollback_pm_events *ev = kunit_kmalloc(test, sizeof(*ev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ev);
	*ev = *(const struct cpuhp_rollback_pm_events *)test->param_value;
	cpuhp_rollback_pm_prepare(test, ev);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_pm_post, ev);
	cpuhp_rollback_offline(test, rb);

	cpuhp_rollback_pm_prepare(test, ev);
	cpuhp_rollback_expect_refused(test, rb);
	kunit_release_action(test, cpuhp_rollback_pm_post, ev);

	cpuhp_rollback_expect_up(test, rb);
}
#else
static void cpuhp_rollback_pm_notifier_disables(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_PM_SLEEP_SMP for the PM notifier of CPU hotplug");
}
#endif
#endif
#endif
/*
 * Many down/up cycles of N: every callback ran once per cycle and direction,
 * N is online at the end; a lost wakeup would hang until the run's timeout,
 * and a warning would be a report in the log.
 */
static void cpuhp_rollback_cycles(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	int i, slot;

	for (i = 0; i < CPUHP_ROLLBACK_CYCLES; i++) {
		KUNIT_ASSERT_EQ_MSG(test, remove_cpu(rb->cpu), 0, "cycle %d", i);
		KUNIT_ASSERT_EQ_MSG(test, add_cpu(rb->cpu), 0, "cycle %d", i);
	}
	for (slot = L; slot <= H; slot++) {
		KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, slot, CPUHP_REC_STARTUP, rb->cpu,
						      CPUHP_REC_ANY), CPUHP_ROLLBACK_CYCLES);
		KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, slot, CPUHP_REC_TEARDOWN, rb->cpu,
						      CPUHP_REC_ANY), CPUHP_ROLLBACK_CYCLES);
	}
	cpuhp_rollback_expect_online(test, rb);
}

static int cpuhp_rollback_suite_init(struct kunit_suite *suite)
{
	int ret;

	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		return 0;
	ret = register_trace_cpuhp_enter(cpuhp_rollback_probe_enter, NULL);
	if (!ret)
		ret = register_trace_cpuhp_multi_enter(cpuhp_rollback_probe_multi_enter, NULL);
	if (!ret)
		ret = register_trace_cpuhp_exit(cpuhp_rollback_probe_exit, NULL);
	return ret;
}

static void cpuhp_rollback_suite_exit(struct kunit_suite *suite)
{
	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		return;
	unregister_trace_cpuhp_exit(cpuhp_rollback_probe_exit, NULL);
	unregister_trace_cpuhp_multi_enter(cpuhp_rollback_probe_multi_enter, NULL);
	unregister_trace_cpuhp_enter(cpuhp_rollback_probe_enter, NULL);
	tracepoint_synchronize_unregister();
}

static struct kunit_case cpuhp_rollback_cases[] = {
	KUNIT_CASE(cpuhp_rollback_up_ap_fails),
	KUNIT_CASE(cpuhp_rollback_up_bp_fails),
	KUNIT_CASE(cpuhp_rollback_down_fails),
	KUNIT_CASE(cpuhp_rollback_up_ap_multi_fails),
	KUNIT_CASE(cpuhp_rollback_down_ap_multi_fails),
	KUNIT_CASE_PARAM(cpuhp_rollback_up_bp_multi_fails, cpuhp_rollback_bp_multi_gen_params),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_bp_multi_undo_fails),
	KUNIT_CASE(cpuhp_rollback_up_undo_fails),
#endif
	KUNIT_CASE(cpuhp_rollback_frozen_clear_in_hotplug),
#ifdef CPUHP_KUNIT_PART_freeze
	KUNIT_CASE(cpuhp_rollback_frozen_set_in_suspend),
	KUNIT_CASE(cpuhp_rollback_frozen_clear_after_thaw),
	KUNIT_CASE(cpuhp_rollback_freeze_fails),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_frozen_set_in_real_suspend),
	KUNIT_CASE(cpuhp_rollback_frozen_clear_after_real_resume),
	KUNIT_CASE(cpuhp_rollback_real_suspend_fails),
#endif
	KUNIT_CASE(cpuhp_rollback_thaw_fails),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_real_resume_fails),
#endif
	KUNIT_CASE(cpuhp_rollback_frozen_refuses),
	KUNIT_CASE(cpuhp_rollback_freeze_any_primary),
	KUNIT_CASE(cpuhp_rollback_freeze_offline_primary),
	KUNIT_CASE(cpuhp_rollback_freeze_wakeup_aborts),
#endif
	KUNIT_CASE(cpuhp_rollback_trace_up),
	KUNIT_CASE(cpuhp_rollback_trace_down),
	KUNIT_CASE(cpuhp_rollback_trace_multi),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE_PARAM(cpuhp_rollback_partial_target, cpuhp_rollback_target_gen_params),
	KUNIT_CASE(cpuhp_rollback_target_refused),
#endif
	KUNIT_CASE(cpuhp_rollback_disabled),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_disabled_smt_off),
	KUNIT_CASE(cpuhp_rollback_disable_waits),
#endif
#ifdef CPUHP_KUNIT_PART_freeze
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_freeze_wakeup_pending),
	KUNIT_CASE(cpuhp_rollback_freeze_takes_none),
#ifdef CONFIG_X86
	KUNIT_CASE(cpuhp_rollback_thaw_sets_pat),
#endif
	KUNIT_CASE_PARAM(cpuhp_rollback_pm_notifier_disables, cpuhp_rollback_sleep_gen_params),
#endif
#endif
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE(cpuhp_rollback_unbalanced_enable),
	KUNIT_CASE(cpuhp_rollback_online_booted_once),
#endif
	KUNIT_CASE_SLOW(cpuhp_rollback_cycles),
	{}
};

static struct kunit_suite cpuhp_rollback_suite = {
	.name = "cpuhp_rollback",
	.suite_init = cpuhp_rollback_suite_init,
	.suite_exit = cpuhp_rollback_suite_exit,
	.test_cases = cpuhp_rollback_cases,
};

kunit_test_suite(cpuhp_rollback_suite);
