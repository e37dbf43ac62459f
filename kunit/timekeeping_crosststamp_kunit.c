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
 *    the ID of the current timekeeping clocksource, is refused with -ENODEV
 *    (before 6.10 a counter value names its clocksource by pointer: NULL,
 *    or another clocksource than the current one);
 *  - a counter value of the current clocksource is converted to realtime and
 *    monotonic raw by the clocksource's mult/shift, from the same timekeeper
 *    state as ktime_get_snapshot();
 *  - a counter value of the clocksource's base clock (struct
 *    clocksource_base, the ART of the TSC) is converted by the base's ratio
 *    and offset, or from nanoseconds of it by the clocksource's frequency;
 *    a base that cannot convert, or of another ID, is refused with -ENODEV
 *    (6.10 and later: older kernels have no base clock, the case skips);
 *  - a counter value from before the current update interval is interpolated
 *    against the history snapshot, from whichever end is closer, and refused
 *    with -EINVAL when there is no history, the history starts after the
 *    counter value, or the history was taken before a clocksource change;
 *  - interpolating across a history too long for 64-bit arithmetic is
 *    refused with -EOVERFLOW.
 *
 * How it is observed: a fake device whose get_time_fn() reports a chosen
 * error, device time and system counter value. The test registers its own
 * clocksources (a kunit action unregisters them, even when an assertion
 * fails). They count nanoseconds of the TSC with mult = 1 << shift, a
 * mapping chosen so the expected times are computed by hand: a counter value
 * d counts after a snapshot is exactly d ns of monotonic raw after it (the
 * raw clock runs at the clocksource's mult; realtime at the NTP-adjusted
 * one, bounded below). The rating is above every real clocksource, so
 * registering one makes it the timekeeping clocksource and unregistering it
 * gives the previous one back.
 */

#include <kunit/test.h>
#include <linux/clocksource.h>
#include <linux/clocksource_ids.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#include <linux/version.h>

#include "cpuhp_kunit_compat.h"

/*
 * Above every real clocksource's rating: the documented "perfect" range
 * ends at 499, and Hyper-V's reference counter registers 500.
 */
#define CROSSTSTAMP_TEST_CS_RATING	1000

/* The test clocksources count nanoseconds: mult = 1 << shift, 1 GHz. */
#define CROSSTSTAMP_NS_SHIFT		24
#define CROSSTSTAMP_NS_KHZ		(NSEC_PER_SEC / 1000)

/* Device time the fake device reports: any value will do, it is passed through. */
#define CROSSTSTAMP_DEVICE_TIME		ktime_set(4711, 42)

/* How long to wait for timekeeping to start a new update interval. */
#define CROSSTSTAMP_UPDATE_TIMEOUT	(10 * HZ)

/* Counts (ns) the reported counter value lies after the snapshot of now. */
#define CROSSTSTAMP_AHEAD		1000

/* Ticks between the history and the counter value interpolated backward. */
#define CROSSTSTAMP_BACKWARD_TICKS	10

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
/*
 * How a counter value names its clocksource: by ID (cs_id, CSID_GENERIC
 * for none); it may be a value of the clocksource's base clock (struct
 * clocksource_base, use_nsecs). The cases name clocksources by ID through
 * these helpers.
 */
#define CROSSTSTAMP_BASE_CLOCK		true
#define CROSSTSTAMP_NR_IDS		CSID_MAX

static int crosststamp_remember(struct kunit *test, struct clocksource *cs,
				enum clocksource_ids id)
{
	cs->id = id;
	return 0;
}

static enum clocksource_ids crosststamp_id_of(const struct system_time_snapshot *snap)
{
	return snap->cs_id;
}

static void crosststamp_tag(struct system_counterval_t *counter, enum clocksource_ids id)
{
	counter->cs_id = id;
}

static enum clocksource_ids crosststamp_tag_of(const struct system_counterval_t *counter)
{
	return counter->cs_id;
}

static void crosststamp_tag_base(struct system_counterval_t *counter,
				 const struct clocksource_base *base, bool use_nsecs)
{
	counter->cs_id = base->id;
	counter->use_nsecs = use_nsecs;
}

static void crosststamp_set_base(struct clocksource *cs, struct clocksource_base *base,
				 u32 freq_khz)
{
	cs->freq_khz = freq_khz;
	cs->base = base;
}
#else
/*
 * Before 6.10 (the one place where the kernels the suite runs on differ) a
 * counter value names its clocksource by pointer (cs, NULL for none) and
 * there is no base clock. The cases still name clocksources by ID: here
 * those IDs are the suite's own handles. 6.1 knows only CSID_GENERIC and
 * CSID_ARM_ARCH_COUNTER and resets any other ID with a WARN, so its
 * clocksources register as CSID_GENERIC, crosststamp_tag() turns a handle
 * into the clocksource's pointer (any other into NULL), and the current
 * clocksource's handle is that of the suite's registered clocksource with
 * the highest rating (they rate above every real one), CSID_GENERIC when
 * none is registered.
 */
#define CROSSTSTAMP_BASE_CLOCK		false
#define CROSSTSTAMP_NR_IDS		8

/* Only for the base clock cases' parameters, which skip. */
struct clocksource_base {
	enum clocksource_ids id;
	u64 offset;
	u32 numerator;
	u32 denominator;
};

static struct clocksource *crosststamp_cs_of_id[CROSSTSTAMP_NR_IDS];

static void crosststamp_forget(void *data)
{
	enum clocksource_ids id;

	for (id = CSID_GENERIC; id < CROSSTSTAMP_NR_IDS; id++)
		if (crosststamp_cs_of_id[id] == data)
			crosststamp_cs_of_id[id] = NULL;
}

/* Until the test case ends (after its clocksource is unregistered). */
static int crosststamp_remember(struct kunit *test, struct clocksource *cs,
				enum clocksource_ids id)
{
	cs->id = CSID_GENERIC;
	if (id == CSID_GENERIC)		/* names no clocksource: no handle */
		return 0;
	if (id >= CROSSTSTAMP_NR_IDS)
		return -EINVAL;
	crosststamp_cs_of_id[id] = cs;
	return kunit_add_action_or_reset(test, crosststamp_forget, cs);
}

/* The handle of the suite's registered clocksource rated highest, if any. */
static enum clocksource_ids crosststamp_id_of(const struct system_time_snapshot *snap)
{
	enum clocksource_ids id, best = CSID_GENERIC;

	for (id = CSID_GENERIC + 1; id < CROSSTSTAMP_NR_IDS; id++) {
		struct clocksource *cs = crosststamp_cs_of_id[id];

		if (cs && !list_empty(&cs->list) &&
		    (best == CSID_GENERIC || cs->rating > crosststamp_cs_of_id[best]->rating))
			best = id;
	}
	return best;
}

static void crosststamp_tag(struct system_counterval_t *counter, enum clocksource_ids id)
{
	counter->cs = id == CSID_GENERIC || id >= CROSSTSTAMP_NR_IDS ? NULL :
		      crosststamp_cs_of_id[id];
}

static enum clocksource_ids crosststamp_tag_of(const struct system_counterval_t *counter)
{
	enum clocksource_ids id;

	for (id = CSID_GENERIC + 1; id < CROSSTSTAMP_NR_IDS; id++)
		if (counter->cs && crosststamp_cs_of_id[id] == counter->cs)
			return id;
	return CSID_GENERIC;
}

static void crosststamp_tag_base(struct system_counterval_t *counter,
				 const struct clocksource_base *base, bool use_nsecs)
{
	crosststamp_tag(counter, base->id);
}

static void crosststamp_set_base(struct clocksource *cs, struct clocksource_base *base,
				 u32 freq_khz)
{
}
#endif

struct crosststamp_dev {
	int err;			/* returned by get_time_fn() when not 0 */
	bool counter_is_now;		/* report a counter value of now, see below */
	const struct clocksource_base *base;	/* report it in this base clock */
	bool use_nsecs;			/* the base clock's value in ns */
	struct system_counterval_t counter;	/* counter value reported */
	struct system_time_snapshot now;	/* snapshot taken for "now" */
	u64 cycles;			/* the counter value meant, in clocksource counts */
	unsigned int calls;		/* get_time_fn() invocations */
};

static u64 crosststamp_test_cs_read(struct clocksource *cs);

/*
 * The counter value of "now" and how @dev reports it: a snapshot is taken,
 * the value meant lies CROSSTSTAMP_AHEAD counts after it (rounded up so the
 * base value converts back exactly), and is reported once the counter has
 * passed it, so it lies in the current interval.
 */
static void crosststamp_dev_now(struct crosststamp_dev *dev)
{
	const struct clocksource_base *base = dev->base;
	u64 cycles;

	ktime_get_snapshot(&dev->now);
	cycles = dev->now.cycles + CROSSTSTAMP_AHEAD;
	crosststamp_tag(&dev->counter, crosststamp_id_of(&dev->now));
	if (base && base->numerator && !dev->use_nsecs) {
		u32 rem;

		div_u64_rem(cycles - base->offset, base->numerator, &rem);
		cycles += base->numerator - rem;
	}
	while (crosststamp_test_cs_read(NULL) < cycles)
		cpu_relax();
	dev->cycles = cycles;
	dev->counter.cycles = cycles;
	if (!base)
		return;
	/* The inverse of convert_base_to_cs(), by hand. */
	crosststamp_tag_base(&dev->counter, base, dev->use_nsecs);
	if (dev->use_nsecs)	/* the clocksource counts ns: the same value */
		dev->counter.cycles = cycles - base->offset;
	else if (base->numerator)
		dev->counter.cycles = div_u64(cycles - base->offset, base->numerator) *
				      base->denominator;
}

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
	/*
	 * Called inside the timekeeper's seqcount read section, so the
	 * snapshot sees the same timekeeper state as the caller.
	 */
	if (dev->counter_is_now)
		crosststamp_dev_now(dev);
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
	return crosststamp_id_of(&snap);
}

/* The first clocksource ID that is neither CSID_GENERIC nor @a nor @b. */
static enum clocksource_ids crosststamp_other_id(enum clocksource_ids a,
						 enum clocksource_ids b)
{
	enum clocksource_ids id;

	for (id = CSID_GENERIC + 1; id < CROSSTSTAMP_NR_IDS; id++)
		if (id != a && id != b)
			return id;
	return CSID_GENERIC;
}

static const char * const crosststamp_test_cs_names[] = {
	"crosststamp_test0", "crosststamp_test1",
};

/* |@a - @b| in nanoseconds. */
static s64 crosststamp_ns_apart(ktime_t a, ktime_t b)
{
	s64 d = ktime_to_ns(ktime_sub(a, b));

	return d < 0 ? -d : d;
}

static u32 crosststamp_tsc_khz;
static u32 crosststamp_counts_per_ns = 1;

/* The TSC in counts of 1/crosststamp_counts_per_ns ns: the test clocksources' counter. */
static u64 crosststamp_test_cs_read(struct clocksource *cs)
{
	return mul_u64_u32_div(get_cycles(), USEC_PER_SEC * crosststamp_counts_per_ns,
			       crosststamp_tsc_khz);
}

KUNIT_DEFINE_ACTION_WRAPPER(crosststamp_unregister_cs, clocksource_unregister,
			    struct clocksource *);

/*
 * Register a clocksource with ID @id and, if not NULL, base clock @base
 * that counts @counts_per_ns per nanosecond of the TSC (mult = (1 << shift)
 * / @counts_per_ns), and make it the timekeeping clocksource until the test
 * ends. @rank (0 or 1) orders several: the higher one wins.
 */
static struct clocksource *crosststamp_register_cs(struct kunit *test, enum clocksource_ids id,
						   int rank, struct clocksource_base *base,
						   u32 counts_per_ns)
{
	struct clocksource *cs;

#ifdef CONFIG_X86_TSC
	crosststamp_tsc_khz = tsc_khz;
#endif
	if (!crosststamp_tsc_khz)
		kunit_skip(test, "no TSC of known frequency to back a test clocksource");

	cs = kunit_kzalloc(test, sizeof(*cs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cs);
	cs->name = crosststamp_test_cs_names[rank];
	cs->rating = CROSSTSTAMP_TEST_CS_RATING + rank;
	cs->read = crosststamp_test_cs_read;
	cs->mask = CLOCKSOURCE_MASK(64);
	cs->flags = CLOCK_SOURCE_IS_CONTINUOUS;
	cs->mult = (1 << CROSSTSTAMP_NS_SHIFT) / counts_per_ns;
	cs->shift = CROSSTSTAMP_NS_SHIFT;
	crosststamp_set_base(cs, base, CROSSTSTAMP_NS_KHZ * counts_per_ns);
	KUNIT_ASSERT_EQ(test, crosststamp_remember(test, cs, id), 0);
	crosststamp_counts_per_ns = counts_per_ns;

	/* No frequency: the mult and shift above are kept. */
	KUNIT_ASSERT_EQ(test, __clocksource_register(cs), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_unregister_cs, cs), 0);
	KUNIT_ASSERT_EQ_MSG(test, crosststamp_current_id(), id,
			    "%s did not become the timekeeping clocksource (clocksource= on the command line?)",
			    cs->name);
	return cs;
}

/* As above, counting nanoseconds: mult = 1 << shift. */
static struct clocksource *crosststamp_use_test_cs(struct kunit *test, enum clocksource_ids id,
						   int rank, struct clocksource_base *base)
{
	return crosststamp_register_cs(test, id, rank, base, 1);
}

/*
 * The realtime and monotonic raw of @dev's counter value, computed by hand:
 * d counts after the snapshot of now are d ns later on the raw clock.
 * Realtime runs at the NTP-adjusted mult; NTP keeps its frequency within
 * MAXFREQ (500 ppm) of the raw one, so it may differ by that fraction of d
 * plus 1 ns of truncation.
 */
static void crosststamp_expect_by_hand(struct kunit *test, const struct crosststamp_dev *dev,
				       const struct system_device_crosststamp *xt)
{
	u64 d = dev->cycles - dev->now.cycles;
	s64 real_tolerance = div_u64(d * MAXFREQ, NSEC_PER_SEC) + 1;

	KUNIT_EXPECT_EQ(test, xt->device, CROSSTSTAMP_DEVICE_TIME);
	KUNIT_EXPECT_EQ_MSG(test, xt->sys_monoraw, ktime_add_ns(dev->now.raw, d),
			    "%llu counts after the snapshot", d);
	KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt->sys_realtime,
						       ktime_add_ns(dev->now.real, d)),
			    real_tolerance, "%llu counts after the snapshot", d);
}

/*
 * Bound on the error of an interpolated realtime: unlike the raw clock,
 * realtime runs at the NTP-adjusted mult, which may change inside the
 * history span. NTP keeps the frequency within MAXFREQ (500 ppm) of the raw
 * one, so the interpolation can be off by at most that fraction of the span,
 * plus the truncations to whole ns: of the history's realtime, of the
 * interval start's and of the scaling division, less than 1 ns each. The
 * span ends before now.
 */
static s64 crosststamp_real_tolerance_ns(const struct system_time_snapshot *history)
{
	struct system_time_snapshot end;
	u64 span;

	ktime_get_snapshot(&end);
	span = ktime_to_ns(ktime_sub(end.raw, history->raw));
	return div_u64(span * MAXFREQ, NSEC_PER_SEC) + 3;
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
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%pe", ERR_PTR(*err));
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

	crosststamp_use_test_cs(test, CSID_GENERIC, 0, NULL);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, NULL, &xt), -ENODEV);
	KUNIT_EXPECT_EQ(test, crosststamp_tag_of(&dev.counter), CSID_GENERIC);
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

	cs = crosststamp_use_test_cs(test, test_id, 0, NULL);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, NULL, &xt), 0);
	KUNIT_EXPECT_EQ(test, crosststamp_tag_of(&dev.counter), test_id);

	dev.counter_is_now = false;
	crosststamp_tag(&dev.counter, prev_id);
	KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), -ENODEV,
			    "cs_id %d while %d is current", prev_id, test_id);

	/* The reverse: the previous clocksource is back, report the test's. */
	kunit_release_action(test, crosststamp_unregister_cs, cs);
	KUNIT_ASSERT_NE(test, crosststamp_current_id(), test_id);
	crosststamp_tag(&dev.counter, test_id);
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
 * A counter value of the current clocksource, CROSSTSTAMP_AHEAD counts after
 * a snapshot in the same interval: monotonic raw is exactly that many ns
 * after the snapshot's, realtime within the NTP bound (computed by hand,
 * crosststamp_expect_by_hand()).
 */
static void crosststamp_current_clocksource(struct kunit *test)
{
	struct crosststamp_dev dev = { .counter_is_now = true };
	struct system_device_crosststamp xt;
	s64 *shift;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	shift = kunit_kzalloc(test, sizeof(*shift), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, shift);
	*shift = *(const s64 *)test->param_value;
	if (*shift) {
		crosststamp_shift_realtime(*shift);
		KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_unshift_realtime,
								shift), 0);
	}

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, NULL, &xt), 0);
	crosststamp_expect_by_hand(test, &dev, &xt);
}

struct crosststamp_base_param {
	struct clocksource_base base;	/* id filled in by the case */
	bool use_nsecs;
	bool other_id;			/* report another ID than the base's */
	int err;			/* 0: converted, checked by hand */
	const char *desc;
};

static const struct crosststamp_base_param crosststamp_base_params[] = {
	{ { .numerator = 3, .denominator = 2, .offset = 1000003 }, false, false, 0,
	  "ratio_3_2_with_offset" },
	{ { .numerator = 1, .denominator = 1 }, false, false, 0, "ratio_1_1" },
	{ { .offset = 77 }, true, false, 0, "nanoseconds_with_offset" },
	{ { .numerator = 0, .denominator = 2 }, false, false, -ENODEV, "zero_numerator" },
	{ { .numerator = 3, .denominator = 0 }, false, false, -ENODEV, "zero_denominator" },
	{ { .numerator = 3, .denominator = 2 }, false, true, -ENODEV, "other_id" },
};

KUNIT_ARRAY_PARAM_DESC(crosststamp_base, crosststamp_base_params, desc);

/*
 * A counter value of the clocksource's base clock (convert_base_to_cs()):
 * in base counts it becomes count * numerator / denominator + offset, in
 * base nanoseconds ns * freq_khz / USEC_PER_SEC + offset, and then is
 * converted as the clocksource's own; a ratio with a zero term cannot
 * convert and an ID that is neither the clocksource's nor the base's is
 * not either: -ENODEV.
 */
static void crosststamp_base_clock(struct kunit *test)
{
	const struct crosststamp_base_param *p = test->param_value;
	enum clocksource_ids cs_id = crosststamp_other_id(CSID_GENERIC, CSID_GENERIC);
	struct crosststamp_dev dev = { .counter_is_now = true, .use_nsecs = p->use_nsecs };
	struct clocksource_base *base, *reported;
	struct system_device_crosststamp xt;
	int ret;

	if (!CROSSTSTAMP_BASE_CLOCK)
		kunit_skip(test, "no clocksource base clock before 6.10");
	base = kunit_kmalloc(test, sizeof(*base), GFP_KERNEL);
	reported = kunit_kmalloc(test, sizeof(*reported), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, base);
	KUNIT_ASSERT_NOT_NULL(test, reported);
	*base = p->base;
	base->id = crosststamp_other_id(cs_id, CSID_GENERIC);
	crosststamp_use_test_cs(test, cs_id, 0, base);
	/* The device converts by the same base, under another ID if asked. */
	*reported = *base;
	if (p->other_id)
		reported->id = crosststamp_other_id(cs_id, base->id);
	dev.base = reported;

	ret = crosststamp_get(&dev, NULL, &xt);
	KUNIT_EXPECT_EQ(test, ret, p->err);
	if (!ret)
		crosststamp_expect_by_hand(test, &dev, &xt);
	else
		KUNIT_EXPECT_EQ(test, xt.sys_monoraw, KTIME_MIN);
}

/*
 * A counter value from before the current update interval: refused without
 * history; with history it is interpolated from the closer end. With a
 * clocksource counting ns at mult = 1 << shift the raw clock is linear in
 * the counter, so the interpolated monotonic raw is exact: the history's
 * plus the counts between. Realtime within crosststamp_real_tolerance_ns().
 */
enum crosststamp_closer_end {
	CROSSTSTAMP_NEAR_HISTORY,	/* interpolated forward from the history */
	CROSSTSTAMP_NEAR_INTERVAL,	/* back from the start of the interval */
};

static void crosststamp_interpolate(struct kunit *test, enum crosststamp_closer_end near)
{
	struct system_time_snapshot history, then;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;
	u64 d;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	ktime_get_snapshot(&history);
	/*
	 * Far from the history's start: CROSSTSTAMP_BACKWARD_TICKS ticks, and
	 * so update intervals, later; the interval start that follows is then
	 * the closer end unless this thread is held up for half as long (the
	 * case still checks the result, only through the other branch).
	 */
	if (near == CROSSTSTAMP_NEAR_INTERVAL) {
		unsigned long until = jiffies + CROSSTSTAMP_BACKWARD_TICKS;

		while (time_before(jiffies, until))
			schedule_timeout_uninterruptible(1);
	}
	ktime_get_snapshot(&then);
	dev.counter.cycles = then.cycles;
	crosststamp_tag(&dev.counter, crosststamp_id_of(&then));

	KUNIT_ASSERT_EQ_MSG(test, crosststamp_wait_for_new_interval(&dev), -EINVAL,
			    "a counter value before the interval without history");

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	d = then.cycles - history.cycles;
	KUNIT_EXPECT_EQ(test, xt.device, CROSSTSTAMP_DEVICE_TIME);
	KUNIT_EXPECT_EQ_MSG(test, xt.sys_monoraw, ktime_add_ns(history.raw, d),
			    "%llu counts after the history", d);
	KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime,
						       ktime_add_ns(history.real, d)),
			    crosststamp_real_tolerance_ns(&history),
			    "%llu counts after the history", d);
}

/* The counter value right after the history: interpolated forward from it. */
static void crosststamp_history_interpolation(struct kunit *test)
{
	crosststamp_interpolate(test, CROSSTSTAMP_NEAR_HISTORY);
}

/* The counter value long after the history: interpolated back from the interval. */
static void crosststamp_history_interpolation_backward(struct kunit *test)
{
	crosststamp_interpolate(test, CROSSTSTAMP_NEAR_INTERVAL);
}

/*
 * Interpolating across a long history multiplies two spans of counter
 * values (scale64_check_overflow()): when the product needs more than 64
 * bits the crosststamp is refused with -EOVERFLOW. At 4 counts per ns, a
 * counter value 2^33 counts after the history, interpolated forward over
 * an interval starting more than 2^34 counts after it: the kernel scales
 * the raw span (a quarter of the counts, more than 2^32 ns) by 2^33.
 */
static void crosststamp_history_overflow(struct kunit *test)
{
	const u32 counts_per_ns = 4;
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;
	u64 end;

	crosststamp_register_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL,
				counts_per_ns);
	ktime_get_snapshot(&history);
	dev.counter.cycles = history.cycles + BIT_ULL(33);
	crosststamp_tag(&dev.counter, crosststamp_id_of(&history));
	/* Wait for the counter, with room for the interval that follows. */
	end = history.cycles + BIT_ULL(34) + BIT_ULL(31);
	while (crosststamp_test_cs_read(NULL) < end)
		schedule_timeout_uninterruptible(1);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EOVERFLOW);
}

/* A history that starts after the counter value is refused with -EINVAL. */
static void crosststamp_history_after_counter(struct kunit *test)
{
	struct system_time_snapshot history, then;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	ktime_get_snapshot(&then);
	ktime_get_snapshot(&history);
	KUNIT_ASSERT_GT(test, history.cycles, then.cycles);
	dev.counter.cycles = then.cycles;
	crosststamp_tag(&dev.counter, crosststamp_id_of(&then));
	KUNIT_ASSERT_EQ(test, crosststamp_wait_for_new_interval(&dev), -EINVAL);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EINVAL);
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

	crosststamp_use_test_cs(test, first_id, 0, NULL);
	ktime_get_snapshot(&history);
	ktime_get_snapshot(&then);

	/* The change itself starts a new interval after @then. */
	crosststamp_use_test_cs(test, second_id, 1, NULL);
	dev.counter.cycles = then.cycles;
	crosststamp_tag(&dev.counter, second_id);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EINVAL);

	ktime_get_snapshot(&after);
	KUNIT_ASSERT_NE(test, history.cs_was_changed_seq, after.cs_was_changed_seq);
	history.cs_was_changed_seq = after.cs_was_changed_seq;
	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	/*
	 * Not compared to then.raw exactly: the change itself loses the
	 * counter ticks between the last read of the old clocksource and the
	 * first of the new one (change_clocksource()), a few ns here. Between
	 * the history and now is all we can say.
	 */
	KUNIT_EXPECT_GE(test, xt.sys_monoraw, history.raw);
	KUNIT_EXPECT_LE(test, xt.sys_monoraw, after.raw);
}

static struct kunit_case timekeeping_crosststamp_cases[] = {
	KUNIT_CASE_PARAM(crosststamp_driver_error, crosststamp_driver_error_gen_params),
	KUNIT_CASE(crosststamp_generic_id),
	KUNIT_CASE(crosststamp_other_clocksource),
	KUNIT_CASE_PARAM(crosststamp_current_clocksource, crosststamp_realtime_shift_gen_params),
	KUNIT_CASE_PARAM(crosststamp_base_clock, crosststamp_base_gen_params),
	KUNIT_CASE(crosststamp_history_interpolation),
	KUNIT_CASE(crosststamp_history_interpolation_backward),
	KUNIT_CASE(crosststamp_history_after_counter),
	KUNIT_CASE_SLOW(crosststamp_history_overflow),
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
