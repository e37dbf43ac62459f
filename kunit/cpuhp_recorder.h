/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Recorder shared by the cpuhp KUnit suites: hotplug state callbacks that log
 * every invocation and can be armed to fail, plus the cleanup that leaves the
 * machine as the case found it (every CPU back online, every state removed),
 * even when an assertion ends the case early.
 */
#ifndef _CPUHP_RECORDER_H
#define _CPUHP_RECORDER_H

#include <kunit/test.h>
#include <linux/bits.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/spinlock.h>

#include "../cpuhp_kunit.h"

/* States one case can install: the L, M and H of the rollback suite. */
#define CPUHP_REC_SLOTS		3
/* Instances one case can add to a multi-instance state. */
#define CPUHP_REC_INSTANCES	2
#define CPUHP_REC_LOG_SIZE	1024
/* Any CPU, any instance. */
#define CPUHP_REC_ANY		(-1)

enum cpuhp_rec_dir {
	CPUHP_REC_STARTUP,
	CPUHP_REC_TEARDOWN,
};

/* One callback invocation. */
struct cpuhp_rec_call {
	unsigned int cpu;	/* the callback's cpu argument */
	unsigned int on_cpu;	/* the CPU it ran on */
	int slot;		/* which of the case's states */
	int instance;		/* multi-instance: which instance, else CPUHP_REC_ANY */
	enum cpuhp_rec_dir dir;
	bool frozen;		/* cpuhp_tasks_frozen as the callback saw it */
	int ret;		/* what it returned */
};

/* Makes the @nth call matching slot/dir/cpu/instance return @err, once. */
struct cpuhp_rec_fault {
	int slot;
	enum cpuhp_rec_dir dir;
	int cpu;		/* or CPUHP_REC_ANY */
	int instance;		/* or CPUHP_REC_ANY */
	unsigned int nth;	/* 1 for the first matching call */
	int err;
	unsigned int seen;	/* matching calls so far */
	bool armed;
};

/* Faults armed at once: a failure and a second one in its rollback. */
#define CPUHP_REC_FAULTS	2

struct cpuhp_rec_instance {
	struct hlist_node node;
	int id;
	bool added;
};

struct cpuhp_rec_slot {
	int state;		/* the installed state, valid while installed */
	bool installed;
	unsigned int flags;	/* enum cpuhp_rec_flags it was installed with */
};

struct cpuhp_recorder {
	struct kunit *test;
	spinlock_t lock;	/* log, len and faults: callbacks run on any CPU */
	struct cpuhp_rec_call log[CPUHP_REC_LOG_SIZE];
	unsigned int len;
	bool overflow;
	struct cpuhp_rec_fault faults[CPUHP_REC_FAULTS];
#ifdef CPUHP_KUNIT_HARNESS
	/* Per slot, instance (+1) and CPU: successful startups minus teardowns. */
	int *up;
#endif
	struct cpuhp_rec_slot slots[CPUHP_REC_SLOTS];
	struct cpuhp_rec_instance instances[CPUHP_REC_INSTANCES];
	cpumask_var_t online;	/* online when the case started */
};

/*
 * How a state or instance is installed or removed: the plain call, which
 * invokes the callbacks, or its _nocalls variant; as a multi-instance state;
 * with the startup or the teardown callback left NULL.
 */
enum cpuhp_rec_flags {
	CPUHP_REC_NOCALLS	= 0,
	CPUHP_REC_INVOKE	= BIT(0),
	CPUHP_REC_MULTI		= BIT(1),
	CPUHP_REC_NO_STARTUP	= BIT(2),
	CPUHP_REC_NO_TEARDOWN	= BIT(3),
};

struct cpuhp_recorder *cpuhp_rec_start(struct kunit *test);

int cpuhp_rec_setup(struct cpuhp_recorder *rec, int slot, enum cpuhp_state state,
		    unsigned int flags);
void cpuhp_rec_remove(struct cpuhp_recorder *rec, int slot, unsigned int flags);
void cpuhp_rec_remove_all(struct cpuhp_recorder *rec, int slot, unsigned int flags);
int cpuhp_rec_add_instance(struct cpuhp_recorder *rec, int slot, int instance,
			   unsigned int flags);
void cpuhp_rec_remove_instance(struct cpuhp_recorder *rec, int slot, int instance,
			       unsigned int flags);
int cpuhp_rec_state(struct cpuhp_recorder *rec, int slot);
#ifdef CPUHP_KUNIT_HARNESS
bool cpuhp_rec_is_installed(struct cpuhp_recorder *rec, int slot);
bool cpuhp_rec_is_multi(struct cpuhp_recorder *rec, int slot);
bool cpuhp_rec_instance_added(struct cpuhp_recorder *rec, int instance);
#endif
unsigned int cpuhp_rec_installed(struct cpuhp_recorder *rec);
int cpuhp_rec_instance_of(struct hlist_node *node);

enum cpuhp_state cpuhp_rec_range_end(enum cpuhp_state range);
int cpuhp_rec_free_state(enum cpuhp_state range);
#ifdef CPUHP_KUNIT_HARNESS
unsigned int cpuhp_rec_free_states(enum cpuhp_state range);
#endif

void cpuhp_rec_arm(struct cpuhp_recorder *rec, const struct cpuhp_rec_fault *fault);
void cpuhp_rec_arm_once(struct cpuhp_recorder *rec, int slot, enum cpuhp_rec_dir dir,
			int cpu, int instance, int err);
void cpuhp_rec_disarm(struct cpuhp_recorder *rec);
void cpuhp_rec_clear(struct cpuhp_recorder *rec);
#ifdef CPUHP_KUNIT_HARNESS
int cpuhp_rec_up(struct cpuhp_recorder *rec, int slot, int instance, unsigned int cpu);
#endif

unsigned int cpuhp_rec_count(struct cpuhp_recorder *rec, int slot, enum cpuhp_rec_dir dir,
			     int cpu, int instance);
#ifdef CPUHP_KUNIT_PART_expect
/* An expected sequence of calls, built by the case from its scenario. */
struct cpuhp_rec_log {
	struct cpuhp_rec_call calls[CPUHP_REC_LOG_SIZE];
	unsigned int len;
	bool overflow;		/* more were added than it holds */
};

struct cpuhp_rec_log *cpuhp_rec_log_alloc(struct kunit *test);
void cpuhp_rec_next(struct cpuhp_recorder *rec, struct cpuhp_rec_log *expected);
struct cpuhp_rec_log *cpuhp_rec_read(struct cpuhp_recorder *rec);
void cpuhp_rec_log_add(struct cpuhp_rec_log *log, unsigned int cpu, int slot, int instance,
		       enum cpuhp_rec_dir dir, int ret);
void cpuhp_rec_expect_log(struct kunit *test, struct cpuhp_recorder *rec,
			  struct cpuhp_rec_log *expected);

void cpuhp_rec_expect_on_cpu(struct kunit *test, struct cpuhp_recorder *rec, int slot);
void cpuhp_rec_expect_state(struct kunit *test, unsigned int cpu, enum cpuhp_state want_state,
			    enum cpuhp_state want_target);
#endif

/* Which of the CPUs online at the start of the case. */
enum cpuhp_rec_pick {
	CPUHP_REC_FIRST,
	CPUHP_REC_MIDDLE,
	CPUHP_REC_LAST,
};

unsigned int cpuhp_rec_pick_cpu(struct cpuhp_recorder *rec, enum cpuhp_rec_pick which);

#ifdef CPUHP_KUNIT_HARNESS
void cpuhp_rec_expect_report_begin(const char *what);
void cpuhp_rec_expect_report_end(void);
#endif

#endif /* _CPUHP_RECORDER_H */
