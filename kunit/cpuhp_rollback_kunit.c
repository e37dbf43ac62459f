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
 *  - cpuhp_tasks_frozen (090e77c391dd) tells the callbacks that they run for
 *    suspend/resume, and only then;
 *  - the cpuhp_enter/cpuhp_multi_enter/cpuhp_exit tracepoints (5ba9ac8e2c45)
 *    follow every callback with its result;
 *  - a CPU can be driven to, and back from, any named state that is not
 *    cant_stop, as the sysfs target file does (cff7d378d3fd);
 *  - many down/up cycles, with the completion based waits of 8df3e07e7f21
 *    and e69aab13117e, stay balanced and quiet.
 *
 * Not tested: a teardown failing in the PREPARE section (L) while a CPU goes
 * down. The CPU is dead by then; 6.12 warns "DEAD callback error", returns
 * the error and leaves the CPU half-dead (cpu_online() still true, state
 * above target), and bringing it back warns in RCU: no later case could run.
 *
 * How it is observed: three recorder states on one CPU N (the last online
 * one, never the boot CPU): L at CPUHP_BP_PREPARE_DYN, run by the control
 * CPU, and M below H in CPUHP_AP_ONLINE_DYN, run by N's cpuhp thread; the
 * CPU's state and target through cpuhp_kunit_cpu_state(); and probes on the
 * cpuhp tracepoints, registered for the suite.
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/spinlock.h>
#include <trace/events/cpuhp.h>

#include "cpuhp_recorder.h"

/* The recorder slots of the three states, named as in the comment above. */
enum { L, M, H };

/* Errors no part of the hotplug core returns by itself. */
#define CPUHP_ROLLBACK_UP_ERR	(-ENODATA)
#define CPUHP_ROLLBACK_DOWN_ERR	(-ENOLINK)

/* Down/up cycles of the stress case. */
#define CPUHP_ROLLBACK_CYCLES	50

struct cpuhp_rollback {
	struct cpuhp_recorder *rec;
	struct cpuhp_rec_log *want;
	unsigned int cpu;		/* N */
};

/*
 * Install L, M and H and pick N; the recorder removes them and brings N back
 * when the case ends. The log starts empty.
 */
static struct cpuhp_rollback *cpuhp_rollback_start(struct kunit *test)
{
	struct cpuhp_rollback *rb = kunit_kzalloc(test, sizeof(*rb), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, rb);
	rb->rec = cpuhp_rec_start(test);
	rb->want = cpuhp_rec_log_alloc(test);
	rb->cpu = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_LAST);
	if (rb->cpu == cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rb->rec, L, CPUHP_BP_PREPARE_DYN, true, false), 0);
	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rb->rec, M, CPUHP_AP_ONLINE_DYN, true, false), 0);
	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rb->rec, H, CPUHP_AP_ONLINE_DYN, true, false), 0);
	KUNIT_ASSERT_LT(test, rb->rec->slots[M].state, rb->rec->slots[H].state);
	cpuhp_rec_clear(rb->rec);
	return rb;
}

/* Expect this slot/direction/result on N next. */
static void cpuhp_rollback_want(struct cpuhp_rollback *rb, int slot, enum cpuhp_rec_dir dir,
				int ret)
{
	cpuhp_rec_log_add(rb->want, rb->cpu, slot, CPUHP_REC_ANY, dir, ret);
}

/* Compare the log with what was wanted, then start both afresh. */
static void cpuhp_rollback_check(struct kunit *test, struct cpuhp_rollback *rb)
{
	cpuhp_rec_expect_log(test, rb->rec, rb->want);
	cpuhp_rec_clear(rb->rec);
	rb->want->len = 0;
}

/* A clean bringup (L, M, H up) or teardown (H, M, L down) of N. */
static void cpuhp_rollback_want_all(struct cpuhp_rollback *rb, enum cpuhp_rec_dir dir)
{
	static const int up[] = { L, M, H }, down[] = { H, M, L };
	int i;

	for (i = 0; i < ARRAY_SIZE(up); i++)
		cpuhp_rollback_want(rb, dir == CPUHP_REC_STARTUP ? up[i] : down[i], dir, 0);
}

/* N is fully online (state and target CPUHP_ONLINE) or fully offline. */
static void cpuhp_rollback_expect_online(struct kunit *test, struct cpuhp_rollback *rb,
					 bool online)
{
	enum cpuhp_state end = online ? CPUHP_ONLINE : CPUHP_OFFLINE;

	KUNIT_EXPECT_EQ(test, cpu_online(rb->cpu), online);
	cpuhp_rec_expect_state(test, rb->cpu, end, end);
}

/* Every call logged saw cpuhp_tasks_frozen == @frozen; AP ones ran on their CPU. */
static void cpuhp_rollback_expect_calls(struct kunit *test, struct cpuhp_rollback *rb,
					bool frozen)
{
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
	cpuhp_rollback_expect_calls(test, rb, false);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb, false);

	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_want_all(rb, CPUHP_REC_STARTUP);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb, true);
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
	cpuhp_rollback_expect_online(test, rb, false);
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
	cpuhp_rollback_expect_calls(test, rb, false);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb, true);

	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	cpuhp_rollback_want_all(rb, CPUHP_REC_TEARDOWN);
	cpuhp_rollback_check(test, rb);
	cpuhp_rollback_expect_online(test, rb, false);
}

#ifdef CONFIG_PM_SLEEP_SMP
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

/*
 * cpuhp_tasks_frozen: the suspend path (freeze_secondary_cpus(), then
 * thaw_secondary_cpus(), without suspending) runs every callback of every
 * secondary CPU with it set, in both directions; ordinary hotplug with it
 * clear. 6.12 leaves the global set after thaw until the next hotplug
 * operation, so only what callbacks saw is asserted.
 */
static void cpuhp_rollback_tasks_frozen(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int secondaries = cpumask_weight(rb->rec->online) - 1;
	int ret;

	KUNIT_ASSERT_EQ(test, remove_cpu(rb->cpu), 0);
	KUNIT_ASSERT_EQ(test, add_cpu(rb->cpu), 0);
	cpuhp_rollback_expect_calls(test, rb, false);
	cpuhp_rec_clear(rb->rec);

	ret = freeze_secondary_cpus(0);
	thaw_secondary_cpus();
	KUNIT_ASSERT_EQ(test, ret, 0);
	cpuhp_rollback_expect_calls(test, rb, true);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), 3 * secondaries);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, CPUHP_REC_ANY, CPUHP_REC_STARTUP,
					      CPUHP_REC_ANY, CPUHP_REC_ANY), 3 * secondaries);
	cpuhp_rollback_expect_balanced(test, rb);
}

/*
 * A teardown that fails during the freeze: freeze_secondary_cpus() returns
 * its error, and after the thaw every CPU is online with every state up.
 */
static void cpuhp_rollback_freeze_fails(struct kunit *test)
{
	struct cpuhp_rollback *rb = cpuhp_rollback_start(test);
	unsigned int k = cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_MIDDLE), cpu;
	int ret;

	if (k == cpuhp_rec_pick_cpu(rb->rec, CPUHP_REC_FIRST))
		k = rb->cpu;
	cpuhp_rec_arm_once(rb->rec, M, CPUHP_REC_TEARDOWN, k, CPUHP_REC_ANY,
			   CPUHP_ROLLBACK_DOWN_ERR);

	ret = freeze_secondary_cpus(0);
	thaw_secondary_cpus();
	KUNIT_EXPECT_EQ(test, ret, CPUHP_ROLLBACK_DOWN_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_count(rb->rec, M, CPUHP_REC_TEARDOWN, k, CPUHP_REC_ANY), 1);
	cpuhp_rollback_expect_calls(test, rb, true);
	for_each_cpu(cpu, rb->rec->online) {
		KUNIT_EXPECT_TRUE_MSG(test, cpu_online(cpu), "CPU %u", cpu);
		cpuhp_rec_expect_state(test, cpu, CPUHP_ONLINE, CPUHP_ONLINE);
	}
	cpuhp_rollback_expect_balanced(test, rb);
}
#else
static void cpuhp_rollback_tasks_frozen(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_PM_SLEEP_SMP for freeze_secondary_cpus()");
}

static void cpuhp_rollback_freeze_fails(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_PM_SLEEP_SMP for freeze_secondary_cpus()");
}
#endif

/* What the cpuhp tracepoints reported, for N and the case's states. */
struct cpuhp_rollback_trace {
	spinlock_t lock;		/* probes run on any CPU */
	unsigned int cpu;
	int states[CPUHP_REC_SLOTS];
	struct cpuhp_rec_log *log;	/* startup/teardown unknown: dir unused */
	bool enter[CPUHP_REC_LOG_SIZE];
	bool active;
};

static struct cpuhp_rollback_trace cpuhp_rollback_trace = {
	.lock = __SPIN_LOCK_UNLOCKED(cpuhp_rollback_trace.lock),
};

static void cpuhp_rollback_trace_event(unsigned int cpu, int idx, bool enter, int ret)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	unsigned long flags;
	int slot;

	spin_lock_irqsave(&t->lock, flags);
	if (!t->active || cpu != t->cpu)
		goto out;
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++) {
		if (t->states[slot] != idx || t->log->len >= CPUHP_REC_LOG_SIZE)
			continue;
		t->enter[t->log->len] = enter;
		cpuhp_rec_log_add(t->log, cpu, slot, CPUHP_REC_ANY, CPUHP_REC_STARTUP, ret);
		break;
	}
out:
	spin_unlock_irqrestore(&t->lock, flags);
}

static void cpuhp_rollback_probe_enter(void *data, unsigned int cpu, int target, int idx,
				       int (*fun)(unsigned int))
{
	cpuhp_rollback_trace_event(cpu, idx, true, 0);
}

static void cpuhp_rollback_probe_multi_enter(void *data, unsigned int cpu, int target,
					     int idx, int (*fun)(unsigned int,
								 struct hlist_node *),
					     struct hlist_node *node)
{
	cpuhp_rollback_trace_event(cpu, idx, true, 0);
}

static void cpuhp_rollback_probe_exit(void *data, unsigned int cpu, int state, int idx, int ret)
{
	cpuhp_rollback_trace_event(cpu, idx, false, ret);
}

static void cpuhp_rollback_trace_stop(void *data)
{
	spin_lock_irq(&cpuhp_rollback_trace.lock);
	cpuhp_rollback_trace.active = false;
	spin_unlock_irq(&cpuhp_rollback_trace.lock);
}

static void cpuhp_rollback_trace_start(struct kunit *test, struct cpuhp_rollback *rb)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	struct cpuhp_rec_log *log;
	int slot;

	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		kunit_skip(test, "needs CONFIG_TRACEPOINTS");
	log = cpuhp_rec_log_alloc(test);
	spin_lock_irq(&t->lock);
	t->cpu = rb->cpu;
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		t->states[slot] = rb->rec->slots[slot].state;
	t->log = log;
	t->active = true;
	spin_unlock_irq(&t->lock);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rollback_trace_stop, NULL), 0);
}

/*
 * The tracepoints saw an enter/exit pair per logged callback, in the order
 * of the recorder's log, each exit with the callback's result.
 */
static void cpuhp_rollback_trace_expect(struct kunit *test, struct cpuhp_rollback *rb)
{
	struct cpuhp_rollback_trace *t = &cpuhp_rollback_trace;
	struct cpuhp_rec_log *got = cpuhp_rec_read(rb->rec);
	unsigned int i, n;

	cpuhp_rollback_trace_stop(NULL);
	n = t->log->len;
	KUNIT_ASSERT_EQ_MSG(test, n, 2 * got->len, "trace events for %u callbacks", got->len);
	for (i = 0; i < got->len; i++) {
		const struct cpuhp_rec_call *enter = &t->log->calls[2 * i];
		const struct cpuhp_rec_call *exit = &t->log->calls[2 * i + 1];

		KUNIT_EXPECT_TRUE_MSG(test, t->enter[2 * i], "event %u is an enter", 2 * i);
		KUNIT_EXPECT_FALSE_MSG(test, t->enter[2 * i + 1], "event %u is an exit", 2 * i + 1);
		KUNIT_EXPECT_EQ_MSG(test, enter->slot, got->calls[i].slot, "call %u", i);
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
 * Partial targets: driven to M's state, N runs H's teardown only and rests
 * there; driven back to CPUHP_ONLINE it runs H's startup only. A cant_stop
 * state or an unnamed one is refused with -EINVAL and changes nothing.
 */
static void cpuhp_rollback_partial_target(struct kunit *test)
{
	struct cpuhp_rollback *rb;
	enum cpuhp_state m, unnamed;

	if (!IS_ENABLED(CONFIG_CPU_HOTPLUG_STATE_CONTROL))
		kunit_skip(test, "needs CONFIG_CPU_HOTPLUG_STATE_CONTROL");
	rb = cpuhp_rollback_start(test);
	m = rb->rec->slots[M].state;

	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(rb->cpu, m), 0);
	cpuhp_rollback_want(rb, H, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rollback_check(test, rb);
	cpuhp_rec_expect_state(test, rb->cpu, m, m);

	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(rb->cpu, CPUHP_ONLINE), 0);
	cpuhp_rollback_want(rb, H, CPUHP_REC_STARTUP, 0);
	cpuhp_rollback_check(test, rb);
	cpuhp_rec_expect_state(test, rb->cpu, CPUHP_ONLINE, CPUHP_ONLINE);

	/* cpuhp_hp_states[] marks CPUHP_BRINGUP_CPU cant_stop. */
	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu, CPUHP_BRINGUP_CPU), -EINVAL);
	for (unnamed = CPUHP_AP_ONLINE_DYN; unnamed < CPUHP_AP_ONLINE_DYN_END; unnamed++)
		if (!cpuhp_kunit_step_name(unnamed))
			break;
	KUNIT_ASSERT_NULL(test, cpuhp_kunit_step_name(unnamed));
	KUNIT_EXPECT_EQ(test, cpuhp_kunit_set_target(rb->cpu, unnamed), -EINVAL);
	cpuhp_rollback_check(test, rb);
	cpuhp_rec_expect_state(test, rb->cpu, CPUHP_ONLINE, CPUHP_ONLINE);
}

/*
 * Many down/up cycles of N: every callback ran once per cycle and direction,
 * N is online at the end; a lost wakeup would hang (the harness's timeout)
 * and a warning would trip the log-hygiene check.
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
	cpuhp_rec_expect_state(test, rb->cpu, CPUHP_ONLINE, CPUHP_ONLINE);
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
	KUNIT_CASE(cpuhp_rollback_tasks_frozen),
	KUNIT_CASE(cpuhp_rollback_freeze_fails),
	KUNIT_CASE(cpuhp_rollback_trace_up),
	KUNIT_CASE(cpuhp_rollback_trace_down),
	KUNIT_CASE(cpuhp_rollback_partial_target),
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
