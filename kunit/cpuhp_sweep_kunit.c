// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit sweep of the running kernel's CPU hotplug state table.
 *
 * Documentation/core-api/cpu_hotplug.rst ("Testing of hotplug states") has
 * a tester arm a failure of one state through cpuN/hotplug/fail and run the
 * hotplug operation, by hand, one state at a time. This suite does it for
 * every named state of the table the kernel booted with (sched, rcu,
 * workqueue, perf, timers, mm, x86/mce, ...), looked up by name at run time,
 * in both directions, and promises of the 4.6 state machine (merge
 * 710d60cbf1b3) are checked for each:
 *
 *  - cff7d378d3fd, 4baa0afc6719: a callback failing while a CPU comes up
 *    (undo_cpu_up) or goes down (undo_cpu_down) walks the CPU back to where
 *    it started: every state passed is undone in reverse order, the failed
 *    one is not, state == target, cpu_online()/cpu_active() agree, and the
 *    next operation succeeds;
 *  - the failure armed through the fail attribute's rules (one helper,
 *    cpuhp_kunit_set_fail(), shared with the attribute) fires in the
 *    operation it was armed for, or is refused;
 *  - a CPU can be driven to every named, stoppable state and back through
 *    the target attribute's rules, running each callback between once.
 *
 * Observed through the cpuhp_enter/cpuhp_multi_enter tracepoints
 * (5ba9ac8e2c45) for the CPU under test, each event matched to the state's
 * startup or teardown callback by address, and cpuhp_kunit_cpu_state(). The
 * expected walks are derived from the table and the direction alone; the
 * sections come from the public layout of enum cpuhp_state (PREPARE up to
 * CPUHP_BRINGUP_CPU run on the control CPU, the STARTING/DYING range from
 * CPUHP_AP_IDLE_DEAD below CPUHP_AP_ONLINE runs atomic on the CPU itself,
 * while it is not online: tracepoints are not emitted there, so the walks
 * leave that range out).
 *
 * States that the rules refuse appear as a skip with the rule (atomic
 * callbacks, DEAD callbacks on the way down, no callback in that direction,
 * not a stoppable target), so every named state shows once per direction.
 * The table is printed on the console ("cpuhp_sweep: table ...") for the
 * picture tools/cpuhpk/states.py draws.
 *
 * Not tested: states installed after the suite started (the table is read
 * in suite init); concurrent hotplug operations (a CPU under test is the
 * only one moving).
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <trace/events/cpuhp.h>

#include "cpuhp_kunit_compat.h"
#include "cpuhp_recorder.h"

#define CPUHP_SWEEP_STATES	(CPUHP_ONLINE + 1)
/* Trace events kept per operation: two per callback, with room to spare. */
#define CPUHP_SWEEP_EVENTS	1024

enum cpuhp_sweep_dir {
	CPUHP_SWEEP_UP,
	CPUHP_SWEEP_DOWN,
};

/* One parameter: a state in one direction, and why it is not swept, if so. */
struct cpuhp_sweep_param {
	enum cpuhp_sweep_dir dir;
	int state;
	const char *skip;
	bool refused;		/* skip is a rule: the helper must refuse the state */
};

/* The table as the suite found it. */
static struct cpuhp_kunit_step cpuhp_sweep_table[CPUHP_SWEEP_STATES];
static struct cpuhp_sweep_param cpuhp_sweep_rollbacks[2 * CPUHP_SWEEP_STATES];
static unsigned int cpuhp_sweep_nr_rollbacks;
static struct cpuhp_sweep_param cpuhp_sweep_stray[2 * CPUHP_SWEEP_STATES];
static unsigned int cpuhp_sweep_nr_stray;
static struct cpuhp_sweep_param cpuhp_sweep_targets[CPUHP_SWEEP_STATES];
static unsigned int cpuhp_sweep_nr_targets;

static const char *const cpuhp_sweep_dir_name[] = { "up", "down" };

/*
 * Targets that the target rules accept but that leave the CPU unable to come
 * back or take the kernel down (README "Findings"): cpu:kick_ap by name, and
 * every state between CPUHP_BRINGUP_CPU and CPUHP_TEARDOWN_CPU, where the
 * CPU is neither up nor down (idle:dead hung the run, ap:online hit the
 * BUG_ON() in cpuhp_report_idle_dead()). Skipped saying so unless
 * cpuhp_kunit.sweep_wedging=1 (make run STRICT=1) asks for them.
 */
static const char *const cpuhp_sweep_wedging_targets[] = {
	"cpu:kick_ap",	/* bringup_cpu() waits 10 s for an AP nobody kicked */
};

/* Skip reasons of the targets above, for kunit/expected-skips. */
#define CPUHP_SWEEP_WEDGES	"wedges the CPU (README Findings); STRICT=1 runs it"
#define CPUHP_SWEEP_NEITHER	"neither up nor down: hangs or BUGs (README Findings); STRICT=1 runs it"

static bool cpuhp_sweep_wedging;
module_param_named(sweep_wedging, cpuhp_sweep_wedging, bool, 0444);
MODULE_PARM_DESC(sweep_wedging, "cpuhp_sweep: also drive a CPU to targets known to wedge it");

/*
 * Failures that leave the machine unable to go on: a failure of cpu:bringup
 * after cpu:kick_ap kicked the AP (parallel bring-up) is rolled back
 * without the AP being told, and the next bring-up of that CPU hung.
 */
static const char *const cpuhp_sweep_wedging_up_failures[] = {
	"cpu:bringup",
};

static bool cpuhp_sweep_listed(const char *name, const char *const *list, int len)
{
	int i;

	for (i = 0; i < len; i++) {
		if (!strcmp(name, list[i]))
			return true;
	}
	return false;
}

static bool cpuhp_sweep_wedges(const char *name)
{
	return cpuhp_sweep_listed(name, cpuhp_sweep_wedging_targets,
				  ARRAY_SIZE(cpuhp_sweep_wedging_targets));
}

/* The section of @state, from the public layout of enum cpuhp_state. */
static const char *cpuhp_sweep_section(int state)
{
	if (state >= CPUHP_AP_IDLE_DEAD && state < CPUHP_AP_ONLINE)
		return "atomic";
	if (state <= CPUHP_BRINGUP_CPU || state == CPUHP_TEARDOWN_CPU)
		return "bp";
	return "ap";
}

/* Does @state have a callback run in direction @dir? */
static bool cpuhp_sweep_has_cb(int state, enum cpuhp_sweep_dir dir)
{
	const struct cpuhp_kunit_step *sp = &cpuhp_sweep_table[state];

	return dir == CPUHP_SWEEP_UP ? !!sp->startup : !!sp->teardown;
}

/*
 * Why a failure of @state cannot be swept in direction @dir, or NULL. The
 * rules as Documentation/core-api/cpu_hotplug.rst and the fail attribute
 * state them; @refused says the helper must refuse it, too.
 */
static const char *cpuhp_sweep_why_not(int state, enum cpuhp_sweep_dir dir, bool *refused)
{
	*refused = true;
	if (!cpuhp_sweep_table[state].startup && !cpuhp_sweep_table[state].teardown)
		return "no callbacks: nothing to fail";
	if (!strcmp(cpuhp_sweep_section(state), "atomic"))
		return "STARTING/DYING callbacks run atomic and cannot fail";
	if (dir == CPUHP_SWEEP_DOWN && state <= CPUHP_BRINGUP_CPU)
		return "DEAD callbacks (and BRINGUP_CPU) cannot fail on the way down";
	*refused = false;
	if (!cpuhp_sweep_has_cb(state, dir))
		return dir == CPUHP_SWEEP_UP ? "no startup callback: nothing runs on the way up" :
			"no teardown callback: nothing runs on the way down";
	return NULL;
}

static void cpuhp_sweep_desc(const struct cpuhp_sweep_param *p, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s %d %s", cpuhp_sweep_dir_name[p->dir],
		 p->state, cpuhp_sweep_table[p->state].name);
}

static const void *cpuhp_sweep_next(const struct cpuhp_sweep_param *params, unsigned int nr,
				    const void *prev, char *desc)
{
	const struct cpuhp_sweep_param *p = prev ? (const struct cpuhp_sweep_param *)prev + 1 :
		params;

	if (p >= params + nr)
		return NULL;
	cpuhp_sweep_desc(p, desc);
	return p;
}

static const void *cpuhp_sweep_rollback_gen_params(const void *prev, char *desc)
{
	return cpuhp_sweep_next(cpuhp_sweep_rollbacks, cpuhp_sweep_nr_rollbacks, prev, desc);
}

static const void *cpuhp_sweep_stray_gen_params(const void *prev, char *desc)
{
	return cpuhp_sweep_next(cpuhp_sweep_stray, cpuhp_sweep_nr_stray, prev, desc);
}

static const void *cpuhp_sweep_target_gen_params(const void *prev, char *desc)
{
	return cpuhp_sweep_next(cpuhp_sweep_targets, cpuhp_sweep_nr_targets, prev, desc);
}

/* A callback the tracepoints reported for the CPU under test. */
struct cpuhp_sweep_call {
	int state;
	enum cpuhp_sweep_dir dir;
};

static struct {
	raw_spinlock_t lock;	/* probes: any CPU, preemption off (PREEMPT_RT too) */
	bool active;
	unsigned int cpu;
	unsigned int len;
	bool overflow;
	struct cpuhp_sweep_call *calls;
} cpuhp_sweep_trace = {
	.lock = __RAW_SPIN_LOCK_UNLOCKED(cpuhp_sweep_trace.lock),
};

/*
 * cpuhp_enter also reports cpuhp_kick_ap_work(), with the CPU's state as
 * idx: only the state's own callbacks count, told apart by their address.
 */
static void cpuhp_sweep_probe(unsigned int cpu, int idx, const void *fun)
{
	const struct cpuhp_kunit_step *sp;
	enum cpuhp_sweep_dir dir;
	unsigned long flags;

	if (idx < CPUHP_OFFLINE || idx > CPUHP_ONLINE)
		return;
	sp = &cpuhp_sweep_table[idx];
	if (fun && fun == sp->startup)
		dir = CPUHP_SWEEP_UP;
	else if (fun && fun == sp->teardown)
		dir = CPUHP_SWEEP_DOWN;
	else
		return;
	raw_spin_lock_irqsave(&cpuhp_sweep_trace.lock, flags);
	if (cpuhp_sweep_trace.active && cpu == cpuhp_sweep_trace.cpu) {
		if (cpuhp_sweep_trace.len < CPUHP_SWEEP_EVENTS)
			cpuhp_sweep_trace.calls[cpuhp_sweep_trace.len++] =
				(struct cpuhp_sweep_call){ idx, dir };
		else
			cpuhp_sweep_trace.overflow = true;
	}
	raw_spin_unlock_irqrestore(&cpuhp_sweep_trace.lock, flags);
}

static void cpuhp_sweep_probe_enter(void *data, unsigned int cpu, int target, int idx,
				    int (*fun)(unsigned int))
{
	cpuhp_sweep_probe(cpu, idx, fun);
}

static void cpuhp_sweep_probe_multi_enter(void *data, unsigned int cpu, int target, int idx,
					  int (*fun)(unsigned int, struct hlist_node *),
					  struct hlist_node *node)
{
	cpuhp_sweep_probe(cpu, idx, fun);
}

static void cpuhp_sweep_trace_stop(void *data)
{
	raw_spin_lock_irq(&cpuhp_sweep_trace.lock);
	cpuhp_sweep_trace.active = false;
	raw_spin_unlock_irq(&cpuhp_sweep_trace.lock);
}

/* Record the callbacks run for @cpu from now on. */
static void cpuhp_sweep_trace_start(struct kunit *test, unsigned int cpu)
{
	struct cpuhp_sweep_call *calls;

	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		kunit_skip(test, "needs CONFIG_TRACEPOINTS");
	calls = kunit_kcalloc(test, CPUHP_SWEEP_EVENTS, sizeof(*calls), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, calls);
	raw_spin_lock_irq(&cpuhp_sweep_trace.lock);
	cpuhp_sweep_trace.calls = calls;
	cpuhp_sweep_trace.cpu = cpu;
	cpuhp_sweep_trace.len = 0;
	cpuhp_sweep_trace.overflow = false;
	cpuhp_sweep_trace.active = true;
	raw_spin_unlock_irq(&cpuhp_sweep_trace.lock);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_sweep_trace_stop, NULL), 0);
}

/* An expected walk: the callbacks that run, in order. */
struct cpuhp_sweep_walk {
	struct cpuhp_sweep_call calls[2 * CPUHP_SWEEP_STATES];
	unsigned int len;
};

/*
 * Add the callbacks of direction @dir of the states in [@lo, @hi]: upwards
 * for startups, downwards for teardowns. The atomic section is left out:
 * its callbacks run while the CPU is not online, where tracepoints are not
 * emitted.
 */
static void cpuhp_sweep_walk_add(struct cpuhp_sweep_walk *walk, int lo, int hi,
				 enum cpuhp_sweep_dir dir)
{
	int i, s;

	for (i = 0; i <= hi - lo; i++) {
		s = dir == CPUHP_SWEEP_UP ? lo + i : hi - i;
		if (s <= CPUHP_OFFLINE || s > CPUHP_ONLINE || !cpuhp_sweep_has_cb(s, dir) ||
		    !strcmp(cpuhp_sweep_section(s), "atomic"))
			continue;
		walk->calls[walk->len++] = (struct cpuhp_sweep_call){ s, dir };
	}
}

/*
 * The tracepoints saw exactly @want: each callback once and in that order,
 * a multi-instance state's once per instance (maybe none).
 */
static void cpuhp_sweep_expect_walk(struct kunit *test, const struct cpuhp_sweep_walk *want)
{
	const struct cpuhp_sweep_call *got = cpuhp_sweep_trace.calls;
	unsigned int n, i = 0, w;

	cpuhp_sweep_trace_stop(NULL);
	n = cpuhp_sweep_trace.len;
	KUNIT_ASSERT_FALSE_MSG(test, cpuhp_sweep_trace.overflow, "more than %d callbacks",
			       CPUHP_SWEEP_EVENTS);
	for (w = 0; w < want->len; w++) {
		const struct cpuhp_sweep_call *c = &want->calls[w];

		if (cpuhp_sweep_table[c->state].multi_instance) {
			while (i < n && got[i].state == c->state && got[i].dir == c->dir)
				i++;
			continue;
		}
		if (i >= n || got[i].state != c->state || got[i].dir != c->dir) {
			KUNIT_FAIL(test, "walk step %u: want %s of %d %s, the trace has %s",
				   w, c->dir == CPUHP_SWEEP_UP ? "startup" : "teardown", c->state,
				   cpuhp_sweep_table[c->state].name,
				   i >= n ? "nothing more" : got[i].dir == CPUHP_SWEEP_UP ?
				   "a startup" : "a teardown");
			if (i < n)
				kunit_info(test, "trace: %s of %d %s",
					   got[i].dir == CPUHP_SWEEP_UP ? "startup" : "teardown",
					   got[i].state, cpuhp_sweep_table[got[i].state].name);
			return;
		}
		i++;
	}
	KUNIT_EXPECT_EQ_MSG(test, i, n, "callbacks after the expected walk, first %s of %d %s",
			    i < n && got[i].dir == CPUHP_SWEEP_UP ? "startup" : "teardown",
			    i < n ? got[i].state : -1,
			    i < n ? cpuhp_sweep_table[got[i].state].name : "");
}

/* @cpu rests at @want, and cpu_online()/cpu_active() agree with it. */
static void cpuhp_sweep_expect_state(struct kunit *test, unsigned int cpu, int want)
{
	cpuhp_rec_expect_state(test, cpu, want, want);
	KUNIT_EXPECT_EQ_MSG(test, cpu_online(cpu), want > CPUHP_BRINGUP_CPU, "CPU %u online",
			    cpu);
	if (want == CPUHP_ONLINE || want == CPUHP_OFFLINE)
		KUNIT_EXPECT_EQ_MSG(test, cpu_active(cpu), want == CPUHP_ONLINE,
				    "CPU %u active", cpu);
}

static void cpuhp_sweep_disarm(void *data)
{
	cpuhp_kunit_set_fail((unsigned long)data, CPUHP_INVALID);
}

/* The CPU to move: the last online one, back online and disarmed at the end. */
static unsigned int cpuhp_sweep_cpu(struct kunit *test)
{
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	unsigned int cpu = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);

	if (cpu == cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	/* Registered after the recorder's cleanup, so it runs before it. */
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_sweep_disarm,
							(void *)(unsigned long)cpu), 0);
	return cpu;
}

/*
 * A failure of state S armed on CPU N fires in the operation that passes S
 * and rolls N back to where it started.
 */
static void cpuhp_sweep_rollback(struct kunit *test)
{
	const struct cpuhp_sweep_param *p = test->param_value;
	const char *name = cpuhp_sweep_table[p->state].name;
	struct cpuhp_sweep_walk *walk;
	unsigned int cpu;
	int ret;

	cpu = cpuhp_sweep_cpu(test);
	if (p->dir == CPUHP_SWEEP_UP)
		KUNIT_ASSERT_EQ(test, remove_cpu(cpu), 0);
	if (p->skip) {
		/* The rules refuse it: check that they do, then say which rule. */
		if (p->refused)
			KUNIT_ASSERT_EQ_MSG(test, cpuhp_kunit_set_fail(cpu, p->state), -EINVAL,
					    "the fail rules accepted %d %s", p->state, name);
		kunit_skip(test, "%s", p->skip);
	}

	walk = kunit_kzalloc(test, sizeof(*walk), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, walk);
	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_fail(cpu, p->state), 0);
	cpuhp_sweep_trace_start(test, cpu);
	if (p->dir == CPUHP_SWEEP_UP) {
		ret = add_cpu(cpu);
		/* Up to just below S, then back down, S itself not undone. */
		cpuhp_sweep_walk_add(walk, CPUHP_OFFLINE + 1, p->state - 1, CPUHP_SWEEP_UP);
		cpuhp_sweep_walk_add(walk, CPUHP_OFFLINE + 1, p->state - 1, CPUHP_SWEEP_DOWN);
	} else {
		ret = remove_cpu(cpu);
		/* Down to just above S, then up again. */
		cpuhp_sweep_walk_add(walk, p->state + 1, CPUHP_ONLINE, CPUHP_SWEEP_DOWN);
		cpuhp_sweep_walk_add(walk, p->state + 1, CPUHP_ONLINE, CPUHP_SWEEP_UP);
	}
	KUNIT_EXPECT_EQ_MSG(test, ret, -EAGAIN, "%s with %d %s failing",
			    p->dir == CPUHP_SWEEP_UP ? "add_cpu()" : "remove_cpu()",
			    p->state, name);
	KUNIT_EXPECT_EQ_MSG(test, cpuhp_kunit_get_fail(cpu), CPUHP_INVALID,
			    "the armed failure did not fire");
	cpuhp_sweep_expect_walk(test, walk);
	cpuhp_sweep_expect_state(test, cpu, p->dir == CPUHP_SWEEP_UP ? CPUHP_OFFLINE :
				 CPUHP_ONLINE);

	/* The next operations are clean. */
	if (p->dir == CPUHP_SWEEP_DOWN)
		KUNIT_ASSERT_EQ(test, remove_cpu(cpu), 0);
	KUNIT_ASSERT_EQ(test, add_cpu(cpu), 0);
	cpuhp_sweep_expect_state(test, cpu, CPUHP_ONLINE);
}

/*
 * A failure armed for a state that has no callback in the direction of the
 * next operation: the rules must refuse it, or it must fire in that
 * operation. It must not stay armed for a later one, where it fires in
 * another direction (a DEAD teardown failing leaves the CPU half dead).
 */
static void cpuhp_sweep_fail_fires(struct kunit *test)
{
	const struct cpuhp_sweep_param *p = test->param_value;
	unsigned int cpu;
	int ret;

	cpu = cpuhp_sweep_cpu(test);
	if (p->dir == CPUHP_SWEEP_UP)
		KUNIT_ASSERT_EQ(test, remove_cpu(cpu), 0);
	ret = cpuhp_kunit_set_fail(cpu, p->state);
	if (ret) {
		KUNIT_EXPECT_EQ(test, ret, -EINVAL);
		return;
	}
	ret = p->dir == CPUHP_SWEEP_UP ? add_cpu(cpu) : remove_cpu(cpu);
	KUNIT_EXPECT_EQ_MSG(test, cpuhp_kunit_get_fail(cpu), CPUHP_INVALID,
			    "%d %s accepted, %s returned %d, and the failure is still armed",
			    p->state, cpuhp_sweep_table[p->state].name,
			    p->dir == CPUHP_SWEEP_UP ? "add_cpu()" : "remove_cpu()", ret);
}

/* CPU N driven from online to a stoppable state T and back. */
static void cpuhp_sweep_target(struct kunit *test)
{
	const struct cpuhp_sweep_param *p = test->param_value;
	struct cpuhp_sweep_walk *down, *up;
	unsigned int cpu;

	cpu = cpuhp_sweep_cpu(test);
	if (p->skip && p->refused) {
		KUNIT_ASSERT_EQ_MSG(test, cpuhp_kunit_set_target(cpu, p->state), -EINVAL,
				    "the target rules accepted %d %s", p->state,
				    cpuhp_sweep_table[p->state].name);
		cpuhp_sweep_expect_state(test, cpu, CPUHP_ONLINE);
	}
	if (p->skip)
		kunit_skip(test, "%s", p->skip);
	down = kunit_kzalloc(test, sizeof(*down), GFP_KERNEL);
	up = kunit_kzalloc(test, sizeof(*up), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, down);
	KUNIT_ASSERT_NOT_NULL(test, up);

	cpuhp_sweep_trace_start(test, cpu);
	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(cpu, p->state), 0);
	cpuhp_sweep_walk_add(down, p->state + 1, CPUHP_ONLINE, CPUHP_SWEEP_DOWN);
	cpuhp_sweep_expect_walk(test, down);
	cpuhp_sweep_expect_state(test, cpu, p->state);

	cpuhp_sweep_trace_start(test, cpu);
	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(cpu, CPUHP_ONLINE), 0);
	cpuhp_sweep_walk_add(up, p->state + 1, CPUHP_ONLINE, CPUHP_SWEEP_UP);
	cpuhp_sweep_expect_walk(test, up);
	cpuhp_sweep_expect_state(test, cpu, CPUHP_ONLINE);
}

/* Read the table, print it, and lay out the parameters. */
static int cpuhp_sweep_suite_init(struct kunit_suite *suite)
{
	enum cpuhp_sweep_dir dir;
	int s, ret;

	cpuhp_sweep_nr_rollbacks = 0;
	cpuhp_sweep_nr_stray = 0;
	cpuhp_sweep_nr_targets = 0;
	for (s = CPUHP_OFFLINE; s <= CPUHP_ONLINE; s++) {
		const struct cpuhp_kunit_step *sp = &cpuhp_sweep_table[s];

		ret = cpuhp_kunit_step(s, &cpuhp_sweep_table[s]);
		if (ret)
			return ret;
		if (!sp->name)
			continue;
		pr_info("cpuhp_sweep: table %d %s %s %s %s %s\n", s, sp->name,
			cpuhp_sweep_section(s), sp->startup ? "startup" : "-",
			sp->teardown ? "teardown" : "-", sp->cant_stop ? "cant_stop" : "-");
		for (dir = CPUHP_SWEEP_UP; dir <= CPUHP_SWEEP_DOWN; dir++) {
			struct cpuhp_sweep_param p = { .dir = dir, .state = s };

			p.skip = cpuhp_sweep_why_not(s, dir, &p.refused);
			/*
			 * A callback only in the other direction: armable, cannot
			 * fire. Decided before the wedging failures are skipped:
			 * those have a callback, and arming one wedges the CPU
			 * in cpuhp_sweep_fail_fires as well.
			 */
			if (p.skip && !p.refused)
				cpuhp_sweep_stray[cpuhp_sweep_nr_stray++] = p;
			if (!p.skip && dir == CPUHP_SWEEP_UP && !cpuhp_sweep_wedging &&
			    cpuhp_sweep_listed(sp->name, cpuhp_sweep_wedging_up_failures,
					       ARRAY_SIZE(cpuhp_sweep_wedging_up_failures)))
				p.skip = CPUHP_SWEEP_WEDGES;
			cpuhp_sweep_rollbacks[cpuhp_sweep_nr_rollbacks++] = p;
		}
		if (s != CPUHP_ONLINE) {
			struct cpuhp_sweep_param t = { .dir = CPUHP_SWEEP_DOWN, .state = s };

			t.refused = sp->cant_stop;
			if (sp->cant_stop)
				t.skip = "cant_stop: not a stoppable target";
			else if (!cpuhp_sweep_wedging && cpuhp_sweep_wedges(sp->name))
				t.skip = CPUHP_SWEEP_WEDGES;
			else if (!cpuhp_sweep_wedging && s > CPUHP_BRINGUP_CPU &&
				 s < CPUHP_TEARDOWN_CPU)
				t.skip = CPUHP_SWEEP_NEITHER;
			cpuhp_sweep_targets[cpuhp_sweep_nr_targets++] = t;
		}
	}
	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		return 0;
	ret = register_trace_cpuhp_enter(cpuhp_sweep_probe_enter, NULL);
	if (!ret)
		ret = register_trace_cpuhp_multi_enter(cpuhp_sweep_probe_multi_enter, NULL);
	return ret;
}

static void cpuhp_sweep_suite_exit(struct kunit_suite *suite)
{
	if (!IS_ENABLED(CONFIG_TRACEPOINTS))
		return;
	unregister_trace_cpuhp_multi_enter(cpuhp_sweep_probe_multi_enter, NULL);
	unregister_trace_cpuhp_enter(cpuhp_sweep_probe_enter, NULL);
	tracepoint_synchronize_unregister();
}

static struct kunit_case cpuhp_sweep_cases[] = {
	KUNIT_CASE_PARAM(cpuhp_sweep_rollback, cpuhp_sweep_rollback_gen_params),
	KUNIT_CASE_PARAM(cpuhp_sweep_fail_fires, cpuhp_sweep_stray_gen_params),
	KUNIT_CASE_PARAM(cpuhp_sweep_target, cpuhp_sweep_target_gen_params),
	{}
};

static struct kunit_suite cpuhp_sweep_suite = {
	.name = "cpuhp_sweep",
	.suite_init = cpuhp_sweep_suite_init,
	.suite_exit = cpuhp_sweep_suite_exit,
	.test_cases = cpuhp_sweep_cases,
};

kunit_test_suite(cpuhp_sweep_suite);
