// SPDX-License-Identifier: GPL-2.0
/*
 * Recorder shared by the cpuhp KUnit suites, see cpuhp_recorder.h.
 *
 * Each of the CPUHP_REC_SLOTS states a case installs gets its own callbacks,
 * so an invocation knows its slot without a lookup; multi-instance callbacks
 * find their instance through the hlist_node they are handed. All of them
 * log into the one recorder of the running case (KUnit runs cases one at a
 * time), under a spinlock: AP callbacks run in the cpuhp/N threads of other
 * CPUs while the case waits for them.
 */

#include <kunit/test.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/device.h>
#include <linux/printk.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "cpuhp_kunit_compat.h"
#include "cpuhp_recorder.h"

static struct cpuhp_recorder *cpuhp_rec_current;

static bool cpuhp_rec_fault_matches(const struct cpuhp_rec_fault *f, int slot,
				    enum cpuhp_rec_dir dir, unsigned int cpu, int instance)
{
	return f->slot == slot && f->dir == dir &&
	       (f->cpu == CPUHP_REC_ANY || f->cpu == cpu) &&
	       (f->instance == CPUHP_REC_ANY || f->instance == instance);
}

#ifdef CPUHP_KUNIT_HARNESS
/* Where the startups minus teardowns of @slot/@instance on @cpu are counted. */
static unsigned int cpuhp_rec_up_index(int slot, int instance, unsigned int cpu)
{
	return (slot * (CPUHP_REC_INSTANCES + 1) + instance + 1) * nr_cpu_ids + cpu;
}

#endif
/* Log one invocation; fail it if an armed fault says so. */
static int cpuhp_rec_call(int slot, int instance, enum cpuhp_rec_dir dir, unsigned int cpu)
{
	struct cpuhp_recorder *rec = READ_ONCE(cpuhp_rec_current);
	unsigned long flags;
	int i, ret = 0;

	if (!rec)
		return 0;

	spin_lock_irqsave(&rec->lock, flags);
	for (i = 0; i < CPUHP_REC_FAULTS; i++) {
		struct cpuhp_rec_fault *f = &rec->faults[i];

		if (f->armed && cpuhp_rec_fault_matches(f, slot, dir, cpu, instance) &&
		    ++f->seen == f->nth) {
			ret = f->err;
			f->armed = false;
			break;
		}
	}
#ifdef CPUHP_KUNIT_HARNESS
	if (!ret)
		rec->up[cpuhp_rec_up_index(slot, instance, cpu)] +=
			dir == CPUHP_REC_STARTUP ? 1 : -1;
#endif
	if (rec->len < CPUHP_REC_LOG_SIZE) {
		rec->log[rec->len++] = (struct cpuhp_rec_call) {
			.cpu = cpu,
			.on_cpu = raw_smp_processor_id(),
			.slot = slot,
			.instance = instance,
			.dir = dir,
			.frozen = cpuhp_tasks_frozen,
			.ret = ret,
		};
	} else {
		rec->overflow = true;
	}
	spin_unlock_irqrestore(&rec->lock, flags);
	return ret;
}

/* The slot each generated set of callbacks records as, by token pasting. */
enum { CPUHP_REC_SLOT0, CPUHP_REC_SLOT1, CPUHP_REC_SLOT2 };
static_assert(CPUHP_REC_SLOT2 + 1 == CPUHP_REC_SLOTS);

#define CPUHP_REC_CALLBACKS(n)							\
static int cpuhp_rec_startup##n(unsigned int cpu)				\
{										\
	return cpuhp_rec_call(CPUHP_REC_SLOT##n, CPUHP_REC_ANY,			\
			      CPUHP_REC_STARTUP, cpu);				\
}										\
static int cpuhp_rec_teardown##n(unsigned int cpu)				\
{										\
	return cpuhp_rec_call(CPUHP_REC_SLOT##n, CPUHP_REC_ANY,			\
			      CPUHP_REC_TEARDOWN, cpu);				\
}										\
static int cpuhp_rec_startup_multi##n(unsigned int cpu, struct hlist_node *node) \
{										\
	return cpuhp_rec_call(CPUHP_REC_SLOT##n, cpuhp_rec_instance_of(node),	\
			      CPUHP_REC_STARTUP, cpu);				\
}										\
static int cpuhp_rec_teardown_multi##n(unsigned int cpu, struct hlist_node *node) \
{										\
	return cpuhp_rec_call(CPUHP_REC_SLOT##n, cpuhp_rec_instance_of(node),	\
			      CPUHP_REC_TEARDOWN, cpu);				\
}

CPUHP_REC_CALLBACKS(0)
CPUHP_REC_CALLBACKS(1)
CPUHP_REC_CALLBACKS(2)

struct cpuhp_rec_callbacks {
	const char *name;
	int (*startup)(unsigned int cpu);
	int (*teardown)(unsigned int cpu);
	int (*startup_multi)(unsigned int cpu, struct hlist_node *node);
	int (*teardown_multi)(unsigned int cpu, struct hlist_node *node);
};

#define CPUHP_REC_ENTRY(n) {						\
	.name = "cpuhp_kunit:slot" #n,					\
	.startup = cpuhp_rec_startup##n,				\
	.teardown = cpuhp_rec_teardown##n,				\
	.startup_multi = cpuhp_rec_startup_multi##n,			\
	.teardown_multi = cpuhp_rec_teardown_multi##n,			\
}

static const struct cpuhp_rec_callbacks cpuhp_rec_callbacks[CPUHP_REC_SLOTS] = {
	CPUHP_REC_ENTRY(0), CPUHP_REC_ENTRY(1), CPUHP_REC_ENTRY(2),
};

/* Disarm every fault not fired yet. */
void cpuhp_rec_disarm(struct cpuhp_recorder *rec)
{
	int i;

	spin_lock_irq(&rec->lock);
	for (i = 0; i < CPUHP_REC_FAULTS; i++)
		rec->faults[i].armed = false;
	spin_unlock_irq(&rec->lock);
}

/* Remove every instance and state the case left installed, invoking nothing. */
static void cpuhp_rec_cleanup(void *data)
{
	struct cpuhp_recorder *rec = data;
	int slot;

	cpuhp_rec_disarm(rec);
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++) {
		struct cpuhp_rec_slot *s = &rec->slots[slot];

		if (s->installed)
			cpuhp_rec_remove_all(rec, slot, CPUHP_REC_NOCALLS);
	}
	WRITE_ONCE(cpuhp_rec_current, NULL);
}

/* Bring every CPU that was online when the case started back to CPUHP_ONLINE. */
static void cpuhp_rec_restore_cpus(void *data)
{
	struct cpuhp_recorder *rec = data;
	enum cpuhp_state state, target;
	unsigned int cpu;
	int ret;

	for_each_cpu(cpu, rec->online) {
		struct device *dev = get_cpu_device(cpu);

		ret = 0;
		if (dev && dev->offline)
			ret = add_cpu(cpu);
		cpuhp_kunit_cpu_state(cpu, &state, &target);
#ifdef CPUHP_KUNIT_HARNESS
		/* A case that drove the CPU to a state of the table. */
		if (!ret && state != CPUHP_ONLINE)
			ret = cpuhp_kunit_set_target(cpu, CPUHP_ONLINE);
#else
		if (!ret && state != CPUHP_ONLINE)
			ret = -EIO;
#endif
		KUNIT_EXPECT_EQ_MSG(rec->test, ret, 0, "cleanup: CPU %u not back online", cpu);
	}
	free_cpumask_var(rec->online);
}

/**
 * cpuhp_rec_start - The recorder for this case
 * @test: the case
 *
 * Remembers which CPUs are online and arranges that, when the case ends for
 * whatever reason, the states it installed are removed and those CPUs are
 * online again.
 */
struct cpuhp_recorder *cpuhp_rec_start(struct kunit *test)
{
	struct cpuhp_recorder *rec;
	int slot, i;

	KUNIT_ASSERT_NULL_MSG(test, READ_ONCE(cpuhp_rec_current),
			      "a previous case did not clean up its recorder");
	rec = kunit_kzalloc(test, sizeof(*rec), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rec);
	rec->test = test;
	spin_lock_init(&rec->lock);
	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		rec->slots[slot].state = CPUHP_INVALID;
	for (i = 0; i < CPUHP_REC_INSTANCES; i++)
		rec->instances[i].id = i;
#ifdef CPUHP_KUNIT_HARNESS
	rec->up = kunit_kcalloc(test, CPUHP_REC_SLOTS * (CPUHP_REC_INSTANCES + 1) * nr_cpu_ids,
				sizeof(*rec->up), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rec->up);
#endif
	KUNIT_ASSERT_TRUE(test, alloc_cpumask_var(&rec->online, GFP_KERNEL));
	cpumask_copy(rec->online, cpu_online_mask);

	/* Actions run last-in first-out: states go first, then CPUs return. */
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rec_restore_cpus, rec), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cpuhp_rec_cleanup, rec), 0);
	WRITE_ONCE(cpuhp_rec_current, rec);
	return rec;
}

/**
 * cpuhp_rec_setup - Install the recording callbacks of @slot at @state
 * @rec: the recorder
 * @slot: which of the case's states
 * @state: the state, or a dynamic range (CPUHP_AP_ONLINE_DYN, CPUHP_BP_PREPARE_DYN)
 * @flags: CPUHP_REC_INVOKE for cpuhp_setup_state() rather than its _nocalls
 *	variant; CPUHP_REC_MULTI for cpuhp_setup_state_multi(), which never
 *	invokes; CPUHP_REC_NO_STARTUP, CPUHP_REC_NO_TEARDOWN to leave that
 *	callback NULL
 *
 * Return: what the setup function returned.
 */
int cpuhp_rec_setup(struct cpuhp_recorder *rec, int slot, enum cpuhp_state state,
		    unsigned int flags)
{
	const struct cpuhp_rec_callbacks *cb = &cpuhp_rec_callbacks[slot];
	struct cpuhp_rec_slot *s = &rec->slots[slot];
	bool startup = !(flags & CPUHP_REC_NO_STARTUP);
	bool teardown = !(flags & CPUHP_REC_NO_TEARDOWN);
	int ret;

	KUNIT_ASSERT_FALSE(rec->test, s->installed);
	/* A full range would make the core warn ("No more dynamic states"). */
	if ((state == CPUHP_AP_ONLINE_DYN || state == CPUHP_BP_PREPARE_DYN) &&
	    cpuhp_rec_free_state(state) < 0)
		kunit_skip(rec->test, "no free state left in the dynamic range");
	if (flags & CPUHP_REC_MULTI)
		ret = cpuhp_setup_state_multi(state, cb->name,
					      startup ? cb->startup_multi : NULL,
					      teardown ? cb->teardown_multi : NULL);
	else if (flags & CPUHP_REC_INVOKE)
		ret = cpuhp_setup_state(state, cb->name, startup ? cb->startup : NULL,
					teardown ? cb->teardown : NULL);
	else
		ret = cpuhp_setup_state_nocalls(state, cb->name, startup ? cb->startup : NULL,
						teardown ? cb->teardown : NULL);
	if (ret < 0)
		return ret;
	s->state = ret > 0 ? ret : state;
	s->installed = true;
	s->flags = flags;
	return ret;
}

/*
 * cpuhp_remove_state() of @slot, or its _nocalls variant (@flags without
 * CPUHP_REC_INVOKE); cpuhp_remove_multi_state() for a multi-instance slot.
 */
void cpuhp_rec_remove(struct cpuhp_recorder *rec, int slot, unsigned int flags)
{
	struct cpuhp_rec_slot *s = &rec->slots[slot];
	int i;

	KUNIT_ASSERT_TRUE(rec->test, s->installed);
	if (s->flags & CPUHP_REC_MULTI) {
		/* Instances left are dropped with the state (after a warning). */
		cpuhp_remove_multi_state(s->state);
		for (i = 0; i < CPUHP_REC_INSTANCES; i++)
			rec->instances[i].added = false;
	} else if (flags & CPUHP_REC_INVOKE) {
		cpuhp_remove_state(s->state);
	} else {
		cpuhp_remove_state_nocalls(s->state);
	}
	s->installed = false;
}

/* Remove @slot's instances, if it has any, then @slot itself: all with @flags. */
void cpuhp_rec_remove_all(struct cpuhp_recorder *rec, int slot, unsigned int flags)
{
	int i;

	for (i = 0; (rec->slots[slot].flags & CPUHP_REC_MULTI) && i < CPUHP_REC_INSTANCES; i++)
		if (rec->instances[i].added)
			cpuhp_rec_remove_instance(rec, slot, i, flags);
	cpuhp_rec_remove(rec, slot, flags);
}

/* cpuhp_state_add_instance() of @instance to @slot's state, or its _nocalls variant. */
int cpuhp_rec_add_instance(struct cpuhp_recorder *rec, int slot, int instance,
			   unsigned int flags)
{
	struct cpuhp_rec_instance *inst = &rec->instances[instance];
	int state = rec->slots[slot].state;
	int ret;

	KUNIT_ASSERT_TRUE(rec->test, rec->slots[slot].installed);
	KUNIT_ASSERT_FALSE(rec->test, inst->added);
	if (flags & CPUHP_REC_INVOKE)
		ret = cpuhp_state_add_instance(state, &inst->node);
	else
		ret = cpuhp_state_add_instance_nocalls(state, &inst->node);
	inst->added = !ret;
	return ret;
}

/* cpuhp_state_remove_instance() of @instance from @slot's state, or its _nocalls variant. */
void cpuhp_rec_remove_instance(struct cpuhp_recorder *rec, int slot, int instance,
			       unsigned int flags)
{
	struct cpuhp_rec_instance *inst = &rec->instances[instance];
	int state = rec->slots[slot].state;

	KUNIT_ASSERT_TRUE(rec->test, inst->added);
	if (flags & CPUHP_REC_INVOKE)
		cpuhp_state_remove_instance(state, &inst->node);
	else
		cpuhp_state_remove_instance_nocalls(state, &inst->node);
	inst->added = false;
}

/* The state @slot is installed at (the allocated one for a dynamic range). */
int cpuhp_rec_state(struct cpuhp_recorder *rec, int slot)
{
	KUNIT_ASSERT_TRUE(rec->test, rec->slots[slot].installed);
	return rec->slots[slot].state;
}

#ifdef CPUHP_KUNIT_HARNESS
/* Whether @slot is installed now. */
bool cpuhp_rec_is_installed(struct cpuhp_recorder *rec, int slot)
{
	return rec->slots[slot].installed;
}

/* Whether @slot is installed as a multi-instance state. */
bool cpuhp_rec_is_multi(struct cpuhp_recorder *rec, int slot)
{
	return rec->slots[slot].installed && (rec->slots[slot].flags & CPUHP_REC_MULTI);
}

/* Whether @instance is on the list of the multi-instance slot. */
bool cpuhp_rec_instance_added(struct cpuhp_recorder *rec, int instance)
{
	return rec->instances[instance].added;
}

#endif
/* How many of the case's states are installed now. */
unsigned int cpuhp_rec_installed(struct cpuhp_recorder *rec)
{
	unsigned int n = 0;
	int slot;

	for (slot = 0; slot < CPUHP_REC_SLOTS; slot++)
		n += rec->slots[slot].installed;
	return n;
}

/* The instance a multi-instance callback or tracepoint was handed. */
int cpuhp_rec_instance_of(struct hlist_node *node)
{
	return container_of(node, struct cpuhp_rec_instance, node)->id;
}

/* The last state of the dynamic range starting at @range. */
enum cpuhp_state cpuhp_rec_range_end(enum cpuhp_state range)
{
	return range == CPUHP_AP_ONLINE_DYN ? CPUHP_AP_ONLINE_DYN_END : CPUHP_BP_PREPARE_DYN_END;
}

/*
 * The state a dynamic setup in @range hands out next: its first unnamed one
 * (cpuhp_reserve_state() walks the range upwards), or -ENOSPC.
 */
int cpuhp_rec_free_state(enum cpuhp_state range)
{
	enum cpuhp_state state;

	for (state = range; state <= cpuhp_rec_range_end(range); state++)
		if (!cpuhp_kunit_step_name(state))
			return state;
	return -ENOSPC;
}

#ifdef CPUHP_KUNIT_HARNESS
/* How many states of the dynamic range starting at @range are unnamed. */
unsigned int cpuhp_rec_free_states(enum cpuhp_state range)
{
	enum cpuhp_state state;
	unsigned int n = 0;

	for (state = range; state <= cpuhp_rec_range_end(range); state++)
		n += !cpuhp_kunit_step_name(state);
	return n;
}
#endif

/*
 * Arm @fault besides those armed already (at most CPUHP_REC_FAULTS at once;
 * a fault that fired is free again). A call matching several fails by the
 * first armed.
 */
void cpuhp_rec_arm(struct cpuhp_recorder *rec, const struct cpuhp_rec_fault *fault)
{
	int i;

	spin_lock_irq(&rec->lock);
	for (i = 0; i < CPUHP_REC_FAULTS && rec->faults[i].armed; i++)
		;
	if (i < CPUHP_REC_FAULTS) {
		rec->faults[i] = *fault;
		rec->faults[i].seen = 0;
		rec->faults[i].armed = true;
	}
	spin_unlock_irq(&rec->lock);
	KUNIT_ASSERT_LT_MSG(rec->test, i, CPUHP_REC_FAULTS, "more than %d faults armed",
			    CPUHP_REC_FAULTS);
}

/* Make the first call matching slot/dir/cpu/instance return @err. */
void cpuhp_rec_arm_once(struct cpuhp_recorder *rec, int slot, enum cpuhp_rec_dir dir,
			int cpu, int instance, int err)
{
	cpuhp_rec_arm(rec, &(struct cpuhp_rec_fault) {
		.slot = slot, .dir = dir, .cpu = cpu, .instance = instance, .nth = 1, .err = err,
	});
}

#ifdef CPUHP_KUNIT_HARNESS
/*
 * Successful startups minus successful teardowns of @slot (@instance of it,
 * or CPUHP_REC_ANY for a single-instance slot) on @cpu since the case
 * started: 1 while that state is up on @cpu, 0 while it is down.
 */
int cpuhp_rec_up(struct cpuhp_recorder *rec, int slot, int instance, unsigned int cpu)
{
	int n;

	spin_lock_irq(&rec->lock);
	n = rec->up[cpuhp_rec_up_index(slot, instance, cpu)];
	spin_unlock_irq(&rec->lock);
	return n;
}
#endif

/* Forget the calls logged so far. */
void cpuhp_rec_clear(struct cpuhp_recorder *rec)
{
	spin_lock_irq(&rec->lock);
	rec->len = 0;
	rec->overflow = false;
	spin_unlock_irq(&rec->lock);
}

/* Logged calls of @slot in direction @dir on @cpu of @instance (or CPUHP_REC_ANY). */
unsigned int cpuhp_rec_count(struct cpuhp_recorder *rec, int slot, enum cpuhp_rec_dir dir,
			     int cpu, int instance)
{
	unsigned int i, n = 0;

	spin_lock_irq(&rec->lock);
	for (i = 0; i < rec->len; i++) {
		const struct cpuhp_rec_call *c = &rec->log[i];

		if ((slot == CPUHP_REC_ANY || c->slot == slot) && c->dir == dir &&
		    (cpu == CPUHP_REC_ANY || c->cpu == cpu) &&
		    (instance == CPUHP_REC_ANY || c->instance == instance))
			n++;
	}
	spin_unlock_irq(&rec->lock);
	return n;
}

#ifdef CPUHP_KUNIT_PART_expect
static const char *cpuhp_rec_dir_name(enum cpuhp_rec_dir dir)
{
	return dir == CPUHP_REC_STARTUP ? "startup" : "teardown";
}

static void cpuhp_rec_dump(struct kunit *test, const char *what,
			   const struct cpuhp_rec_call *calls, unsigned int n)
{
	unsigned int i;

	kunit_info(test, "%s (%u calls):", what, n);
	for (i = 0; i < n; i++)
		kunit_info(test, "  %2u: cpu %u slot %d instance %d %s ret %d\n", i,
			   calls[i].cpu, calls[i].slot, calls[i].instance,
			   cpuhp_rec_dir_name(calls[i].dir), calls[i].ret);
}

/* Start a new phase of the case: forget the calls logged and the ones expected. */
void cpuhp_rec_next(struct cpuhp_recorder *rec, struct cpuhp_rec_log *expected)
{
	cpuhp_rec_clear(rec);
	expected->len = 0;
	expected->overflow = false;
}

/* An empty expected log; freed with the case. */
struct cpuhp_rec_log *cpuhp_rec_log_alloc(struct kunit *test)
{
	struct cpuhp_rec_log *log = kunit_kzalloc(test, sizeof(*log), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, log);
	return log;
}

/* A copy of the calls logged since the last clear; freed with the case. */
struct cpuhp_rec_log *cpuhp_rec_read(struct cpuhp_recorder *rec)
{
	struct cpuhp_rec_log *got = cpuhp_rec_log_alloc(rec->test);
	bool overflow;

	spin_lock_irq(&rec->lock);
	got->len = rec->len;
	memcpy(got->calls, rec->log, rec->len * sizeof(*got->calls));
	overflow = rec->overflow;
	spin_unlock_irq(&rec->lock);
	KUNIT_EXPECT_FALSE_MSG(rec->test, overflow, "more than %d calls", CPUHP_REC_LOG_SIZE);
	return got;
}

/* Append one expected call to @log. */
void cpuhp_rec_log_add(struct cpuhp_rec_log *log, unsigned int cpu, int slot, int instance,
		       enum cpuhp_rec_dir dir, int ret)
{
	if (log->len >= CPUHP_REC_LOG_SIZE) {
		log->overflow = true;
		return;
	}
	log->calls[log->len++] = (struct cpuhp_rec_call) {
		.cpu = cpu, .slot = slot, .instance = instance, .dir = dir, .ret = ret,
	};
}

/**
 * cpuhp_rec_expect_log - Expect exactly these calls since the last clear
 * @test: the case
 * @rec: the recorder
 * @expected: the calls, compared by cpu, slot, instance, direction and result,
 *	in order
 *
 * On a mismatch both sequences are printed.
 */
void cpuhp_rec_expect_log(struct kunit *test, struct cpuhp_recorder *rec,
			  struct cpuhp_rec_log *expected)
{
	struct cpuhp_rec_log *got = cpuhp_rec_read(rec);
	unsigned int i;
	bool same;

	KUNIT_EXPECT_FALSE_MSG(test, expected->overflow, "more than %d calls expected",
			       CPUHP_REC_LOG_SIZE);
	same = got->len == expected->len;
	for (i = 0; same && i < got->len; i++) {
		const struct cpuhp_rec_call *g = &got->calls[i], *e = &expected->calls[i];

		same = g->cpu == e->cpu && g->slot == e->slot && g->instance == e->instance &&
		       g->dir == e->dir && g->ret == e->ret;
	}
	KUNIT_EXPECT_TRUE_MSG(test, same, "callback log differs from the expected one");
	if (!same) {
		cpuhp_rec_dump(test, "expected", expected->calls, expected->len);
		cpuhp_rec_dump(test, "recorded", got->calls, got->len);
	}
}

/* @cpu's hotplug state and target are these (a CPU at rest has both equal). */
void cpuhp_rec_expect_state(struct kunit *test, unsigned int cpu, enum cpuhp_state want_state,
			    enum cpuhp_state want_target)
{
	enum cpuhp_state state, target;

	cpuhp_kunit_cpu_state(cpu, &state, &target);
	KUNIT_EXPECT_EQ_MSG(test, state, want_state, "CPU %u state", cpu);
	KUNIT_EXPECT_EQ_MSG(test, target, want_target, "CPU %u target", cpu);
}

/*
 * Every logged call of @slot ran on the CPU it was for. For a slot the case
 * installed in the AP section (CPUHP_AP_ONLINE_DYN): AP callbacks run on the
 * plugged CPU (commit 4baa0afc6719), also for install and remove.
 */
void cpuhp_rec_expect_on_cpu(struct kunit *test, struct cpuhp_recorder *rec, int slot)
{
	struct cpuhp_rec_log *got = cpuhp_rec_read(rec);
	unsigned int i;

	for (i = 0; i < got->len; i++) {
		const struct cpuhp_rec_call *c = &got->calls[i];

		if (c->slot == slot)
			KUNIT_EXPECT_EQ_MSG(test, c->on_cpu, c->cpu,
					    "call %u: AP callback for CPU %u ran on %u", i, c->cpu,
					    c->on_cpu);
	}
}
#endif

/* The first, middle or last of the CPUs online when the case started. */
unsigned int cpuhp_rec_pick_cpu(struct cpuhp_recorder *rec, enum cpuhp_rec_pick which)
{
	unsigned int n = cpumask_weight(rec->online);

	switch (which) {
	case CPUHP_REC_FIRST:
		return cpumask_first(rec->online);
	case CPUHP_REC_MIDDLE:
		return cpumask_nth(n / 2, rec->online);
	default:
		return cpumask_last(rec->online);
	}
}

#ifdef CPUHP_KUNIT_HARNESS
/*
 * Declare a kernel report (a WARN) the next operation provokes on purpose;
 * the log checks of the runs allow it between these two lines, and
 * only if it contains @what.
 */
void cpuhp_rec_expect_report_begin(const char *what)
{
	pr_info("cpuhp_kunit: expect report: %s\n", what);
}

void cpuhp_rec_expect_report_end(void)
{
	pr_info("cpuhp_kunit: expect end\n");
}
#endif
