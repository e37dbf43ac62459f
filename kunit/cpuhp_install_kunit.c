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
 *    error comes back and the state (a dynamic slot) is free again;
 *  - cpuhp_remove_state() calls the teardown for every CPU at or above the
 *    state; the _nocalls variants call nothing;
 *  - CPUHP_AP_ONLINE_DYN and CPUHP_BP_PREPARE_DYN hand out slots from a range
 *    until it is full (-ENOSPC) and take them back on removal;
 *  - a CPU that is offline during the install gets the startup when it comes
 *    online and the teardown when it goes down;
 *  - bad requests (a state outside CPUHP_OFFLINE..CPUHP_ONLINE, a fixed state
 *    in use, no name) are refused without changing anything;
 *  - multi-instance states: cpuhp_state_add_instance() rolls back the one
 *    instance that failed and leaves it off the list; the others are not
 *    touched.
 *
 * How it is observed: through the recorder (cpuhp_recorder.h), whose
 * callbacks log (cpu, slot, instance, direction, result) and can be armed to
 * fail on a chosen CPU. The expected logs are built from the scenario: which
 * CPUs are online, in the ascending order for_each_present_cpu() walks them.
 *
 * Not tested: a teardown that fails inside cpuhp_remove_state(). 6.12 does
 * BUG_ON(ret && !bringup) in cpuhp_issue_call(), with cpus_read_lock() and
 * cpuhp_state_mutex held, so provoking it would wedge every later case.
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>

#include "cpuhp_recorder.h"

/* An error no part of the hotplug core returns by itself. */
#define CPUHP_INSTALL_ERR	(-ENODATA)

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

/* The last state of the dynamic range starting at @range. */
static enum cpuhp_state cpuhp_install_range_end(enum cpuhp_state range)
{
	return range == CPUHP_AP_ONLINE_DYN ? CPUHP_AP_ONLINE_DYN_END :
					      CPUHP_BP_PREPARE_DYN_END;
}

/* The slot a dynamic setup in @range hands out next: its first free one. */
static int cpuhp_install_next_slot(enum cpuhp_state range)
{
	enum cpuhp_state state;

	for (state = range; state <= cpuhp_install_range_end(range); state++)
		if (!cpuhp_kunit_step_name(state))
			return state;
	return -ENOSPC;
}

/* @dir of @slot on every CPU of @cpus, in ascending order. */
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
 * A failed install of slot 0 (@instance of it): the startup on each CPU of
 * @cpus up to @k, failing on @k, then the teardown on each CPU before @k,
 * ascending, as cpuhp_rollback_install() walks them.
 */
static void cpuhp_install_want_rollback(struct cpuhp_rec_log *want, const struct cpumask *cpus,
					unsigned int k, int instance)
{
	unsigned int cpu;

	for_each_cpu(cpu, cpus) {
		if (cpu > k)
			break;
		cpuhp_rec_log_add(want, cpu, 0, instance, CPUHP_REC_STARTUP,
				  cpu == k ? CPUHP_INSTALL_ERR : 0);
	}
	for_each_cpu(cpu, cpus) {
		if (cpu >= k)
			break;
		cpuhp_rec_log_add(want, cpu, 0, instance, CPUHP_REC_TEARDOWN, 0);
	}
}

/*
 * The startup fails on one online CPU: the error comes back, the startup ran
 * on each CPU up to and including that one, the teardown on each CPU before
 * it (ascending, as cpuhp_rollback_install() walks), never on it or after it,
 * and the slot is free again.
 */
static void cpuhp_install_startup_fails(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int k = cpuhp_rec_pick_cpu(rec, p->fail_cpu);
	int slot = cpuhp_install_next_slot(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	/*
	 * Fail the n-th startup on any CPU, n = k's place among the online
	 * CPUs: the setup walks them in ascending order, so that is k's.
	 */
	cpuhp_rec_arm(rec, &(struct cpuhp_rec_fault) {
		.slot = 0, .dir = CPUHP_REC_STARTUP, .cpu = CPUHP_REC_ANY,
		.instance = CPUHP_REC_ANY, .err = CPUHP_INSTALL_ERR,
		.nth = cpuhp_install_place(rec->online, k),
	});

	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, true, false), CPUHP_INSTALL_ERR);

	cpuhp_install_want_rollback(want, rec->online, k, CPUHP_REC_ANY);
	cpuhp_rec_expect_log(test, rec, want);
	if (p->range == CPUHP_AP_ONLINE_DYN)
		cpuhp_rec_expect_on_cpu(test, rec, 0);

	KUNIT_EXPECT_NULL(test, cpuhp_kunit_step_name(slot));
	KUNIT_EXPECT_EQ(test, cpuhp_rec_setup(rec, 1, p->range, false, false), slot);
}

/*
 * Startup succeeds everywhere: the allocated slot comes back, the startup ran
 * once per online CPU and no teardown; cpuhp_remove_state() runs the teardown
 * once per online CPU and frees the slot.
 */
static void cpuhp_install_startup_succeeds(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	int slot = cpuhp_install_next_slot(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, true, false), slot);
	KUNIT_EXPECT_GE(test, slot, p->range);
	KUNIT_EXPECT_LE(test, slot, cpuhp_install_range_end(p->range));
	KUNIT_EXPECT_STREQ(test, cpuhp_kunit_step_name(slot), "cpuhp_kunit:slot0");
	cpuhp_install_add_each(want, rec->online, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);
	if (p->range == CPUHP_AP_ONLINE_DYN)
		cpuhp_rec_expect_on_cpu(test, rec, 0);

	cpuhp_rec_clear(rec);
	want->len = 0;
	cpuhp_rec_remove(rec, 0, true);
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
	int slot = cpuhp_install_next_slot(p->range);

	KUNIT_ASSERT_GT(test, slot, 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_setup(rec, 0, p->range, false, false), slot);
	KUNIT_EXPECT_STREQ(test, cpuhp_kunit_step_name(slot), "cpuhp_kunit:slot0");
	cpuhp_rec_remove(rec, 0, false);
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
	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, true, false), 0);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_clear(rec);
	want->len = 0;
	KUNIT_ASSERT_EQ(test, add_cpu(n), 0);
	cpuhp_rec_log_add(want, n, 0, CPUHP_REC_ANY, CPUHP_REC_STARTUP, 0);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_clear(rec);
	want->len = 0;
	KUNIT_ASSERT_EQ(test, remove_cpu(n), 0);
	cpuhp_rec_log_add(want, n, 0, CPUHP_REC_ANY, CPUHP_REC_TEARDOWN, 0);
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
		ret = cpuhp_rec_setup(rec, 0, state, true, false);
	KUNIT_EXPECT_EQ_MSG(test, ret, p->err, "state %d", state);

	after = cpuhp_install_names(test);
	KUNIT_EXPECT_MEMEQ(test, after, before, (CPUHP_ONLINE + 1) * sizeof(*before));
	cpuhp_rec_expect_log(test, rec, none);
}

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

/* Free slots of the dynamic range starting at @range. */
static unsigned int cpuhp_install_free_slots(enum cpuhp_state range)
{
	enum cpuhp_state state;
	unsigned int n = 0;

	for (state = range; state <= cpuhp_install_range_end(range); state++)
		n += !cpuhp_kunit_step_name(state);
	return n;
}

/*
 * Filling the dynamic range: each free slot is handed out once, the next
 * setup gets -ENOSPC (with a warning, declared to the log-hygiene check),
 * and removal gives every slot back.
 */
static void cpuhp_install_dyn_range_full(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	unsigned int free = cpuhp_install_free_slots(p->range);
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
		KUNIT_EXPECT_LE(test, ret, cpuhp_install_range_end(p->range));
	}
	KUNIT_EXPECT_EQ(test, cpuhp_install_free_slots(p->range), 0);

	cpuhp_rec_expect_report_begin("at kernel/cpu.c:");
	ret = cpuhp_setup_state_nocalls(p->range, "cpuhp_kunit:fill", NULL, NULL);
	cpuhp_rec_expect_report_end();
	KUNIT_EXPECT_EQ(test, ret, -ENOSPC);
	if (ret > 0)
		fill->states[fill->n++] = ret;

	cpuhp_install_unfill(fill);
	KUNIT_EXPECT_EQ(test, cpuhp_install_free_slots(p->range), free);
}

/*
 * Multi-instance: an instance whose startup fails on CPU k is rolled back on
 * the CPUs before k only and is not on the list afterwards (hotplug does not
 * call it); the other instance is not touched. Removing an instance runs its
 * teardown on every online CPU; the _nocalls variants call nothing.
 */
static void cpuhp_install_multi_instance(struct kunit *test)
{
	const struct cpuhp_install_param *p = test->param_value;
	struct cpuhp_recorder *rec = cpuhp_rec_start(test);
	struct cpuhp_rec_log *want = cpuhp_rec_log_alloc(test);
	unsigned int k = cpuhp_rec_pick_cpu(rec, p->fail_cpu);
	unsigned int n = cpuhp_rec_pick_cpu(rec, CPUHP_REC_LAST);

	KUNIT_ASSERT_GT(test, cpuhp_rec_setup(rec, 0, p->range, true, true), 0);
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, 0, true), 0);
	cpuhp_install_add_each(want, rec->online, 0, 0, CPUHP_REC_STARTUP);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_clear(rec);
	want->len = 0;
	cpuhp_rec_arm_once(rec, 0, CPUHP_REC_STARTUP, k, 1, CPUHP_INSTALL_ERR);
	KUNIT_EXPECT_EQ(test, cpuhp_rec_add_instance(rec, 0, 1, true), CPUHP_INSTALL_ERR);
	cpuhp_install_want_rollback(want, rec->online, k, 1);
	cpuhp_rec_expect_log(test, rec, want);

	/* Off the list: a CPU going down and up calls instance 0 only. */
	if (n != cpuhp_rec_pick_cpu(rec, CPUHP_REC_FIRST)) {
		cpuhp_rec_clear(rec);
		want->len = 0;
		KUNIT_ASSERT_EQ(test, remove_cpu(n), 0);
		KUNIT_ASSERT_EQ(test, add_cpu(n), 0);
		cpuhp_rec_log_add(want, n, 0, 0, CPUHP_REC_TEARDOWN, 0);
		cpuhp_rec_log_add(want, n, 0, 0, CPUHP_REC_STARTUP, 0);
		cpuhp_rec_expect_log(test, rec, want);
	}

	cpuhp_rec_clear(rec);
	want->len = 0;
	cpuhp_rec_remove_instance(rec, 0, 0, true);
	cpuhp_install_add_each(want, rec->online, 0, 0, CPUHP_REC_TEARDOWN);
	cpuhp_rec_expect_log(test, rec, want);

	cpuhp_rec_clear(rec);
	want->len = 0;
	KUNIT_ASSERT_EQ(test, cpuhp_rec_add_instance(rec, 0, 1, false), 0);
	cpuhp_rec_remove_instance(rec, 0, 1, false);
	cpuhp_rec_remove(rec, 0, true);
	cpuhp_rec_expect_log(test, rec, want);
}

static struct kunit_case cpuhp_install_cases[] = {
	KUNIT_CASE_PARAM(cpuhp_install_startup_fails, cpuhp_install_failures_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_startup_succeeds, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_nocalls, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_offline_cpu, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_bad_input, cpuhp_install_bad_inputs_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_dyn_range_full, cpuhp_install_ranges_gen_params),
	KUNIT_CASE_PARAM(cpuhp_install_multi_instance, cpuhp_install_failures_gen_params),
	{}
};

static struct kunit_suite cpuhp_install_suite = {
	.name = "cpuhp_install",
	.test_cases = cpuhp_install_cases,
};

kunit_test_suite(cpuhp_install_suite);

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
MODULE_DESCRIPTION("KUnit tests for installing and removing CPU hotplug states");
MODULE_LICENSE("GPL");
