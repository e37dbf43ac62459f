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
 *    refused with -EOVERFLOW, from one bit past the boundary on (a bit
 *    less is interpolated); a history of more than 2^32 counts whose
 *    products fit is interpolated;
 *  - both ends of the current interval and the history's start are in
 *    them ("chronologically in [start, end]"), on a 64-bit counter and
 *    across the wrap of a 32-bit one; a history across a wrap is
 *    interpolated like any other;
 *  - a clock set inside the history does not refuse it (a clocksource
 *    change does); realtime is then not interpolated across the step but
 *    follows the timeline of the end it is interpolated from: the raw
 *    correction scaled by mult(real) / mult(raw), checked to the
 *    nanosecond with an NTP frequency offset that sets the two apart;
 *    without a clock set realtime is interpolated from the realtime that
 *    passed, not scaled by the mult of the moment;
 *  - a timekeeping update while get_time_fn() runs makes the kernel call it
 *    again (the seqcount retry), and the result is the last call's.
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
 * gives the previous one back. One of them, the controlled clocksource, can
 * be held at a chosen value and cut to a 32-bit mask, which makes the
 * interval's ends exact and a wrap a matter of a fraction of a second.
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
#ifdef CONFIG_ARM_ARCH_TIMER
#include <asm/arch_timer.h>
#endif

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

/* The TSC's frequency, and the test clocksources' counts per ns of it. */
static u32 crosststamp_tsc_khz;
static u32 crosststamp_counts_per_ns = 1;

struct crosststamp_dev {
	int err;			/* returned by get_time_fn() when not 0 */
	bool counter_is_now;		/* report a counter value of now, see below */
	bool snapshot;			/* take @now in each call, report @counter */
	unsigned int wait_calls;	/* the first calls wait for an update */
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

/*
 * Spin until timekeeping has run an update, for at most a second of the
 * TSC: inside the timekeeper's read section nothing may sleep. The coarse
 * clock moves only with an update, after its write of the timekeeper's
 * seqcount, so a reader that began before is certain to retry. (Waiting for
 * jiffies is not: they advance before update_wall_time() writes, and a
 * tick may find less than a whole update interval to account.)
 */
static void crosststamp_wait_for_update(void)
{
	u64 coarse = ktime_get_coarse_ns();
	u64 timeout = get_cycles() + (u64)crosststamp_tsc_khz * MSEC_PER_SEC;

	while (ktime_get_coarse_ns() == coarse && get_cycles() < timeout)
		cpu_relax();
}

/* Sleep until jiffies advanced @ticks times (outside any read section). */
static void crosststamp_sleep_ticks(unsigned long ticks)
{
	unsigned long until = jiffies + ticks;

	while (time_before(jiffies, until))
		schedule_timeout_uninterruptible(1);
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
	if (dev->calls <= dev->wait_calls)
		crosststamp_wait_for_update();
	/*
	 * Called inside the timekeeper's seqcount read section, so the
	 * snapshot sees the same timekeeper state as the caller.
	 */
	if (dev->counter_is_now)
		crosststamp_dev_now(dev);
	else if (dev->snapshot)
		ktime_get_snapshot(&dev->now);
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

/* The TSC in counts of 1/crosststamp_counts_per_ns ns: the test clocksources' counter. */
static u64 crosststamp_test_cs_read(struct clocksource *cs)
{
	return mul_u64_u32_div(get_cycles(), USEC_PER_SEC * crosststamp_counts_per_ns,
			       crosststamp_tsc_khz);
}

KUNIT_DEFINE_ACTION_WRAPPER(crosststamp_unregister_cs, clocksource_unregister,
			    struct clocksource *);

/*
 * The test clocksources count the CPU's cycle counter, get_cycles(): the TSC
 * on x86, the architected counter (CNTVCT_EL0, whose frequency CNTFRQ_EL0
 * gives) on arm64. Skip without one of known frequency.
 */
static void crosststamp_need_tsc(struct kunit *test)
{
#if defined(CONFIG_X86_TSC)
	crosststamp_tsc_khz = tsc_khz;
#elif defined(CONFIG_ARM_ARCH_TIMER)
	crosststamp_tsc_khz = arch_timer_get_cntfrq() / 1000;
#endif
	if (!crosststamp_tsc_khz)
		kunit_skip(test, "no cycle counter of known frequency to back a test clocksource");
}

/*
 * The controlled clocksource: the test clocksources' counter plus an
 * offset, cut to a mask (a 32-bit one wraps every 4.3 s), or, while held,
 * a value the case chose. Holding it makes the counter values timekeeping
 * reads exact: the read that starts an update interval (cycle_last, on a
 * clocksource change) and the read of "now" are then values the case
 * knows. A hold is released only once the counter has passed the held
 * value, so timekeeping never sees it go back.
 */
static struct {
	u64 offset;
	u64 mask;
	u64 value;		/* returned while held */
	bool held;
} crosststamp_ctl;

static u64 crosststamp_ctl_running(void)
{
	return (crosststamp_test_cs_read(NULL) + READ_ONCE(crosststamp_ctl.offset)) &
		crosststamp_ctl.mask;
}

static u64 crosststamp_ctl_read(struct clocksource *cs)
{
	if (READ_ONCE(crosststamp_ctl.held)) {
		smp_rmb();	/* the value written before held was set */
		return READ_ONCE(crosststamp_ctl.value);
	}
	smp_rmb();	/* the offset written before held was cleared */
	return crosststamp_ctl_running();
}

/* True when @a lies after @b on the counter, across a wrap too. */
static bool crosststamp_ctl_after(u64 a, u64 b)
{
	u64 d = (a - b) & crosststamp_ctl.mask;

	return d && d <= crosststamp_ctl.mask >> 1;
}

/* Hold the controlled clocksource at @value (not before a value it returned). */
static void crosststamp_ctl_hold(u64 value)
{
	WRITE_ONCE(crosststamp_ctl.value, value & crosststamp_ctl.mask);
	smp_wmb();	/* the value before held, for crosststamp_ctl_read() */
	WRITE_ONCE(crosststamp_ctl.held, true);
}

/* Let it run again once the counter has passed the held value. */
static void crosststamp_ctl_release(void *unused)
{
	u64 until = get_cycles() + (u64)crosststamp_tsc_khz * MSEC_PER_SEC;

	if (!READ_ONCE(crosststamp_ctl.held))
		return;
	/* The time is held too: wait on the TSC, not on a timer. */
	while (!crosststamp_ctl_after(crosststamp_ctl_running(), crosststamp_ctl.value) &&
	       crosststamp_ctl_running() != crosststamp_ctl.value) {
		if (get_cycles() > until) {
			/* Never go back: keep it held (the case is red already). */
			pr_err("crosststamp: the counter did not pass the held value in 1 s\n");
			return;
		}
		cpu_relax();
	}
	WRITE_ONCE(crosststamp_ctl.held, false);
}

/*
 * Let it run on from the held value now, however long it was held: the
 * running counter is moved back to it (timekeeping has seen nothing after
 * it), so what the case does next does not race a counter that kept
 * running during the hold.
 */
static void crosststamp_ctl_resume(void)
{
	WRITE_ONCE(crosststamp_ctl.offset,
		   (crosststamp_ctl.value - crosststamp_test_cs_read(NULL)) & crosststamp_ctl.mask);
	smp_wmb();	/* the offset before held is cleared, for crosststamp_ctl_read() */
	WRITE_ONCE(crosststamp_ctl.held, false);
}

/*
 * Register a clocksource with ID @id and, if not NULL, base clock @base
 * that counts @counts_per_ns per nanosecond of the TSC (mult = (1 << shift)
 * / @counts_per_ns), read by @read with @mask, and make it the timekeeping
 * clocksource until the test ends. @rank (0 or 1) orders several: the
 * higher one wins.
 */
static struct clocksource *__crosststamp_register_cs(struct kunit *test, enum clocksource_ids id,
						     int rank, struct clocksource_base *base,
						     u32 counts_per_ns,
						     u64 (*read)(struct clocksource *), u64 mask)
{
	struct clocksource *cs;

	crosststamp_need_tsc(test);
	cs = kunit_kzalloc(test, sizeof(*cs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cs);
	cs->name = crosststamp_test_cs_names[rank];
	cs->rating = CROSSTSTAMP_TEST_CS_RATING + rank;
	cs->read = read;
	cs->mask = mask;
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

static struct clocksource *crosststamp_register_cs(struct kunit *test, enum clocksource_ids id,
						   int rank, struct clocksource_base *base,
						   u32 counts_per_ns)
{
	return __crosststamp_register_cs(test, id, rank, base, counts_per_ns,
					 crosststamp_test_cs_read, CLOCKSOURCE_MASK(64));
}

/*
 * The controlled clocksource, counting nanoseconds, @mask wide, made current
 * while held at @held, where its running counter is set too: the switch
 * reads it, so the current update interval starts at @held exactly
 * (cycle_last), and until a tick passes a whole interval the realtime mult
 * is the raw one (1 << shift, set by the switch), so realtime and monotonic
 * raw advance exactly 1 ns per count. The hold ends with the case, if the
 * case does not end it first (timekeeping's time stands still meanwhile).
 */
static void crosststamp_use_ctl_cs(struct kunit *test, u64 mask, u64 held)
{
	crosststamp_need_tsc(test);
	crosststamp_counts_per_ns = 1;
	crosststamp_ctl.mask = mask;
	crosststamp_ctl.offset = 0;
	crosststamp_ctl.offset = (held - crosststamp_ctl_running()) & mask;
	crosststamp_ctl_hold(held);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_ctl_release, NULL), 0);
	__crosststamp_register_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL,
				  1, crosststamp_ctl_read, mask);
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
	if (near == CROSSTSTAMP_NEAR_INTERVAL)
		crosststamp_sleep_ticks(CROSSTSTAMP_BACKWARD_TICKS);
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
 * A clocksource counting @counts_per_ns per ns made current, @history taken,
 * @dev set to report the counter value @after counts after it, and the
 * counter waited for until @span counts after the history.
 */
static void crosststamp_long_history(struct kunit *test, u32 counts_per_ns,
				     struct system_time_snapshot *history,
				     struct crosststamp_dev *dev, u64 after, u64 span)
{
	crosststamp_register_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL,
				counts_per_ns);
	ktime_get_snapshot(history);
	dev->counter.cycles = history->cycles + after;
	crosststamp_tag(&dev->counter, crosststamp_id_of(history));
	while (crosststamp_test_cs_read(NULL) < history->cycles + span)
		schedule_timeout_uninterruptible(1);
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
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	/* Room after the counter value for the interval that follows. */
	crosststamp_long_history(test, 4, &history, &dev, BIT_ULL(33), BIT_ULL(34) + BIT_ULL(31));

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EOVERFLOW);
}

/*
 * The -EOVERFLOW boundary itself. scale64_check_overflow() refuses when
 * the partial span's bit length plus that of the raw ns to scale (less
 * than the total count, so all remainder) exceeds 64. At 4 counts per ns
 * and a history between 2^32 and 2^33 ns long (33 bits of raw ns; the
 * wait makes it more than 2^32 + 2^29 ns, the calls follow at once), a
 * counter value 2^31 - 1 counts after the history (31 bits) is
 * interpolated and 2^31 counts after it (32 bits) is refused.
 */
static void crosststamp_history_overflow_boundary(struct kunit *test)
{
	const u64 span = BIT_ULL(34) + BIT_ULL(31);
	struct system_time_snapshot history;
	struct crosststamp_dev dev = { .snapshot = true };
	struct system_device_crosststamp xt;
	u64 raw_ns;

	crosststamp_long_history(test, 4, &history, &dev, BIT_ULL(31) - 1, span);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	raw_ns = ktime_to_ns(ktime_sub(dev.now.raw, history.raw));
	KUNIT_ASSERT_TRUE_MSG(test, fls64(raw_ns) == 33,
			      "the history is %llu ns long, not 33 bits", raw_ns);
	KUNIT_EXPECT_LE(test, crosststamp_ns_apart(xt.sys_monoraw,
						   ktime_add_ns(history.raw,
								(BIT_ULL(31) - 1) / 4)), 2);

	dev.counter.cycles = history.cycles + BIT_ULL(31);
	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), -EOVERFLOW);
	raw_ns = ktime_to_ns(ktime_sub(dev.now.raw, history.raw));
	KUNIT_EXPECT_TRUE_MSG(test, fls64(raw_ns) == 33,
			      "the history is %llu ns long, not 33 bits", raw_ns);
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

/*
 * Both ends of the current update interval are in it, as the code says
 * ("chronologically in [start, end]"): a counter value exactly at the
 * interval's start (cycle_last) and one exactly at the counter's current
 * value are converted; one count before the start or after now is refused
 * (-EINVAL: without history). The controlled clocksource makes both ends
 * exact (crosststamp_use_ctl_cs()): monotonic raw and realtime advance 1 ns
 * per count, so each expected value is a snapshot's of now less the counts
 * between. @mask and @start put the interval across a wrap of the counter
 * or not.
 */
static void crosststamp_interval_ends(struct kunit *test, u64 mask, u64 start)
{
	const u64 end = (start + 2 * CROSSTSTAMP_AHEAD - 1) & mask;
	const u64 in[] = { start, (start + CROSSTSTAMP_AHEAD) & mask, end, mask, 0 };
	const u64 out[] = { (start - 1) & mask, (end + 1) & mask };
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;
	struct system_time_snapshot now;
	unsigned int i;

	crosststamp_use_ctl_cs(test, mask, start);
	crosststamp_ctl_hold(end);
	ktime_get_snapshot(&now);
	KUNIT_ASSERT_EQ(test, now.cycles, end);
	crosststamp_tag(&dev.counter, crosststamp_id_of(&now));

	for (i = 0; i < ARRAY_SIZE(in); i++) {
		u64 d = (end - in[i]) & mask;

		/* The wrap's two sides: only when the interval crosses it. */
		if (d > end - start && start < end)
			continue;
		dev.counter.cycles = in[i];
		KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), 0,
				    "counter %#llx in the interval [%#llx, %#llx]",
				    in[i], start, end);
		KUNIT_EXPECT_EQ_MSG(test, xt.sys_monoraw, ktime_sub_ns(now.raw, d),
				    "counter %#llx, %llu counts before now", in[i], d);
		KUNIT_EXPECT_EQ_MSG(test, xt.sys_realtime, ktime_sub_ns(now.real, d),
				    "counter %#llx, %llu counts before now", in[i], d);
	}
	for (i = 0; i < ARRAY_SIZE(out); i++) {
		dev.counter.cycles = out[i];
		KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), -EINVAL,
				    "counter %#llx outside the interval [%#llx, %#llx], no history",
				    out[i], start, end);
	}
}

/* An interval well inside a 64-bit counter. */
static void crosststamp_interval_inclusive(struct kunit *test)
{
	crosststamp_interval_ends(test, CLOCKSOURCE_MASK(64), BIT_ULL(40));
}

/*
 * A 32-bit counter, the interval across its wrap: values on both sides
 * are in it and converted by the counts between, modulo 2^32.
 */
static void crosststamp_interval_across_wrap(struct kunit *test)
{
	const u64 mask = CLOCKSOURCE_MASK(32);

	crosststamp_interval_ends(test, mask, mask + 1 - CROSSTSTAMP_AHEAD);
}

/*
 * A counter value exactly at the history's counter value is in the history
 * ([start, end] there too): interpolated forward from the history by
 * nothing, it is the history's monotonic raw and realtime, exactly.
 */
static void crosststamp_history_start(struct kunit *test)
{
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	ktime_get_snapshot(&history);
	dev.counter.cycles = history.cycles;
	crosststamp_tag(&dev.counter, crosststamp_id_of(&history));
	KUNIT_ASSERT_EQ(test, crosststamp_wait_for_new_interval(&dev), -EINVAL);

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	KUNIT_EXPECT_EQ(test, xt.sys_monoraw, history.raw);
	KUNIT_EXPECT_EQ(test, xt.sys_realtime, history.real);
}

/* How long after the history a 32-bit counter wraps. */
#define CROSSTSTAMP_WRAP_IN		(200 * NSEC_PER_MSEC)

/*
 * The controlled clocksource, 32 bits wide, held CROSSTSTAMP_WRAP_IN counts
 * before its wrap; @history is taken there, then the counter runs on from
 * it. However slowly the guest ran until then (registering, a vCPU the
 * host did not schedule), the history lies before the wrap.
 */
static void crosststamp_wrap_after_history(struct kunit *test,
					   struct system_time_snapshot *history)
{
	const u64 mask = CLOCKSOURCE_MASK(32);
	const u64 held = mask + 1 - CROSSTSTAMP_WRAP_IN;

	crosststamp_use_ctl_cs(test, mask, held);
	ktime_get_snapshot(history);
	crosststamp_ctl_resume();
	KUNIT_ASSERT_EQ_MSG(test, history->cycles, held, "the history is not at the held value");
	KUNIT_ASSERT_LT(test, history->cycles, mask - CROSSTSTAMP_AHEAD);
}

/*
 * Wait for the wrap after @history, then for an update interval that starts
 * after it (three ticks: each moves the interval's start by whole update
 * intervals to within one of now). Returns the first counter value seen
 * after the wrap: it lies before that interval.
 */
static u64 crosststamp_wait_for_wrap(struct kunit *test,
				     const struct system_time_snapshot *history, u64 mask)
{
	unsigned long timeout = jiffies + CROSSTSTAMP_UPDATE_TIMEOUT;
	u64 wrapped;

	while ((wrapped = crosststamp_ctl_running()) > history->cycles &&
	       time_before(jiffies, timeout))
		schedule_timeout_uninterruptible(1);
	KUNIT_ASSERT_LT_MSG(test, wrapped, history->cycles, "the counter did not wrap");
	crosststamp_sleep_ticks(3);
	return wrapped;
}

/*
 * A history across a wrap of a 32-bit counter: the history and the counter
 * value CROSSTSTAMP_AHEAD counts after it lie before the wrap, the current
 * interval after it. timestamp_in_interval() takes the wrap into account,
 * and so must the interpolation: monotonic raw is the history's plus the
 * counts between, exactly (the raw clock is linear in the counter), as for
 * any history (crosststamp_interpolate()).
 */
static void crosststamp_history_across_wrap(struct kunit *test)
{
	const u64 mask = CLOCKSOURCE_MASK(32);
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	crosststamp_wrap_after_history(test, &history);
	dev.counter.cycles = history.cycles + CROSSTSTAMP_AHEAD;
	crosststamp_tag(&dev.counter, crosststamp_id_of(&history));
	crosststamp_wait_for_wrap(test, &history, mask);
	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, NULL, &xt), -EINVAL);

	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	KUNIT_EXPECT_EQ_MSG(test, xt.sys_monoraw, ktime_add_ns(history.raw, CROSSTSTAMP_AHEAD),
			    "history %#llx, counter %#llx, interval after the wrap",
			    history.cycles, dev.counter.cycles);
	KUNIT_EXPECT_LE(test, crosststamp_ns_apart(xt.sys_realtime,
						   ktime_add_ns(history.real, CROSSTSTAMP_AHEAD)),
			crosststamp_real_tolerance_ns(&history));
}

/*
 * After a wrap, a counter value between the wrap and the start of the
 * current interval lies before the interval, as before any wrap: without
 * history it is refused (-EINVAL), with the history from before the wrap it
 * is interpolated, to the history's monotonic raw plus the counts between
 * (modulo 2^32). The interval's start is where ticks moved it, whole update
 * intervals at a time, from before the wrap.
 */
static void crosststamp_history_after_wrap(struct kunit *test)
{
	const u64 mask = CLOCKSOURCE_MASK(32);
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;
	u64 d;

	crosststamp_wrap_after_history(test, &history);
	dev.counter.cycles = crosststamp_wait_for_wrap(test, &history, mask);
	crosststamp_tag(&dev.counter, crosststamp_id_of(&history));
	d = (dev.counter.cycles - history.cycles) & mask;

	KUNIT_EXPECT_EQ_MSG(test, crosststamp_get(&dev, NULL, &xt), -EINVAL,
			    "counter %#llx, after the wrap, before the interval",
			    dev.counter.cycles);
	KUNIT_EXPECT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	KUNIT_EXPECT_EQ_MSG(test, xt.sys_monoraw, ktime_add_ns(history.raw, d),
			    "history %#llx, counter %#llx after the wrap: %llu counts after it",
			    history.cycles, dev.counter.cycles, d);
	KUNIT_EXPECT_LE(test, crosststamp_ns_apart(xt.sys_realtime,
						   ktime_add_ns(history.real, d)),
			crosststamp_real_tolerance_ns(&history));
}

static const enum crosststamp_closer_end crosststamp_closer_ends[] = {
	CROSSTSTAMP_NEAR_HISTORY, CROSSTSTAMP_NEAR_INTERVAL,
};

static void crosststamp_closer_end_desc(const enum crosststamp_closer_end *near, char *desc)
{
	strscpy(desc, *near == CROSSTSTAMP_NEAR_HISTORY ? "forward_from_history" :
		"back_from_interval", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(crosststamp_closer_end, crosststamp_closer_ends, crosststamp_closer_end_desc);

/*
 * Get @dev's crosststamp of @then's counter value against @history and
 * check monotonic raw (@d counts after the history, exact); returns @d and,
 * in @back unless NULL, the counts from @then to the snapshot taken in the call.
 */
static u64 crosststamp_get_then(struct kunit *test, struct crosststamp_dev *dev,
				struct system_time_snapshot *history,
				const struct system_time_snapshot *then,
				struct system_device_crosststamp *xt, u64 *back)
{
	u64 d;

	dev->counter.cycles = then->cycles;
	crosststamp_tag(&dev->counter, crosststamp_id_of(then));
	KUNIT_ASSERT_EQ(test, crosststamp_get(dev, history, xt), 0);
	d = then->cycles - history->cycles;
	if (back)
		*back = dev->now.cycles - then->cycles;
	KUNIT_EXPECT_EQ_MSG(test, xt->sys_monoraw, ktime_add_ns(history->raw, d),
			    "%llu counts after the history", d);
	return d;
}

/*
 * Set the clock a third of a second ahead (back when the case ends), which
 * starts a new interval, so @then's counter value lies before it; then
 * crosststamp_get_then().
 */
static u64 crosststamp_step_and_get(struct kunit *test, struct crosststamp_dev *dev,
				    struct system_time_snapshot *history,
				    const struct system_time_snapshot *then,
				    struct system_device_crosststamp *xt, u64 *back)
{
	s64 *shift = kunit_kzalloc(test, sizeof(*shift), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, shift);
	*shift = NSEC_PER_SEC / 3;
	crosststamp_shift_realtime(*shift);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_unshift_realtime, shift),
			0);
	return crosststamp_get_then(test, dev, history, then, xt, back);
}

/*
 * The clock set inside the history (realtime moved by a third of a second,
 * no clocksource change): the history is still accepted (only a
 * clocksource change refuses one, crosststamp_history_clocksource_changed()),
 * monotonic raw is interpolated as always, and realtime is not interpolated
 * across the step (the discontinuity): the raw correction is scaled by the
 * realtime mult over the raw one instead, so realtime lies on the timeline
 * of the end it is interpolated from: before the step when forward from the
 * history, after it when back from the interval (a snapshot in the same
 * interval, taken in get_time_fn(), gives that timeline). Interpolated
 * across the step, realtime would be off by a share of the third of a
 * second: far outside the MAXFREQ bound.
 */
static void crosststamp_history_clock_set(struct kunit *test)
{
	const enum crosststamp_closer_end *near = test->param_value;
	struct system_time_snapshot history, then;
	struct crosststamp_dev dev = { .snapshot = true };
	struct system_device_crosststamp xt;
	u64 d, back;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	/*
	 * Which end is closer is made plain: ticks between the history and
	 * the counter value (then) when interpolating back from the interval,
	 * ticks between the counter value and the step when forward.
	 */
	ktime_get_snapshot(&history);
	if (*near == CROSSTSTAMP_NEAR_INTERVAL)
		crosststamp_sleep_ticks(CROSSTSTAMP_BACKWARD_TICKS);
	ktime_get_snapshot(&then);
	if (*near == CROSSTSTAMP_NEAR_HISTORY)
		crosststamp_sleep_ticks(CROSSTSTAMP_BACKWARD_TICKS);

	d = crosststamp_step_and_get(test, &dev, &history, &then, &xt, &back);
	if (d < back)	/* the kernel's choice, as the case meant it or not */
		KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime,
							       ktime_add_ns(history.real, d)),
				    (s64)div_u64(d * MAXFREQ, NSEC_PER_SEC) + 2,
				    "%llu counts after the history, before the step", d);
	else
		KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime,
							       ktime_sub_ns(dev.now.real, back)),
				    (s64)div_u64(back * MAXFREQ, NSEC_PER_SEC) + 3,
				    "%llu counts before the snapshot in the call, after the step",
				    back);
}

/* The NTP frequency offset the frequency cases apply: 400 ppm, below MAXFREQ. */
#define CROSSTSTAMP_FREQ_PPM		400
/* Ticks the new tick length takes to reach the realtime mult: one update, and margin. */
#define CROSSTSTAMP_FREQ_TICKS		3
/* Measurements a case whose timing the guest can spoil takes at most. */
#define CROSSTSTAMP_TRIES		5

#if IS_BUILTIN(CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST)
/* NTP's frequency offset, in ppm scaled by 2^16 as adjtimex's freq. */
static int crosststamp_adjtimex_freq(long *freq, bool set)
{
	struct __kernel_timex txc = { .modes = set ? ADJ_FREQUENCY : 0, .freq = *freq };
	int ret = do_adjtimex(&txc);

	*freq = txc.freq;
	return ret < 0 ? ret : 0;
}
#else
static int crosststamp_adjtimex_freq(long *freq, bool set)
{
	return -EOPNOTSUPP;
}
#endif

static void crosststamp_restore_freq(void *freq)
{
	crosststamp_adjtimex_freq(freq, true);
}

/*
 * Set NTP's frequency offset to @ppm until the case ends (the offset before
 * comes back then), and wait for the realtime mult to follow: from the next
 * update, tkr_mono.mult is the raw mult (1 << shift, the test clocksources
 * count ns) times 1 + @ppm / 10^6, to within a unit either way (the
 * division of the NTP tick length, the error feedback's +1).
 */
static void crosststamp_set_freq(struct kunit *test, long ppm)
{
	long *saved = kunit_kzalloc(test, sizeof(*saved), GFP_KERNEL);
	long freq = ppm << 16;

	KUNIT_ASSERT_NOT_NULL(test, saved);
	if (crosststamp_adjtimex_freq(saved, false) == -EOPNOTSUPP)
		kunit_skip(test, "needs the test built in: do_adjtimex() is not exported");
	KUNIT_ASSERT_EQ(test, crosststamp_adjtimex_freq(&freq, true), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, crosststamp_restore_freq, saved), 0);
	crosststamp_sleep_ticks(CROSSTSTAMP_FREQ_TICKS);
}

/* What CROSSTSTAMP_FREQ_PPM adds to @ns. */
static u64 crosststamp_freq_offset(u64 ns)
{
	return div_u64(ns * CROSSTSTAMP_FREQ_PPM, 1000000);
}

/* Bound on the error of @ns + crosststamp_freq_offset(@ns): two mult units, truncation. */
static s64 crosststamp_freq_tolerance(u64 ns)
{
	return (s64)(ns >> (CROSSTSTAMP_NS_SHIFT - 1)) + 3;
}

/*
 * The discontinuity branch to the nanosecond: with realtime running 400
 * ppm off the raw clock (an NTP frequency offset for the case, so the
 * realtime mult is the raw one times 1.0004) and the clock set inside the
 * history, the realtime correction is the raw one scaled by
 * mult(real) / mult(raw): forward from the history d raw ns are
 * d * 1.0004 realtime ns, back from the interval likewise. The counter
 * value lies 5 ticks from the closer end: an unscaled correction (or one
 * scaled the other way) is off by 400 ppm of that, some microseconds,
 * where the bound is a few nanoseconds.
 */
static void crosststamp_history_clock_set_scaled(struct kunit *test)
{
	const enum crosststamp_closer_end *near = test->param_value;
	const unsigned long closer = 5, farther = 3 * closer;
	struct system_time_snapshot history, then;
	struct crosststamp_dev dev = { .snapshot = true };
	struct system_device_crosststamp xt;
	u64 d, back;
	ktime_t want;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	crosststamp_set_freq(test, CROSSTSTAMP_FREQ_PPM);

	ktime_get_snapshot(&history);
	crosststamp_sleep_ticks(*near == CROSSTSTAMP_NEAR_HISTORY ? closer : farther);
	ktime_get_snapshot(&then);
	crosststamp_sleep_ticks(*near == CROSSTSTAMP_NEAR_HISTORY ? farther : closer);

	d = crosststamp_step_and_get(test, &dev, &history, &then, &xt, &back);
	if (d < back) {
		want = ktime_add_ns(history.real, d + crosststamp_freq_offset(d));
		KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime, want),
				    crosststamp_freq_tolerance(d),
				    "%llu raw ns after the history, scaled by 1.0004", d);
	} else {
		want = ktime_sub_ns(dev.now.real, back + crosststamp_freq_offset(back));
		KUNIT_EXPECT_LE_MSG(test, crosststamp_ns_apart(xt.sys_realtime, want),
				    crosststamp_freq_tolerance(back),
				    "%llu raw ns before the snapshot in the call, scaled by 1.0004",
				    back);
	}
}

/*
 * Without a clock set the realtime correction is interpolated from the
 * realtime that passed, not scaled by the realtime mult of the moment: the
 * history, the counter value 8 ticks later and 10 more ticks at the raw
 * rate (no frequency offset), then 400 ppm for the last few ticks before
 * the call. Interpolated forward from the history over the span to the
 * interval start S, realtime is the history's plus d times the span's
 * average rate: its offset from the raw d is d * 400 ppm * (S - set) /
 * (S - history), at most d * 400 ppm * (now - set) / (set - history),
 * about a sixth of d * 400 ppm; the mult of the moment (the discontinuity
 * branch) would give all of it.
 */
static void crosststamp_history_rate_interpolated(struct kunit *test)
{
	const unsigned long apart = 8, raw_after = 10;
	struct system_time_snapshot history, then, set;
	struct crosststamp_dev dev = { .snapshot = true };
	struct system_device_crosststamp xt;
	unsigned int tries = 0;
	s64 offset, most;
	u64 d;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);
	/*
	 * A guest held up between setting the rate and the call (a loaded
	 * host) stretches the last stretch past what tells the branches
	 * apart: measure again then, a few times at most.
	 */
	do {
		crosststamp_set_freq(test, 0);
		ktime_get_snapshot(&history);
		crosststamp_sleep_ticks(apart);
		ktime_get_snapshot(&then);
		crosststamp_sleep_ticks(raw_after);
		ktime_get_snapshot(&set);
		crosststamp_set_freq(test, CROSSTSTAMP_FREQ_PPM);
		d = crosststamp_get_then(test, &dev, &history, &then, &xt, NULL);
		most = div64_u64(crosststamp_freq_offset(d) * (dev.now.cycles - set.cycles),
				 set.cycles - history.cycles) + crosststamp_freq_tolerance(d);
	} while (most >= (s64)crosststamp_freq_offset(d) / 2 && ++tries < CROSSTSTAMP_TRIES);
	KUNIT_ASSERT_LT_MSG(test, most, (s64)crosststamp_freq_offset(d) / 2,
			    "the offset ran for too much of the span to tell the branches apart, %d tries",
			    CROSSTSTAMP_TRIES);
	offset = ktime_to_ns(ktime_sub(xt.sys_realtime, history.real)) - (s64)d;
	KUNIT_EXPECT_GE_MSG(test, offset, -crosststamp_freq_tolerance(d),
			    "realtime %lld ns off the raw %llu ns", offset, d);
	KUNIT_EXPECT_LE_MSG(test, offset, most,
			    "realtime %lld ns off the raw %llu ns: scaled by the mult of the call?",
			    offset, d);
}

/*
 * A long history: more than 2^32 counts between the history and the
 * interval (2^33 of a clocksource counting 16 per ns: half a second). The
 * kernel scales in 64 bits (scale64_check_overflow()): at 16 counts per ns
 * the products fit, and the counter value 2^31 counts after the history is
 * interpolated forward: monotonic raw is the history's plus 2^31 / 16 ns,
 * to the nanosecond of each truncation (the raw clock counts 1/16 ns).
 */
static void crosststamp_history_long(struct kunit *test)
{
	const u32 counts_per_ns = 16;
	struct system_time_snapshot history;
	struct crosststamp_dev dev = {};
	struct system_device_crosststamp xt;

	crosststamp_long_history(test, counts_per_ns, &history, &dev, BIT_ULL(31), BIT_ULL(33));
	KUNIT_ASSERT_EQ(test, crosststamp_wait_for_new_interval(&dev), -EINVAL);

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, &history, &xt), 0);
	KUNIT_EXPECT_LE(test, crosststamp_ns_apart(xt.sys_monoraw,
						   ktime_add_ns(history.raw,
								BIT_ULL(31) / counts_per_ns)), 2);
	KUNIT_EXPECT_LE(test, crosststamp_ns_apart(xt.sys_realtime,
						   ktime_add_ns(history.real,
								BIT_ULL(31) / counts_per_ns)),
			crosststamp_real_tolerance_ns(&history));
}

/*
 * The seqcount retry: a timekeeping update while get_time_fn() runs makes
 * get_device_system_crosststamp() call it again, and the result is that of
 * the last call: a counter value of now in it, converted as in
 * crosststamp_current_clocksource(). The first call waits for an update
 * (crosststamp_wait_for_update()): reliable whenever the ticks run.
 */
static void crosststamp_seqcount_retry(struct kunit *test)
{
	struct crosststamp_dev dev = { .counter_is_now = true, .wait_calls = 1 };
	struct system_device_crosststamp xt;

	crosststamp_use_test_cs(test, crosststamp_other_id(CSID_GENERIC, CSID_GENERIC), 0, NULL);

	KUNIT_ASSERT_EQ(test, crosststamp_get(&dev, NULL, &xt), 0);
	KUNIT_EXPECT_GE_MSG(test, dev.calls, 2, "no retry after an update during get_time_fn()");
	crosststamp_expect_by_hand(test, &dev, &xt);
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
	KUNIT_CASE_SLOW(crosststamp_history_overflow_boundary),
	KUNIT_CASE(crosststamp_history_clocksource_changed),
	KUNIT_CASE(crosststamp_interval_inclusive),
	KUNIT_CASE(crosststamp_interval_across_wrap),
	KUNIT_CASE(crosststamp_history_start),
	KUNIT_CASE(crosststamp_history_across_wrap),
	KUNIT_CASE(crosststamp_history_after_wrap),
	KUNIT_CASE_PARAM(crosststamp_history_clock_set, crosststamp_closer_end_gen_params),
	KUNIT_CASE_PARAM(crosststamp_history_clock_set_scaled, crosststamp_closer_end_gen_params),
	KUNIT_CASE(crosststamp_history_rate_interpolated),
	KUNIT_CASE_SLOW(crosststamp_history_long),
	KUNIT_CASE(crosststamp_seqcount_retry),
	{}
};

static struct kunit_suite timekeeping_crosststamp_suite = {
	.name = "timekeeping_crosststamp",
	.test_cases = timekeeping_crosststamp_cases,
};

kunit_test_suite(timekeeping_crosststamp_suite);

MODULE_DESCRIPTION("KUnit tests for get_device_system_crosststamp()");
MODULE_LICENSE("GPL");
