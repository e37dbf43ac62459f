// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for installing and removing CPU hotplug states
 *
 * What is verified: the promises of commit 5b7aa87e0482 ("cpu/hotplug:
 * Implement setup/removal interface") as kernel/cpu.c keeps them today:
 *
 *  - cpuhp_setup_state() calls the startup callback for every CPU at or
 *    above the state and, "if a callback fails, the code automatically does
 *    a rollback": the teardown runs on the CPUs whose startup succeeded, the
 *    error comes back and the state (a dynamic slot) is free again; without
 *    a teardown callback there is nothing to roll back and nothing runs;
 *  - cpuhp_remove_state() calls the teardown for every CPU at or above the
 *    state; the _nocalls variants, and a missing callback, call nothing;
 *  - CPUHP_AP_ONLINE_DYN and CPUHP_BP_PREPARE_DYN hand out free slots of
 *    their range and take them back on removal;
 *  - a CPU that is offline during the install, the rollback or the removal
 *    is skipped; it gets the startup when it comes online and the teardown
 *    when it goes down;
 *  - bad requests (a state outside CPUHP_OFFLINE..CPUHP_ONLINE, a fixed state
 *    in use, no name, an instance for a single-instance state) are refused
 *    without changing anything;
 *  - multi-instance states: cpuhp_state_add_instance() rolls back the one
 *    instance that failed and leaves it off the list; the others are not
 *    touched; removing an instance tears that instance down.
 *
 * How it is observed: through the recorder (cpuhp_recorder.h), whose
 * callbacks log (cpu, slot, instance, direction, result) and can be armed to
 * fail on a chosen CPU. The expected logs are built from the scenario: which
 * CPUs are online, in the ascending order for_each_present_cpu() walks them.
 *
 * Not tested: a teardown that fails inside cpuhp_remove_state().
 * cpuhp_issue_call() does BUG_ON(ret && !bringup), with cpus_read_lock() and
 * cpuhp_state_mutex held, so provoking it would wedge every later case.
 */

#ifdef CPUHP_KUNIT_HARNESS
/*
 * Two cases provoke a WARN of kernel/cpu.c on purpose, each declared to the
 * log checks: a full dynamic range gives -ENOSPC ("No more dynamic states
 * available"), and removing a multi-instance state with instances left
 * drops them ("Removing state %d which has instances left").
 */
#endif

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>

#include "cpuhp_kunit_compat.h"
#include "cpuhp_recorder.h"

/* An error no part of the hotplug core returns by itself. */
#define CPUHP_INSTALL_ERR	(-ENODATA)

/* The instances of the multi-instance cases: A is added first, then B. */
enum { A, B };

struct cpuhp_install_param {
	enum cpuhp_state range;		/* CPUHP_AP_ONLINE_DYN or CPUHP_BP_PREPARE_DYN */
	enum cpuhp_rec_pick fail_cpu;	/* where the startup fails */
	const char *desc;
};

static const struct cpuhp_install_param cpuhp_install_ranges[] = {
	{ CPUHP_AP_ONLINE_DYN, CPUHP_REC_LAST, "ap_online_dyn" },
	{ CPUHP_BP_PREPARE_DYN, CPUHP_REC_LAST, "bp_prepare_dyn" },
};

static const struct cpuhp_install_param cpuhp_install_failures[] = {
	{ CPUHP_AP_ONLINE_DYN, CPUHP_REC_FIRST, "ap_online_dyn_first_cpu" },
	{ CPUHP_AP_ONLINE_DYN, CPUHP_REC_MIDDLE, "ap_online_dyn_middle_cpu" },
	{ CPUHP_AP_ONLINE_DYN, CPUHP_REC_LAST, "ap_online_dyn_last_cpu" },
	{ CPUHP_BP_PREPARE_DYN, CPUHP_REC_FIRST, "bp_prepare_dyn_first_cpu" },
	{ CPUHP_BP_PREPARE_DYN, CPUHP_REC_MIDDLE, "bp_prepare_dyn_middle_cpu" },
	{ CPUHP_BP_PREPARE_DYN, CPUHP_REC_LAST, "bp_prepare_dyn_last_cpu" },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_install_ranges, cpuhp_install_ranges, desc);
KUNIT_ARRAY_PARAM_DESC(cpuhp_install_failures, cpuhp_install_failures, desc);

/* @dir of @slot (@instance of it) on every CPU of @cpus, in ascending order. */
static void cpuhp_install_add_each(struct cpuhp_rec_log *log, const struct cpumask *cpus,
				   int slot, int instance, enum cpuhp_rec_dir dir)
{
	unsigned int cpu;

	for_each_cpu(cpu, cpus)
		cpuhp_rec_log_add(log, cpu, slot, instance, dir, 0);
}

/* @cpu's place (1 for the first) in @cpus, ascending. */
static unsigned int cpuhp_install_place(const struct cpumask *cpus, unsigned int cpu)
{
	unsigned int c, n = 0;

	for_each_cpu(c, cpus) {
		n++;
		if (c == cpu)
			break;
	}
	return n;
}

/*
 * Make the startup of slot 0 (@instance of it) fail on @k, one of @cpus:
 * the install walks @cpus in ascending order, so it is the n-th startup,
 * n = k's place among them.
 */
static void cpuhp_install_arm(struct cpuhp_recorder *rec, const struct cpumask *cpus,
			      unsigned int k, int instance)
{
	cpuhp_rec_arm(rec, &(struct cpuhp_rec_fault) {
		.slot = 0, .dir = CPUHP_REC_STARTUP, .cpu = CPUHP_REC_ANY,
		.instance = instance, .err = CPUHP_INSTALL_ERR,
		.nth = cpuhp_install_place(cpus, k),
	});
}

/*
 * A failed install of slot 0 (@instance of it), installed with @flags: the
 * startup on each CPU of @cpus up to @k, failing on @k, then, unless the
 * state has no teardown (CPUHP_REC_NO_TEARDOWN), the teardown on each CPU
 * before @k, ascending, as cpuhp_rollback_install() walks them.
 */
static void cpuhp_install_want_rollback(struct cpuhp_rec_log *want, const struct cpumask *cpus,
					unsigned int k, int instance, unsigned int flags)
{
	unsigned int cpu;

	for_each_cpu(cpu, cpus) {
		if (cpu > k)
			break;
		cpuhp_rec_log_add(want, cpu, 0, instance, CPUHP_REC_STARTUP,
				  cpu == k ? CPUHP_INSTALL_ERR : 0);
	}
	for_each_cpu(cpu, cpus) {
		if ((flags & CPUHP_REC_NO_TEARDOWN) || cpu >= k)
			break;
		cpuhp_rec_log_add(want, cpu, 0, instance, CPUHP_REC_TEARDOWN, 0);
	}
}

/*
 * cpuhp_setup_state() of slot 0 with the startup failing on one online CPU
 * (the parameter's), the state installed with @flags: the error comes back,
 * the startup ran on each CPU up to and including that one, the teardown
 * (if the state has one) on each CPU before it, ascending, as
 * cpuhp_rollback_install() walks, never on it or after it; AP callbacks ran
 * on their CPU, and the slot is free again.
 */
static void cpuhp_install_expect_failed_setup(struct kunit *test, unsigned int flags)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int k = cpuhp_rec_pick_cpu(rec, p->fail_cpu);
	int slot = cpuhp_rec_free_state(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	cpuhp_install_arm(rec, rec->online, k, CPUHP_REC_ANY);

	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_INVOKE | flags),
			CPUHP_INSTALL_ERR);

	cpuhp_install_want_rollback(want, rec->online, k, CPUHP_REC_ANY, flags);
	cpuhp_rec_expect_log(test, rec, want);
	if (p->range == CPUHP_AP_ONLINE_DYN)
		cpuhp_rec_expect_on_cpu(test, rec, 0);

	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 1, p->range, CPUHP_REC_NOCALLS), slot);
}

/* The startup fails on one online CPU: rolled back on the CPUs before it. */
static void cpuhp_install_startup_fails(struct kunit *test)
{
	cpuhp_install_expect_failed_setup(test, 0);
}

/* The startup fails and the state has no teardown: nothing is rolled back. */
static void cpuhp_install_startup_fails_no_teardown(struct kunit *test)
{
	cpuhp_install_expect_failed_setup(test, CPUHP_REC_NO_TEARDOWN);
}

/*
 * Take the middle of the online CPUs offline (the recorder brings it back)
 * and return the others; skips the case unless three CPUs are online.
 */
static struct cpumask *cpuhp_install_without_middle(struct kunit *test,
						    struct cpuhp_recorder *rec,
						    unsigned int *middle)
{
	struct cpumask *cpus;

	if (cpumask_weight(rec->online) < 3)
		kunit_skip(test, "needs three online CPUs");
	*middle = cpuhp_rec_pick_cpu(rec, CPUHP_REC_MIDDLE);
	cpus = kunit_kzalloc(test, cpumask_size(), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cpus);
	cpumask_copy(cpus, rec->online);
	cpumask_clear_cpu(*middle, cpus);
	KUNIT_ASSERT_EQ(test, remove_cpu(*middle), 0);
	return cpus;
}

/*
 * A CPU that is offline while the install fails on a later one is skipped by
 * the startups and by the rollback: the teardown runs on the online CPUs
 * before the failing one only.
 */
static void cpuhp_install_rollback_skips_offline_cpu(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int k = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST), middle;
	struct cpumask *cpus = cpuhp_install_without_middle(test, rec, &middle);

	cpuhp_install_arm(rec, cpus, k, CPUHP_REC_ANY);

	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_INVOKE),
			CPUHP_INSTALL_ERR);

	cpuhp_install_want_rollback(want, cpus, k, CPUHP_REC_ANY, CPUHP_REC_INVOKE);
	cpuhp_rec_expect_log(test, rec, want);
	KUNIT_EXPECT_EQ_MSG(test, cpuhp_rec_count(rec, 0, CPUHP_REC_STARTUP, middle, CPUHP_REC_ANY),
			    0, "offline CPU %u", middle);
}

/*
 * Startup succeeds everywhere: the first free slot of the range comes back,
 * named, and the startup ran once per online CPU, ascending, and nothing else.
 */
static void cpuhp_install_startup_succeeds(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	int slot = cpuhp_rec_free_state(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_INVOKE), slot);
	KUNIT_EXPECT_GE(test, slot, p->range);
	KUNIT_EXPECT_LE(test, slot, cpuhp_rec_range_end(p->range));
	KUNIT_EXPECT_STREQ(test, cpuhp_kunit_step_name(slot), "cpuhp_kunit:slot0");
	cpuhp_install_add_each(want, rec->online, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);
	if (p->range == CPUHP_AP_ONLINE_DYN)
		cpuhp_rec_expect_on_cpu(test, rec, 0);
}

/* cpuhp_remove_state() runs the teardown once per online CPU and frees the slot. */
static void cpuhp_install_remove_runs_teardown(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	int slot;

	slot = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS);
	KUNIT_ASSERT_GT(test, slot, 0);

	cpuhp_rec_remove(rec, 0, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, rec->online, 0, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
	if (p->range == CPUHP_AP_ONLINE_DYN)
		cpuhp_rec_expect_on_cpu(test, rec, 0);
	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
}

/* cpuhp_setup_state_nocalls() and cpuhp_remove_state_nocalls() call nothing. */
static void cpuhp_install_nocalls(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	int slot = cpuhp_rec_free_state(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS), slot);
	KUNIT_EXPECT_STREQ(test, cpuhp_kunit_step_name(slot), "cpuhp_kunit:slot0");
	cpuhp_rec_remove(rec, 0, CPUHP_REC_NOCALLS);
	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
	cpuhp_rec_expect_log(test, rec, none);
}

/* A state without a startup callback is installed, invoking nothing. */
static void cpuhp_install_no_startup(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	int slot = cpuhp_rec_free_state(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 0, p->range,
					      CPUHP_REC_INVOKE | CPUHP_REC_NO_STARTUP), slot);
	KUNIT_EXPECT_STREQ(test, cpuhp_kunit_step_name(slot), "cpuhp_kunit:slot0");
	cpuhp_rec_expect_log(test, rec, none);
}

/* A state without a teardown callback is removed, invoking nothing. */
static void cpuhp_install_remove_no_teardown(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	int slot;

	slot = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS | CPUHP_REC_NO_TEARDOWN);
	KUNIT_ASSERT_GT(test, slot, 0);
	cpuhp_rec_remove(rec, 0, CPUHP_REC_INVOKE);
	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
	cpuhp_rec_expect_log(test, rec, none);
}

/*
 * A CPU that is offline during the install is skipped; it gets the startup
 * when it comes online and the teardown when it goes down again.
 */
static void cpuhp_install_offline_cpu(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int n = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);
	cpumask_var_t others;

	if (n == cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	KUNIT_ASSERT_TRUE(test, alloc_cpumask_var(&others, GFP_KERNEL));
	cpumask_copy(others, rec->online);
	cpumask_clear_cpu(n, others);
	cpuhp_install_add_each(want, others, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP);
	free_cpumask_var(others);

	KUNIT_ASSERT_EQ(test, remove_cpu(n), 0);
	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_INVOKE), 0);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_next(rec, want);
	KUNIT_ASSERT_EQ(test, add_cpu(n), 0);
	cpuhp_rec_log_add(want, n, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP, 0);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_next(rec, want);
	KUNIT_ASSERT_EQ(test, remove_cpu(n), 0);
	cpuhp_rec_log_add(want, n, 0, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rec_expect_log(test, rec, want);
}

/* A CPU that is offline during the removal is skipped by the teardowns. */
static void cpuhp_install_remove_skips_offline_cpu(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int middle;
	struct cpumask *cpus;

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS), 0);
	cpus = cpuhp_install_without_middle(test, rec, &middle);
	cpuhp_rec_clear(rec);

	cpuhp_rec_remove(rec, 0, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, cpus, 0, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
}

struct cpuhp_install_bad {
	enum cpuhp_state state;		/* CPUHP_INVALID: a fixed state in use */
	bool no_name;
	int err;
	const char *desc;
};

static const struct cpuhp_install_bad cpuhp_install_bad_inputs[] = {
	{ CPUHP_OFFLINE, false, -EINVAL, "state_offline" },
	{ CPUHP_ONLINE, false, -EINVAL, "state_online" },
	{ CPUHP_ONLINE + 1, false, -EINVAL, "state_beyond_online" },
	{ CPUHP_INVALID, false, -EBUSY, "fixed_state_in_use" },
	{ CPUHP_AP_ONLINE_DYN, true, -EINVAL, "no_name" },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_install_bad_inputs, cpuhp_install_bad_inputs, desc);

/* The first named state outside the dynamic ranges. */
static enum cpuhp_state cpuhp_install_fixed_state_in_use(void)
{
	enum cpuhp_state state;

	for (state = CPUHP_OFFLINE + 1; state < CPUHP_ONLINE; state++) {
		if (state >= CPUHP_BP_PREPARE_DYN && state <= CPUHP_BP_PREPARE_DYN_END)
			continue;
		if (state >= CPUHP_AP_ONLINE_DYN && state <= CPUHP_AP_ONLINE_DYN_END)
			continue;
		if (cpuhp_kunit_step_name(state))
			return state;
	}
	return CPUHP_INVALID;
}

static int cpuhp_install_noop(unsigned int cpu)
{
	return 0;
}

/* The names of all states, to see that nothing changed. */
static const char **cpuhp_install_names(struct kunit *test)
{
	const char **names = kunit_kcalloc(test, CPUHP_ONLINE + 1, sizeof(*names), GFP_KERNEL);
	enum cpuhp_state state;

	KUNIT_ASSERT_NOT_NULL(test, names);
	for (state = CPUHP_OFFLINE; state <= CPUHP_ONLINE; state++)
		names[state] = cpuhp_kunit_step_name(state);
	return names;
}

/* A bad request gets its documented error and changes nothing, calls nothing. */
static void cpuhp_install_bad_input(struct kunit *test)
{
	const struct cpuhp_install_bad *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	enum cpuhp_state state = p->state;
	const char **before, **after;
	int ret;

	if (state == CPUHP_INVALID)
		state = cpuhp_install_fixed_state_in_use();
	KUNIT_ASSERT_NE_MSG(test, state, CPUHP_INVALID, "no fixed state in use");
	before = cpuhp_install_names(test);

	if (p->no_name)
		ret = cpuhp_setup_state(state, NULL, cpuhp_install_noop, NULL);
	else
		ret = cpuhp_rec_setup(rec, 0, state, CPUHP_REC_INVOKE);
	KUNIT_EXPECT_EQ_MSG(test, ret, p->err, "state %d", state);

	after = cpuhp_install_names(test);
	KUNIT_EXPECT_MEMEQ(test, after, before, (CPUHP_ONLINE + 1) * sizeof(*before));
	cpuhp_rec_expect_log(test, rec, none);
}

/*
 * An instance for a single-instance state is refused with -EINVAL by both
 * cpuhp_state_add_instance() and cpuhp_state_remove_instance(), calling
 * nothing.
 */
static void cpuhp_install_instance_of_single_state(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	struct hlist_node node = {};
	int state;

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS), 0);
	state = cpuhp_rec_state(rec, 0);

	KUNIT_EXPECT_EQ(test, cpuhp_state_add_instance(state, &node), -EINVAL);
	KUNIT_EXPECT_EQ(test, cpuhp_state_remove_instance(state, &node), -EINVAL);
	cpuhp_rec_expect_log(test, rec, none);
}

#ifdef CPUHP_KUNIT_HARNESS
struct cpuhp_install_fill {
	enum cpuhp_state range;
	int states[CPUHP_AP_ONLINE_DYN_END - CPUHP_AP_ONLINE_DYN + 1 +
		   CPUHP_BP_PREPARE_DYN_END - CPUHP_BP_PREPARE_DYN + 1];
	unsigned int n;
};

static void cpuhp_install_unfill(void *data)
{
	struct cpuhp_install_fill *fill = data;

	while (fill->n)
		cpuhp_remove_state_nocalls(fill->states[--fill->n]);
}

/*
 * Filling the dynamic range: each free slot is handed out once, the next
 * setup gets -ENOSPC (with a warning, declared to the log checks),
 * and removal gives every slot back.
 */
static void cpuhp_install_dyn_range_full(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	unsigned int free = cpuhp_rec_free_states(p->range);
	struct cpuhp_install_fill *fill;
	int ret;

	fill = kunit_kzalloc(test, sizeof(*fill), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fill);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_install_unfill, fill), 0);
	KUNIT_ASSERT_GT(test, free, 0);

	while (fill->n < free) {
		ret = cpuhp_setup_state_nocalls(p->range, "cpuhp_kunit:fill", NULL, NULL);
		KUNIT_ASSERT_GT_MSG(test, ret, 0, "setup %u of %u", fill->n + 1, free);
		fill->states[fill->n++] = ret;
		KUNIT_EXPECT_GE(test, ret, p->range);
		KUNIT_EXPECT_LE(test, ret, cpuhp_rec_range_end(p->range));
	}
	KUNIT_EXPECT_EQ(test, cpuhp_rec_free_states(p->range), 0);

	cpuhp_rec_expect_report_begin("at kernel/cpu.c:");
	ret = cpuhp_setup_state_nocalls(p->range, "cpuhp_kunit:fill", NULL, NULL);
	cpuhp_rec_expect_report_end();
	KUNIT_EXPECT_EQ(test, ret, -ENOSPC);
	if (ret > 0)
		fill->states[fill->n++] = ret;

	cpuhp_install_unfill(fill);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_free_states(p->range), free);
}

/* A multi-instance state in slot 0 with instance A added, the log empty. */
#endif

static void cpuhp_install_multi_with_a(struct kunit *test, struct cpuhp_recorder *rec,
				       enum cpuhp_state range, unsigned int flags)
{
	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, range, CPUHP_REC_MULTI | flags), 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, A, CPUHP_REC_INVOKE), 0);
	cpuhp_rec_clear(rec);
}

/*
 * Instance B of a multi-instance state installed with @flags, its startup
 * failing on CPU k (the parameter's): the error comes back, B is rolled
 * back on the CPUs before k only (not at all without a teardown), and
 * instance A, added before, is not called at all.
 */
static void cpuhp_install_expect_failed_instance(struct kunit *test, unsigned int flags)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int k = cpuhp_rec_pick_cpu(rec, p->fail_cpu);

	cpuhp_install_multi_with_a(test, rec, p->range, flags);
	cpuhp_rec_arm_once(rec, 0, CPUHP_REC_STARTUP, k, B, CPUHP_INSTALL_ERR);

	KUNIT_EXPECT_EQ(test, cpuhp_rec_add_instance(rec, 0, B, CPUHP_REC_INVOKE),
			CPUHP_INSTALL_ERR);

	cpuhp_install_want_rollback(want, rec->online, k, B, flags);
	cpuhp_rec_expect_log(test, rec, want);
}

/* An instance whose startup fails on one CPU is rolled back alone. */
static void cpuhp_install_multi_add_fails(struct kunit *test)
{
	cpuhp_install_expect_failed_instance(test, 0);
}

/* As above without a teardown callback: nothing is rolled back. */
static void cpuhp_install_multi_add_fails_no_teardown(struct kunit *test)
{
	cpuhp_install_expect_failed_instance(test, CPUHP_REC_NO_TEARDOWN);
}

/*
 * The instance whose add failed is not on the state's list: a CPU going down
 * and up calls instance A only.
 */
static void cpuhp_install_multi_failed_instance_off_list(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int n = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);

	if (n == cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	cpuhp_install_multi_with_a(test, rec, p->range, 0);
	cpuhp_rec_arm_once(rec, 0, CPUHP_REC_STARTUP, n, B, CPUHP_INSTALL_ERR);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, B, CPUHP_REC_INVOKE),
			CPUHP_INSTALL_ERR);
	cpuhp_rec_clear(rec);

	KUNIT_ASSERT_EQ(test, remove_cpu(n), 0);
	KUNIT_ASSERT_EQ(test, add_cpu(n), 0);
	cpuhp_rec_log_add(want, n, 0, A, CPUHP_REC_TEARDOWN, 0);
	cpuhp_rec_log_add(want, n, 0, A, CPUHP_REC_STARTUP, 0);
	cpuhp_rec_expect_log(test, rec, want);
}

/* Adding an instance runs its startup on each online CPU, ascending, and no other. */
static void cpuhp_install_multi_add_instance(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);

	cpuhp_install_multi_with_a(test, rec, p->range, 0);

	KUNIT_EXPECT_EQ(test, cpuhp_rec_add_instance(rec, 0, B, CPUHP_REC_INVOKE), 0);
	cpuhp_install_add_each(want, rec->online, 0, B, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);
}

/* Removing an instance runs its teardown on each online CPU, ascending, and no other. */
static void cpuhp_install_multi_remove_instance(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);

	cpuhp_install_multi_with_a(test, rec, p->range, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, B, CPUHP_REC_NOCALLS), 0);

	cpuhp_rec_remove_instance(rec, 0, A, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, rec->online, 0, A, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
}

struct cpuhp_install_multi_quiet {
	enum cpuhp_state range;
	unsigned int setup;		/* extra enum cpuhp_rec_flags for the state */
	unsigned int calls;		/* CPUHP_REC_INVOKE or CPUHP_REC_NOCALLS */
	const char *desc;
};

static const struct cpuhp_install_multi_quiet cpuhp_install_multi_quiet_params[] = {
	{ CPUHP_AP_ONLINE_DYN, 0, CPUHP_REC_NOCALLS, "ap_online_dyn_nocalls" },
	{ CPUHP_BP_PREPARE_DYN, 0, CPUHP_REC_NOCALLS, "bp_prepare_dyn_nocalls" },
	{ CPUHP_AP_ONLINE_DYN, CPUHP_REC_NO_STARTUP | CPUHP_REC_NO_TEARDOWN, CPUHP_REC_INVOKE,
	  "ap_online_dyn_no_callbacks" },
	{ CPUHP_BP_PREPARE_DYN, CPUHP_REC_NO_STARTUP | CPUHP_REC_NO_TEARDOWN, CPUHP_REC_INVOKE,
	  "bp_prepare_dyn_no_callbacks" },
};

KUNIT_ARRAY_PARAM_DESC(cpuhp_install_multi_quiet, cpuhp_install_multi_quiet_params, desc);

/*
 * The _nocalls instance functions and cpuhp_remove_multi_state() call
 * nothing; a multi-instance state without startup or teardown callbacks
 * calls nothing either, with or without _nocalls.
 */
static void cpuhp_install_multi_calls_nothing(struct kunit *test)
{
	const struct cpuhp_install_multi_quiet *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	int slot;

	slot = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_MULTI | p->setup);
	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_add_instance(rec, 0, A, p->calls), 0);
	cpuhp_rec_remove_instance(rec, 0, A, p->calls);
	cpuhp_rec_remove(rec, 0, p->calls);
	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
	cpuhp_rec_expect_log(test, rec, none);
}

/*
 * A CPU that is offline while an instance is added or removed is skipped: the
 * startup and the teardown run on the online CPUs only.
 */
static void cpuhp_install_multi_skips_offline_cpu(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int middle;
	struct cpumask *cpus;

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_MULTI), 0);
	cpus = cpuhp_install_without_middle(test, rec, &middle);
	cpuhp_rec_clear(rec);

	KUNIT_EXPECT_EQ(test, cpuhp_rec_add_instance(rec, 0, A, CPUHP_REC_INVOKE), 0);
	cpuhp_rec_remove_instance(rec, 0, A, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, cpus, 0, A, CPUHP_REC_STARTUP);
	cpuhp_install_add_each(want, cpus, 0, A, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
}

#ifdef CPUHP_KUNIT_HARNESS
/*
 * Removing a multi-instance state that still has instances warns ("Removing
 * state %d which has instances left", a WARN in kernel/cpu.c declared to the
 * log checks), calls nothing and frees the state.
 */
static void cpuhp_install_multi_remove_with_instances(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *none = cpuhp_rec_log_alloc(test);
	int state;

	cpuhp_install_multi_with_a(test, rec, p->range, 0);
	state = cpuhp_rec_state(rec, 0);

	cpuhp_rec_expect_report_begin("at kernel/cpu.c:");
	cpuhp_rec_remove(rec, 0, CPUHP_REC_INVOKE);
	cpuhp_rec_expect_report_end();

	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(state));
	cpuhp_rec_expect_log(test, rec, none);
}
#endif

#ifdef CPUHP_KUNIT_HARNESS
/*
 * A CPU resting exactly at a state has run that state's startup: installing
 * it, adding an instance to it, removing the instance or the state calls it
 * there too ("at or above the state", cpuhp_setup_state() and friends
 * compare st->state with the state). N is parked there with a target write
 * (CONFIG_CPU_HOTPLUG_STATE_CONTROL): for an AP state it rests partly up,
 * for a PREPARE state offline. The state is installed without calls, N
 * parked at it and the state removed without calls, so that N rests at the
 * slot the next install of the range hands out again.
 */
static void cpuhp_install_cpu_at_the_state(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int n = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);
	int state, ret;

	if (n == cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	if (!IS_ENABLED(CONFIG_CPU_HOTPLUG_STATE_CONTROL))
		kunit_skip(test, "needs CONFIG_CPU_HOTPLUG_STATE_CONTROL");

	state = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_NOCALLS);
	KUNIT_ASSERT_GT(test, state, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(n, state), 0);
	cpuhp_rec_expect_state(test, n, state, state);
	cpuhp_rec_remove(rec, 0, CPUHP_REC_NOCALLS);

	/* The install calls the startup on N, resting at the state. */
	cpuhp_rec_next(rec, want);
	ret = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_INVOKE);
	KUNIT_ASSERT_GT(test, ret, 0);
	if (ret != state)
		kunit_skip(test, "the range handed out slot %d, not %d again", ret, state);
	cpuhp_install_add_each(want, rec->online, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);

	/* So does the removal, the teardown. */
	cpuhp_rec_next(rec, want);
	cpuhp_rec_remove(rec, 0, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, rec->online, 0, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
	cpuhp_rec_expect_state(test, n, state, state);
}

/* The same for an instance added to, and removed from, the state N rests at. */
static void cpuhp_install_cpu_at_the_multi_state(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int n = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);
	int state;

	if (n == cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST))
		kunit_skip(test, "needs two online CPUs");
	if (!IS_ENABLED(CONFIG_CPU_HOTPLUG_STATE_CONTROL))
		kunit_skip(test, "needs CONFIG_CPU_HOTPLUG_STATE_CONTROL");

	state = cpuhp_rec_setup(rec, 0, p->range, CPUHP_REC_MULTI | CPUHP_REC_INVOKE);
	KUNIT_ASSERT_GT(test, state, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_kunit_set_target(n, state), 0);
	cpuhp_rec_expect_state(test, n, state, state);

	cpuhp_rec_next(rec, want);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, A, CPUHP_REC_INVOKE), 0);
	cpuhp_install_add_each(want, rec->online, 0, A, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_next(rec, want);
	cpuhp_rec_remove_instance(rec, 0, A, CPUHP_REC_INVOKE);
	cpuhp_install_add_each(want, rec->online, 0, A, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);
	cpuhp_rec_expect_state(test, n, state, state);
}
#endif

static struct kunit_case cpuhp_install_cases[] = {
	KUNIT_CASE_PARAM(cpuhp_install_startup_fails, cpuhp_install_failures_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_startup_fails_no_teardown,
			 cpuhp_install_failures_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_rollback_skips_offline_cpu,
			 cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_startup_succeeds, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_remove_runs_teardown, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_nocalls, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_no_startup, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_remove_no_teardown, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_offline_cpu, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_remove_skips_offline_cpu,
			 cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_bad_input, cpuhp_install_bad_inputs_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_instance_of_single_state,
			 cpuhp_install_ranges_gen_params),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE_PARAM(cpuhp_install_dyn_range_full, cpuhp_install_ranges_gen_params),
#endif
	KUNIT_CASE_PARAM(cpuhp_install_multi_add_instance, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_add_fails, cpuhp_install_failures_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_add_fails_no_teardown,
			 cpuhp_install_failures_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_failed_instance_off_list,
			 cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_remove_instance, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_calls_nothing,
			 cpuhp_install_multi_quiet_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_skips_offline_cpu,
			 cpuhp_install_ranges_gen_params),
#ifdef CPUHP_KUNIT_HARNESS
	KUNIT_CASE_PARAM(cpuhp_install_multi_remove_with_instances,
			 cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_cpu_at_the_state, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_cpu_at_the_multi_state, cpuhp_install_ranges_gen_params),
#endif
	{}
};

static struct kunit_suite cpuhp_install_suite = {
	.name = "cpuhp_install",
	.test_cases = cpuhp_install_cases,
};

kunit_test_suite(cpuhp_install_suite);

#ifdef CPUHP_KUNIT_HARNESS
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
#endif
#ifdef CPUHP_KUNIT_HARNESS
MODULE_DESCRIPTION("KUnit tests for installing and removing CPU hotplug states");
MODULE_LICENSE("GPL");
#endif
