// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit stress test for the CPU hotplug state machine
 *
 * What is verified: the state machine's invariants hold after every
 * operation of a seeded random walk that mixes everything the other suites
 * do one at a time, while two kernel threads keep installing and removing
 * states of their own:
 *
 *  - every CPU is at rest: state == target, online exactly when its state is
 *    above CPUHP_BRINGUP_CPU, active when online at CPUHP_ONLINE; a CPU
 *    driven to a target is there;
 *  - for every installed recorder state (and instance) and every CPU, the
 *    successful startups minus teardowns are 1 if the CPU's state is at or
 *    above the state and 0 below it: every rollback undid exactly what ran;
 *  - the callbacks of a hotplug operation saw cpuhp_tasks_frozen set in the
 *    suspend path and clear otherwise;
 *  - an injected failure that fired (the recorder logged it, or the fail
 *    attribute was consumed) is what the operation returns; one that did
 *    not fire leaves the operation successful;
 *  - when the threads stop and the states are removed, every dynamic slot
 *    is free again.
 *
 * The walk draws from: a secondary CPU down or up, a CPU driven to an
 * online-section target (a state of CPUHP_AP_ONLINE_DYN or above) and back,
 * a recorder state installed or removed (either dynamic range, single or
 * multi-instance), an instance added or removed, a one-shot failure armed
 * (a recorder fault, or the fail attribute's through cpuhp_kunit_set_fail())
 * before a down or up, and freeze_secondary_cpus()/thaw_secondary_cpus().
 *
 * The seed is printed and can be set with cpuhp_kunit.stress_seed= (make run
 * SEED=), the number of operations with cpuhp_kunit.stress_ops= (STRESS_OPS=).
 * A failure names the seed and the operation; the digest of the drawn
 * sequence printed at the end is the same for the same seed.
 *
 * Not drawn: failures of PREPARE teardowns while a CPU goes down (a
 * half-dead CPU, see cpuhp_rollback), targets below CPUHP_AP_ONLINE_DYN (the
 * sweep covers them, with the findings they raise), callbacks of installs
 * right after a thaw seeing cpuhp_tasks_frozen (only hotplug operations set
 * it; cpuhp_rollback_frozen_clear_after_thaw covers that).
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/jhash.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/string.h>

#include "cpuhp_kunit_compat.h"
#include "cpuhp_recorder.h"

/* Errors no part of the hotplug core returns by itself. */
#define CPUHP_STRESS_ERR	(-ENOTUNIQ)

/* Threads installing and removing states while the walk runs, and their states' name. */
#define CPUHP_STRESS_THREADS	2
#define CPUHP_STRESS_THREAD_NAME	"cpuhp_kunit:stress_thread"

static ulong cpuhp_stress_seed;
module_param_named(stress_seed, cpuhp_stress_seed, ulong, 0444);
MODULE_PARM_DESC(stress_seed, "cpuhp_stress: seed of the random walk (0: a random one)");

static uint cpuhp_stress_ops = 400;
module_param_named(stress_ops, cpuhp_stress_ops, uint, 0444);
MODULE_PARM_DESC(stress_ops, "cpuhp_stress: operations of the random walk");

enum cpuhp_stress_op {
	CPUHP_STRESS_TOGGLE,	/* a secondary CPU down or up */
	CPUHP_STRESS_TARGET,	/* a CPU to a target and back */
	CPUHP_STRESS_INSTALL,	/* a recorder state installed or removed */
	CPUHP_STRESS_INSTANCE,	/* an instance added or removed */
	CPUHP_STRESS_FAIL,	/* a failure armed, then a down or up */
	CPUHP_STRESS_FREEZE,	/* freeze and thaw the secondary CPUs */
	CPUHP_STRESS_NR_OPS,
};

/* Out of 100: how often each operation is drawn. */
static const unsigned int cpuhp_stress_weights[CPUHP_STRESS_NR_OPS] = {
	[CPUHP_STRESS_TOGGLE] = 25,
	[CPUHP_STRESS_TARGET] = 15,
	[CPUHP_STRESS_INSTALL] = 20,
	[CPUHP_STRESS_INSTANCE] = 10,
	[CPUHP_STRESS_FAIL] = 25,
	[CPUHP_STRESS_FREEZE] = 5,
};

static const char *const cpuhp_stress_op_names[CPUHP_STRESS_NR_OPS] = {
	"toggle", "target", "install", "instance", "fail", "freeze",
};

struct cpuhp_stress {
	struct kunit *test;
	struct cpuhp_recorder *rec;
	struct rnd_state rnd;
	u32 digest;			/* of the drawn sequence */
	unsigned int op;		/* index of the running operation */
	unsigned int done[CPUHP_STRESS_NR_OPS];
	unsigned int failed;		/* armed failures that fired */
	struct task_struct *threads[CPUHP_STRESS_THREADS];
	atomic_t thread_ops;
};

/* A number below @n, drawn from the walk's generator and folded into the digest. */
static u32 cpuhp_stress_draw(struct cpuhp_stress *s, u32 n)
{
	u32 v = prandom_u32_state(&s->rnd) % n;

	s->digest = jhash_2words(v, n, s->digest);
	return v;
}

/* A secondary CPU of those online when the case started. */
static unsigned int cpuhp_stress_cpu(struct cpuhp_stress *s)
{
	unsigned int n = cpumask_weight(s->rec->online) - 1;

	return cpumask_nth(1 + cpuhp_stress_draw(s, n), s->rec->online);
}

static int cpuhp_stress_state_of(unsigned int cpu)
{
	enum cpuhp_state state, target;

	cpuhp_kunit_cpu_state(cpu, &state, &target);
	return state;
}

/* @cpu at rest and its masks as its state says; false (and reported) if not. */
static bool cpuhp_stress_check_cpu(struct cpuhp_stress *s, unsigned int cpu)
{
	struct kunit *test = s->test;
	enum cpuhp_state state, target;
	bool ok;

	cpuhp_kunit_cpu_state(cpu, &state, &target);
	ok = state == target && cpu_online(cpu) == (state > CPUHP_BRINGUP_CPU) &&
	     (state != CPUHP_ONLINE || cpu_active(cpu));
	KUNIT_EXPECT_TRUE_MSG(test, ok,
			      "seed %lu op %u: CPU %u state %d target %d online %d active %d",
			      cpuhp_stress_seed, s->op, cpu, state, target, cpu_online(cpu),
			      cpu_active(cpu));
	return ok;
}

/*
 * Every installed recorder state (instance) is up exactly on the CPUs at or
 * above it, and an instance not on the list is up nowhere.
 */
static bool cpuhp_stress_check_balance(struct cpuhp_stress *s, unsigned int cpu)
{
	struct cpuhp_recorder *rec = s->rec;
	int slot, i, want, got;

	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++) {
		bool multi = cpuhp_rec_is_multi(rec, slot);

		if (!cpuhp_rec_is_installed(rec, slot))
			continue;
		for (i = CPUHP_REC_ANY; i < CPUHP_REC_INSTANCES; i++) {
			bool single = i == CPUHP_REC_ANY;

			/* A single-instance slot counts as ANY, a multi one per instance. */
			if (multi == single)
				continue;
			want = cpuhp_stress_state_of(cpu) >= cpuhp_rec_state(rec, slot);
			if (multi && !cpuhp_rec_instance_added(rec, i))
				want = 0;
			got = cpuhp_rec_up(rec, slot, i, cpu);
			KUNIT_EXPECT_EQ_MSG(s->test, got, want,
					    "seed %lu op %u: slot %d instance %d on CPU %u (state %d, slot's %d): startups - teardowns",
					    cpuhp_stress_seed, s->op, slot, i, cpu,
					    cpuhp_stress_state_of(cpu), cpuhp_rec_state(rec, slot));
			if (got != want)
				return false;
		}
	}
	return true;
}

/* The calls of this operation saw cpuhp_tasks_frozen == @frozen. */
static bool cpuhp_stress_check_frozen(struct cpuhp_stress *s, bool frozen)
{
	struct cpuhp_rec_log *got = cpuhp_rec_read(s->rec);
	unsigned int i;

	for (i = 0; i < got->len; i++) {
		if (got->calls[i].frozen == frozen)
			continue;
		KUNIT_FAIL(s->test,
			   "seed %lu op %u: call %u (CPU %u slot %d) saw cpuhp_tasks_frozen %d",
			   cpuhp_stress_seed, s->op, i, got->calls[i].cpu, got->calls[i].slot,
			   got->calls[i].frozen);
		return false;
	}
	return true;
}

/*
 * All invariants after operation @op; false once one does not hold. The
 * callbacks of an install or instance operation are not checked for
 * cpuhp_tasks_frozen: only hotplug operations set it (see the top).
 */
static bool cpuhp_stress_check(struct cpuhp_stress *s, enum cpuhp_stress_op op)
{
	unsigned int cpu;

	for_each_cpu(cpu, s->rec->online)
		if (!cpuhp_stress_check_cpu(s, cpu) || !cpuhp_stress_check_balance(s, cpu))
			return false;
	if (op == CPUHP_STRESS_INSTALL || op == CPUHP_STRESS_INSTANCE)
		return true;
	return cpuhp_stress_check_frozen(s, op == CPUHP_STRESS_FREEZE);
}

/* @cpu down if it is online at CPUHP_ONLINE, else up to CPUHP_ONLINE. */
static int cpuhp_stress_toggle_cpu(unsigned int cpu)
{
	if (cpuhp_stress_state_of(cpu) == CPUHP_ONLINE)
		return remove_cpu(cpu);
	return add_cpu(cpu);
}

static bool cpuhp_stress_expect_ok(struct cpuhp_stress *s, int ret, const char *what)
{
	KUNIT_EXPECT_EQ_MSG(s->test, ret, 0, "seed %lu op %u: %s", cpuhp_stress_seed, s->op,
			    what);
	return !ret;
}

/*
 * A stoppable named state of the online section (CPUHP_AP_ONLINE_DYN and
 * up), not one of the threads' (they may remove it before the CPU gets there).
 */
static int cpuhp_stress_target(struct cpuhp_stress *s)
{
	int n = CPUHP_ONLINE - CPUHP_AP_ONLINE_DYN, i, state;
	struct cpuhp_kunit_step step;

	for (i = cpuhp_stress_draw(s, n); ; i = (i + 1) % n) {
		state = CPUHP_AP_ONLINE_DYN + i;
		if (!cpuhp_kunit_step(state, &step) && step.name && !step.cant_stop &&
		    !str_has_prefix(step.name, CPUHP_STRESS_THREAD_NAME))
			return state;
	}
}

/* A CPU, online or offline, driven to a target (down or up to it) and back. */
static bool cpuhp_stress_op_target(struct cpuhp_stress *s)
{
	unsigned int cpu = cpuhp_stress_cpu(s);
	int target = cpuhp_stress_target(s), start = cpuhp_stress_state_of(cpu), ret;

	ret = cpuhp_kunit_set_target(cpu, target);
	if (!cpuhp_stress_expect_ok(s, ret, "drive a CPU to a target"))
		return false;
	KUNIT_EXPECT_EQ_MSG(s->test, cpuhp_stress_state_of(cpu), target,
			    "seed %lu op %u: CPU %u driven from %d", cpuhp_stress_seed, s->op, cpu,
			    start);
	if (cpuhp_stress_state_of(cpu) != target || !cpuhp_stress_check(s, CPUHP_STRESS_TARGET))
		return false;
	return cpuhp_stress_expect_ok(s, cpuhp_kunit_set_target(cpu, start),
				      "drive a CPU back where it was");
}

/* The slot installed as a multi-instance state, or -1. */
static int cpuhp_stress_multi_slot(struct cpuhp_stress *s)
{
	int slot;

	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		if (cpuhp_rec_is_multi(s->rec, slot))
			return slot;
	return -1;
}

/* Install a free slot (any range, single or multi) or remove an installed one. */
static bool cpuhp_stress_op_install(struct cpuhp_stress *s)
{
	static const enum cpuhp_state ranges[] = { CPUHP_AP_ONLINE_DYN, CPUHP_BP_PREPARE_DYN };
	int slot = cpuhp_stress_draw(s, CPUHP_REC_SLOTS), ret;
	unsigned int flags;

	if (cpuhp_rec_is_installed(s->rec, slot)) {
		cpuhp_rec_remove_all(s->rec, slot, CPUHP_REC_INVOKE);
		return true;
	}
	/* One multi-instance slot at a time: the recorder has one set of instances. */
	flags = CPUHP_REC_INVOKE;
	if (cpuhp_stress_multi_slot(s) < 0 && cpuhp_stress_draw(s, 2))
		flags = CPUHP_REC_MULTI;
	ret = cpuhp_rec_setup(s->rec, slot, ranges[cpuhp_stress_draw(s, 2)], flags);
	return cpuhp_stress_expect_ok(s, ret < 0 ? ret : 0, "install a state");
}

/* Add an instance to the multi-instance slot, or remove one. */
static bool cpuhp_stress_op_instance(struct cpuhp_stress *s)
{
	int instance = cpuhp_stress_draw(s, CPUHP_REC_INSTANCES);
	int slot = cpuhp_stress_multi_slot(s);

	if (slot < 0)
		return true;
	if (cpuhp_rec_instance_added(s->rec, instance)) {
		cpuhp_rec_remove_instance(s->rec, slot, instance, CPUHP_REC_INVOKE);
		return true;
	}
	return cpuhp_stress_expect_ok(s, cpuhp_rec_add_instance(s->rec, slot, instance,
								CPUHP_REC_INVOKE),
				      "add an instance");
}

/* A callback of this operation returned @err: the recorder's fault fired. */
static bool cpuhp_stress_logged_error(struct cpuhp_stress *s, int err)
{
	struct cpuhp_rec_log *got = cpuhp_rec_read(s->rec);
	unsigned int i;

	for (i = 0; i < got->len; i++)
		if (got->calls[i].ret == err)
			return true;
	return false;
}

/*
 * Arm a one-shot failure of an installed state on a CPU, in the direction
 * the CPU's next down or up takes, then do it: the operation returns the
 * error if it reached the state, else succeeds. Half the time a recorder
 * fault, half the time the fail attribute's (-EAGAIN). Never a teardown of a
 * PREPARE state: the CPU is dead by then (see the comment at the top).
 */
static bool cpuhp_stress_op_fail(struct cpuhp_stress *s)
{
	unsigned int cpu = cpuhp_stress_cpu(s);
	int slot = cpuhp_stress_draw(s, CPUHP_REC_SLOTS), err, ret;
	bool down = cpuhp_stress_state_of(cpu) == CPUHP_ONLINE;
	bool attribute = cpuhp_stress_draw(s, 2);
	bool fired;

	if (!cpuhp_rec_is_installed(s->rec, slot) ||
	    (down && cpuhp_rec_state(s->rec, slot) < CPUHP_AP_ONLINE_DYN))
		return cpuhp_stress_expect_ok(s, cpuhp_stress_toggle_cpu(cpu), "down or up");
	if (attribute) {
		err = -EAGAIN;
		ret = cpuhp_kunit_set_fail(cpu, cpuhp_rec_state(s->rec, slot));
		if (!cpuhp_stress_expect_ok(s, ret, "arm the fail attribute"))
			return false;
	} else {
		/* Of a multi-instance state, one instance: not always the first called. */
		int instance = cpuhp_rec_is_multi(s->rec, slot) ?
			       cpuhp_stress_draw(s, CPUHP_REC_INSTANCES) : CPUHP_REC_ANY;

		err = CPUHP_STRESS_ERR;
		cpuhp_rec_arm_once(s->rec, slot, down ? CPUHP_REC_TEARDOWN : CPUHP_REC_STARTUP,
				   cpu, instance, err);
	}
	ret = cpuhp_stress_toggle_cpu(cpu);
	fired = attribute ? cpuhp_kunit_get_fail(cpu) == CPUHP_INVALID :
			    cpuhp_stress_logged_error(s, err);
	cpuhp_rec_disarm(s->rec);
	cpuhp_kunit_set_fail(cpu, CPUHP_INVALID);
	s->failed += fired;
	KUNIT_EXPECT_EQ_MSG(s->test, ret, fired ? err : 0,
			    "seed %lu op %u: CPU %u %s, the armed failure %s", cpuhp_stress_seed,
			    s->op, cpu, down ? "down" : "up", fired ? "fired" : "did not fire");
	return ret == (fired ? err : 0);
}

#ifdef CONFIG_PM_SLEEP_SMP
static bool cpuhp_stress_op_freeze(struct cpuhp_stress *s)
{
	int ret = freeze_secondary_cpus(0);

	thaw_secondary_cpus();
	return cpuhp_stress_expect_ok(s, ret, "freeze_secondary_cpus()");
}
#else
static bool cpuhp_stress_op_freeze(struct cpuhp_stress *s)
{
	return true;
}
#endif

static int cpuhp_stress_noop(unsigned int cpu)
{
	return 0;
}

static int cpuhp_stress_noop_multi(unsigned int cpu, struct hlist_node *node)
{
	return 0;
}

/*
 * A thread beside the walk: installs a state in either range (with or
 * without invoking it, single or multi-instance with an instance added and
 * removed) and removes it again, until stopped.
 */
static int cpuhp_stress_thread(void *data)
{
	struct cpuhp_stress *s = data;
	struct hlist_node node;
	unsigned int n = 0;
	int state;

	while (!kthread_should_stop()) {
		enum cpuhp_state range = n & 1 ? CPUHP_AP_ONLINE_DYN : CPUHP_BP_PREPARE_DYN;

		if (n & 2) {
			state = cpuhp_setup_state_multi(range, CPUHP_STRESS_THREAD_NAME,
							cpuhp_stress_noop_multi,
							cpuhp_stress_noop_multi);
			if (state > 0) {
				if (!cpuhp_state_add_instance(state, &node))
					cpuhp_state_remove_instance(state, &node);
				cpuhp_remove_multi_state(state);
			}
		} else if (n & 4) {
			state = cpuhp_setup_state(range, CPUHP_STRESS_THREAD_NAME,
						  cpuhp_stress_noop, cpuhp_stress_noop);
			if (state > 0)
				cpuhp_remove_state(state);
		} else {
			state = cpuhp_setup_state_nocalls(range, CPUHP_STRESS_THREAD_NAME,
							  cpuhp_stress_noop, cpuhp_stress_noop);
			if (state > 0)
				cpuhp_remove_state_nocalls(state);
		}
		atomic_inc(&s->thread_ops);
		n++;
		cond_resched();
	}
	return 0;
}

static void cpuhp_stress_stop_threads(void *data)
{
	struct cpuhp_stress *s = data;
	int i;

	for (i = 0; i < CPUHP_STRESS_THREADS; i++) {
		if (!IS_ERR_OR_NULL(s->threads[i]))
			kthread_stop(s->threads[i]);
		s->threads[i] = NULL;
	}
}

/* Draw an operation by the weights. */
static enum cpuhp_stress_op cpuhp_stress_pick(struct cpuhp_stress *s)
{
	u32 v = cpuhp_stress_draw(s, 100);
	int op;

	for (op = 0; op < CPUHP_STRESS_NR_OPS - 1; op++) {
		if (v < cpuhp_stress_weights[op])
			break;
		v -= cpuhp_stress_weights[op];
	}
	return op;
}

static bool cpuhp_stress_run_op(struct cpuhp_stress *s, enum cpuhp_stress_op op)
{
	switch (op) {
	case CPUHP_STRESS_TOGGLE:
		return cpuhp_stress_expect_ok(s, cpuhp_stress_toggle_cpu(cpuhp_stress_cpu(s)),
					      "down or up");
	case CPUHP_STRESS_TARGET:
		return cpuhp_stress_op_target(s);
	case CPUHP_STRESS_INSTALL:
		return cpuhp_stress_op_install(s);
	case CPUHP_STRESS_INSTANCE:
		return cpuhp_stress_op_instance(s);
	case CPUHP_STRESS_FAIL:
		return cpuhp_stress_op_fail(s);
	default:
		return cpuhp_stress_op_freeze(s);
	}
}

/*
 * The seeded walk with the threads beside it; invariants after every
 * operation; at the end no dynamic slot is left taken.
 */
static void cpuhp_stress_walk(struct kunit *test)
{
	unsigned int free_ap = cpuhp_rec_free_states(CPUHP_AP_ONLINE_DYN);
	unsigned int free_bp = cpuhp_rec_free_states(CPUHP_BP_PREPARE_DYN);
	struct cpuhp_stress *s;
	enum cpuhp_stress_op op;
	int i, slot;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	s->test = test;
	s->rec = cpuhp_rec_start(test);
	if (cpumask_weight(s->rec->online) < 2)
		kunit_skip(test, "needs two online CPUs");
	if (!cpuhp_stress_seed)
		cpuhp_stress_seed = get_random_u32() | 1;
	kunit_info(test, "seed %lu, %u operations (cpuhp_kunit.stress_seed=, stress_ops=)\n",
		   cpuhp_stress_seed, cpuhp_stress_ops);
	prandom_seed_state(&s->rnd, cpuhp_stress_seed);

	/* Registered after the recorder's cleanup, so it runs before it. */
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_stress_stop_threads, s), 0);
	for (i = 0; i < CPUHP_STRESS_THREADS; i++) {
		s->threads[i] = kthread_run(cpuhp_stress_thread, s, "cpuhp_stress/%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(s->threads[i]));
	}

	for (s->op = 0; s->op < cpuhp_stress_ops; s->op++) {
		op = cpuhp_stress_pick(s);
		cpuhp_rec_clear(s->rec);
		KUNIT_ASSERT_TRUE_MSG(test, cpuhp_stress_run_op(s, op) &&
				      cpuhp_stress_check(s, op),
				      "seed %lu op %u (%s) broke an invariant, see above",
				      cpuhp_stress_seed, s->op, cpuhp_stress_op_names[op]);
		s->done[op]++;
	}

	cpuhp_stress_stop_threads(s);
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		if (cpuhp_rec_is_installed(s->rec, slot))
			cpuhp_rec_remove_all(s->rec, slot, CPUHP_REC_INVOKE);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_free_states(CPUHP_AP_ONLINE_DYN), free_ap);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_free_states(CPUHP_BP_PREPARE_DYN), free_bp);

	kunit_info(test, "seed %lu: %u operations, digest %08x; toggle %u target %u install %u instance %u fail %u (%u fired) freeze %u; threads %u installs\n",
		   cpuhp_stress_seed, s->op, s->digest, s->done[CPUHP_STRESS_TOGGLE],
		   s->done[CPUHP_STRESS_TARGET], s->done[CPUHP_STRESS_INSTALL],
		   s->done[CPUHP_STRESS_INSTANCE], s->done[CPUHP_STRESS_FAIL], s->failed,
		   s->done[CPUHP_STRESS_FREEZE], atomic_read(&s->thread_ops));
}

static struct kunit_case cpuhp_stress_cases[] = {
	KUNIT_CASE_SLOW(cpuhp_stress_walk),
	{}
};

static struct kunit_suite cpuhp_stress_suite = {
	.name = "cpuhp_stress",
	.test_cases = cpuhp_stress_cases,
};

kunit_test_suite(cpuhp_stress_suite);
