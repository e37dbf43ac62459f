// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for get_device_system_crosststamp()
 *
 * What is verified: the promises of commit 8006c24595ca ("time: Add driver
 * cross timestamp interface for higher precision time synchronization") as
 * get_device_system_crosststamp() keeps them today:
 *
 *  - an error from the driver's get_time_fn() is returned unchanged;
 *  - a system counter value whose clocksource ID is CSID_GENERIC, or is not
 *    the ID of the current timekeeping clocksource, is refused with -ENODEV;
 *  - a counter value of the current clocksource is converted to the same
 *    realtime and monotonic raw time ktime_get_snapshot() gives for it;
 *  - a counter value from before the current update interval is interpolated
 *    against the history snapshot, and refused with -EINVAL when there is no
 *    history or the history was taken before a clocksource change.
 *
 * How it is observed: a fake device whose get_time_fn() reports a chosen
 * error, device time and system counter value. Where the current clocksource
 * has to be chosen or changed, the test registers its own clocksources. They
 * read the TSC, like the TSC clocksource, with a rating above every real
 * clocksource, so registering one makes it the timekeeping clocksource and
 * unregistering it (a kunit action, run even when an assertion fails) gives
 * the previous one back.
 */

#include <kunit/test.h>
#include <linux/clocksource.h>
#include <linux/clocksource_ids.h>
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>

/* Above every real clocksource's rating (the best, "perfect", are 400-499). */
#define CROSSTSTAMP_TEST_CS_RATING	450

/* Device time the fake device reports: any value will do, it is passed through. */
#define CROSSTSTAMP_DEVICE_TIME		ktime_set(4711, 42)

/* How long to wait for timekeeping to start a new update interval. */
#define CROSSTSTAMP_UPDATE_TIMEOUT	(10 * HZ)

/*
 * Bound on the error of an interpolated monotonic raw time. The raw clock is
 * linear in the counter (its mult is never adjusted), so the interpolation
 * only loses the truncations: of the history snapshot, of the value at the
 * start of the interval and of the expected value, each less than 1ns when
 * converted from shifted nanoseconds, and of the scaling division, less than
 * 1ns. Four of them: less than 4ns.
 */
#define CROSSTSTAMP_RAW_TOLERANCE_NS	4

struct crosststamp_dev {
	int err;			/* returned by get_time_fn() when not 0 */
	bool counter_is_now;		/* report the counter value of now */
	struct system_counterval_t counter;	/* counter value reported */
	struct system_time_snapshot now;	/* snapshot taken for "now" */
	unsigned int calls;		/* get_time_fn() invocations */
};

/* The fake device's get_time_fn(): reports what @ctx says. */
static int crosststamp_dev_get_time(ktime_t *device_time,
				    struct system_counterval_t *counter,
				    void *ctx)
{
	struct crosststamp_dev *dev = ctx;

	dev->calls++;
	if (dev->err)
		return dev->err;
	*device_time = CROSSTSTAMP_DEVICE_TIME;
	if (dev->counter_is_now) {
		/*
		 * Called inside the timekeeper's seqcount read section, so
		 * the snapshot sees the same timekeeper state as the caller.
		 */
		ktime_get_snapshot(&dev->now);
		dev->counter.cycles = dev->now.cycles;
		dev->counter.cs_id = dev->now.cs_id;
	}
	*counter = dev->counter;
	return 0;
}

/* Fresh sentinels, so a field the kernel did not write is recognised. */
static void crosststamp_poison(struct system_device_crosststamp *xt)
{
	xt->device = KTIME_MIN;
	xt->sys_realtime = KTIME_MIN;
	xt->sys_monoraw = KTIME_MIN;
}

static int crosststamp_get(struct crosststamp_dev *dev,
			   struct system_time_snapshot *history,
			   struct system_device_crosststamp *xt)
{
	crosststamp_poison(xt);
	return get_device_system_crosststamp(crosststamp_dev_get_time, dev,
					     history, xt);
}

/* The ID of the current timekeeping clocksource. */
static enum clocksource_ids crosststamp_current_id(void)
{
	struct system_time_snapshot snap;

	ktime_get_snapshot(&snap);
	return snap.cs_id;
}

/* The first clocksource ID that is neither CSID_GENERIC nor @a nor @b. */
static enum clocksource_ids crosststamp_other_id(enum clocksource_ids a,
						 enum clocksource_ids b)
{
	enum clocksource_ids id;

	for (id = CSID_GENERIC + 1; id < CSID_MAX; id++)
		if (id != a && id != b)
			return id;
	return CSID_GENERIC;
}

static const char * const crosststamp_test_cs_names[] = {
	"crosststamp_test0", "crosststamp_test1",
};

static u64 crosststamp_test_cs_read(struct clocksource *cs)
{
	return get_cycles();
}

KUNIT_DEFINE_ACTION_WRAPPER(crosststamp_unregister_cs, clocksource_unregister,
			    struct clocksource *);

/*
 * Register a clocksource with ID @id that reads the TSC and make it the
 * timekeeping clocksource until the test ends. @rank (0 or 1) orders several:
 * the higher one wins.
 */
static struct clocksource *crosststamp_use_test_cs(struct kunit *test,
						   enum clocksource_ids id,
						   int rank)
{
	struct clocksource *cs;
	u32 khz = 0;

#ifdef CONFIG_X86_TSC
	khz = tsc_khz;
#endif
	if (!khz)
		kunit_skip(test, "no TSC of known frequency to back a test clocksource");

	cs = kunit_kzalloc(test, sizeof(*cs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cs);
	cs->name = crosststamp_test_cs_names[rank];
	cs->rating = CROSSTSTAMP_TEST_CS_RATING + rank;
	cs->read = crosststamp_test_cs_read;
	cs->mask = CLOCKSOURCE_MASK(64);
	cs->flags = CLOCK_SOURCE_IS_CONTINUOUS;
	cs->id = id;

	KUNIT_ASSERT_EQ(test, clocksource_register_khz(cs, khz), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_unregister_cs, cs), 0);
	KUNIT_ASSERT_EQ_MSG(test, crosststamp_current_id(), id,
			    "%s did not become the timekeeping clocksource (clocksource= on the command line?)",
			    cs->name);
	return cs;
}

/* |@a - @b| in nanoseconds. */
static s64 crosststamp_ns_apart(ktime_t a, ktime_t b)
{
	s64 d = ktime_to_ns(ktime_sub(a, b));

	return d < 0 ? -d : d;
}

/* Bound on the error of an interpolated realtime, see the callers. */
static s64 crosststamp_real_tolerance_ns(const struct system_time_snapshot *history)
{
	struct system_time_snapshot end;
	u64 span;

	/*
	 * Unlike the raw clock, realtime runs at the NTP-adjusted mult, which
	 * may change inside the history span. NTP keeps the frequency within
	 * MAXFREQ (500 ppm) of the raw one, so the interpolation can be off by
	 * at most that fraction of the span on top of the truncations. The
	 * span ends before now.
	 */
	ktime_get_snapshot(&end);
	span = ktime_to_ns(ktime_sub(end.raw, history->raw));
	return div_u64(span * MAXFREQ, NSEC_PER_SEC) +
	       CROSSTSTAMP_RAW_TOLERANCE_NS;
}

/*
 * Wait until the counter value @dev reports lies before the current update
 * interval: then a crosststamp without history is refused with -EINVAL.
 * Returns the last result, or -ETIMEDOUT.
 */
static int crosststamp_wait_for_new_interval(struct crosststamp_dev *dev)
{
	unsigned long timeout = jiffies + CROSSTSTAMP_UPDATE_TIMEOUT;
	struct system_device_crosststamp xt;
	int ret;

	do {
		ret = crosststamp_get(dev, NULL, &xt);
		if (ret)
			return ret;
		/* Timekeeping starts a new interval on a tick: wait for one. */
		schedule_timeout_uninterruptible(1);
	} while (time_before(jiffies, timeout));
	return -ETIMEDOUT;
}

static const int crosststamp_driver_errors[] = {
	-EBUSY, -EOPNOTSUPP, -ETIMEDOUT, -EIO,
};

static void crosststamp_driver_error_desc(const int *err, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%d", *err);
}

KUNIT_ARRAY_PARAM(crosststamp_driver_error, crosststamp_driver_errors,
		  crosststamp_driver_error_desc);

/* An error from get_time_fn() comes back unchanged and nothing is written. */
static void crosststamp_driver_error(struct kunit *test)
{
	const int *err = test->param_value;
	struct crosststamp_dev dev = { .err = *err };
	struct system_device_crosststamp xt;

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, NULL, &xt), *err);
	KUNIT_EXPECT_EQ(test, dev.calls, 1);
	KUNIT_EXPECT_EQ(test, xt.sys_realtime, KTIME_MIN);
	KUNIT_EXPECT_EQ(test, xt.sys_monoraw, KTIME_MIN);
}

/*
 * CSID_GENERIC identifies no clocksource, so it is refused even when the
 * current clocksource has that ID too and the value is its counter of now.
 */
static void crosststamp_generic_id(struct kunit *test)
{
	struct crosststamp_dev dev = { .counter_is_now = true };
	struct system_device_crosststamp xt;

	crosststamp_use_test_cs(test, CSID_GENERIC, 0);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, NULL, &xt), -ENODEV);
	KUNIT_EXPECT_EQ(test, dev.counter.cs_id, CSID_GENERIC);
}

/*
 * A counter value of a clocksource other than the current one is refused
 * with -ENODEV; the same value with the current clocksource's ID is not.
 * First the test clocksource is current and the previous one's ID is
 * reported, then the reverse.
 */
static void crosststamp_other_clocksource(struct kunit *test)
{
	enum clocksource_ids prev_id = crosststamp_current_id();
	struct crosststamp_dev dev = { .counter_is_now = true };
	struct system_device_crosststamp xt;
	enum clocksource_ids test_id;
	struct clocksource *cs;

	/* A CSID_GENERIC previous clocksource stands in by another ID. */
	test_id = crosststamp_other_id(prev_id, CSID_GENERIC);
	if (prev_id == CSID_GENERIC)
		prev_id = crosststamp_other_id(test_id, CSID_GENERIC);
	KUNIT_ASSERT_NE(test, test_id, CSID_GENERIC);
	KUNIT_ASSERT_NE(test, prev_id, CSID_GENERIC);

	cs = crosststamp_use_test_cs(test, test_id, 0);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, NULL, &xt), 0);
	KUNIT_EXPECT_EQ(test, dev.counter.cs_id, test_id);

	dev.counter_is_now = false;
	dev.counter.cs_id = prev_id;
	KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), -ENODEV,
			    "cs_id %d while %d is current", prev_id, test_id);

	/* The reverse: the previous clocksource is back, report the test's. */
	kunit_release_action(test, crosststamp_unregister_cs, cs);
	KUNIT_ASSERT_NE(test, crosststamp_current_id(), test_id);
	dev.counter.cs_id = test_id;
	KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), -ENODEV,
			    "cs_id %d after it was unregistered", test_id);
}

/* Move CLOCK_REALTIME by @ns. */
static void crosststamp_shift_realtime(s64 ns)
{
	struct timespec64 ts;

	ktime_get_real_ts64(&ts);
	ts = timespec64_add(ts, ns_to_timespec64(ns));
	do_settimeofday64(&ts);
}

static void crosststamp_unshift_realtime(void *ns)
{
	crosststamp_shift_realtime(-*(s64 *)ns);
}

/*
 * Realtime as booted, and moved by a fraction of a second: as booted, realtime
 * and monotonic raw differ by whole seconds only, so a conversion that mixed
 * them up would go unnoticed.
 */
static const s64 crosststamp_realtime_shifts[] = { 0, NSEC_PER_SEC / 3 };

static void crosststamp_realtime_shift_desc(const s64 *ns, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "realtime%+lldns", *ns);
}

KUNIT_ARRAY_PARAM(crosststamp_realtime_shift, crosststamp_realtime_shifts,
		  crosststamp_realtime_shift_desc);

/*
 * A counter value of now, of the current clocksource: realtime and monotonic
 * raw are exactly what ktime_get_snapshot() computed for the same value. No
 * tolerance: the snapshot is taken inside the caller's seqcount read section
 * (the callback runs there), so both convert the same counter value with the
 * same timekeeper state by the same arithmetic.
 */
static void crosststamp_current_clocksource(struct kunit *test)
{
	struct crosststamp_dev dev = { .counter_is_now = true };
	struct system_device_crosststamp xt;
	s64 *shift;

	/* A CSID_GENERIC clocksource's counter cannot be cross-timestamped. */
	if (crosststamp_current_id() == CSID_GENERIC)
		crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0);

	shift = kunit_kzalloc(test, sizeof(*shift), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, shift);
	*shift = *(const s64 *)test->param_value;
	if (*shift) {
		crosststamp_shift_realtime(*shift);
		KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_unshift_realtime,
								shift), 0);
	}

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, NULL, &xt), 0);
	KUNIT_EXPECT_EQ(test, xt.device, CROSSTSTAMP_DEVICE_TIME);
	KUNIT_EXPECT_EQ(test, xt.sys_realtime, dev.now.real);
	KUNIT_EXPECT_EQ(test, xt.sys_monoraw, dev.now.raw);
}

/*
 * A counter value from before the current update interval: refused without
 * history, interpolated with it. The expected result is the snapshot taken
 * when the counter value was read; the tolerances are derived at their
 * definitions.
 */
static void crosststamp_history_interpolation(struct kunit *test)
{
	struct system_time_snapshot history, then;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;
	s64 real_tolerance;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0);
	ktime_get_snapshot(&history);
	ktime_get_snapshot(&then);
	dev.counter.cycles = then.cycles;
	dev.counter.cs_id = then.cs_id;

	KUNIT_ASSERT_EQ_MSG(test, crosststamp_wait_for_new_interval(&dev), -EINVAL,
			    "a counter value before the interval without history");

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	real_tolerance = crosststamp_real_tolerance_ns(&history);
	KUNIT_EXPECT_EQ(test, xt.device, CROSSTSTAMP_DEVICE_TIME);
	KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_monoraw, then.raw),
			    CROSSTSTAMP_RAW_TOLERANCE_NS,
			    "monoraw %lld, expected %lld", xt.sys_monoraw, then.raw);
	KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime, then.real),
			    real_tolerance,
			    "realtime %lld, expected %lld", xt.sys_realtime, then.real);
}

/*
 * History taken before a clocksource change is refused with -EINVAL. Both
 * test clocksources read the same counter, so the history would still be
 * usable: the control, the same history marked as taken after the change,
 * is interpolated.
 */
static void crosststamp_history_clocksource_changed(struct kunit *test)
{
	enum clocksource_ids first_id = crosststamp_other_id(CSID_GENERIC, CSID_GENERIC);
	enum clocksource_ids second_id = crosststamp_other_id(first_id, CSID_GENERIC);
	struct system_time_snapshot history, then, after;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	crosststamp_use_test_cs(test, first_id, 0);
	ktime_get_snapshot(&history);
	ktime_get_snapshot(&then);

	/* The change itself starts a new interval after @then. */
	crosststamp_use_test_cs(test, second_id, 1);
	dev.counter.cycles = then.cycles;
	dev.counter.cs_id = second_id;

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EINVAL);

	ktime_get_snapshot(&after);
	KUNIT_ASSERT_NE(test, history.cs_was_changed_seq, after.cs_was_changed_seq);
	history.cs_was_changed_seq = after.cs_was_changed_seq;
	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	/*
	 * Not compared to then.raw within CROSSTSTAMP_RAW_TOLERANCE_NS: the
	 * change itself loses the counter ticks between the last read of the
	 * old clocksource and the first of the new one (change_clocksource()),
	 * a few ns here. Between the history and now is all we can say.
	 */
	KUNIT_EXPECT_GE(test, xt.sys_monoraw, history.raw);
	KUNIT_EXPECT_LE(test, xt.sys_monoraw, after.raw);
}

static struct kunit_case timekeeping_crosststamp_cases[] = {
	KUNIT_CASE_PARAM(crosststamp_driver_error, crosststamp_driver_error_gen_params),
	KUNIT_CASE(crosststamp_generic_id),
	KUNIT_CASE(crosststamp_other_clocksource),
	KUNIT_CASE_PARAM(crosststamp_current_clocksource, crosststamp_realtime_shift_gen_params),
	KUNIT_CASE(crosststamp_history_interpolation),
	KUNIT_CASE(crosststamp_history_clocksource_changed),
	{}
};

static struct kunit_suite timekeeping_crosststamp_suite = {
	.name = "timekeeping_crosststamp",
	.test_cases = timekeeping_crosststamp_cases,
};

kunit_test_suite(timekeeping_crosststamp_suite);

MODULE_DESCRIPTION("KUnit tests for get_device_system_crosststamp()");
MODULE_LICENSE("GPL");
