// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the cross-timestamp in kernel/time/timekeeping.c
 *
 * This file is included at the end of timekeeping.c when
 * CONFIG_TIMEKEEPING_KUNIT_TEST is set: the tests call its static helpers
 * and read tk_core, and use tk_clock_read(), none of which is or should be
 * visible outside it.
 *
 * timekeeping_crosststamp_interp: the arithmetic of
 * get_device_system_crosststamp(), on constructed inputs:
 *
 *  - timestamp_in_interval() takes both ends of [start, end], also when
 *    the start lies above the end (the interval runs across a wrap of the
 *    counter);
 *  - adjust_historical_crosststamp() interpolates linearly between the
 *    history and the start of the current interval, from whichever end is
 *    closer, truncating towards that end; after a clock set inside the
 *    history (a discontinuity) realtime is not interpolated across the
 *    step but follows the raw correction, scaled by mult(real) /
 *    mult(raw); a correction whose scaling fails the overflow check of
 *    scale64_check_overflow() is refused with -EOVERFLOW and leaves the
 *    timestamp as it was.
 *
#ifdef CPUHP_KUNIT_PART_clock
 * timekeeping_crosststamp_clock: get_device_system_crosststamp() on the
 * current clocksource, which it only reads:
 *
 *  - a counter value of no clocksource, or of another one, is refused with
 *    -ENODEV;
 *  - a counter value read in the current update interval gives times
 *    between those read before and after the call, and the device time
 *    unchanged;
 *  - a counter value from before the current interval is interpolated
 *    between the history snapshot and the interval's start, and refused
 *    with -EINVAL without a history, with one that begins after the value
 *    (before or after the interval start), and with one from before a
 *    clocksource change.
 *
 * A case that sees the clocksource change, the clock set or (where it
 * matters) the interval move on while it runs starts again, up to
 * XTS_ATTEMPTS times, then skips: its bounds would no longer hold.
 *
#endif
 * Nothing here registers a clocksource, sets the clock or leaves state
 * behind.
 */

#include <kunit/test.h>
#include <linux/version.h>

#include "cpuhp_kunit_compat.h"

/* timestamp_in_interval() */

struct xts_interval_param {
	const char *desc;
	u64 start;
	u64 end;
	u64 ts;
	bool in;
};

static const struct xts_interval_param xts_interval_params[] = {
	{ "inside", 100, 200, 150, true },
	{ "at the start", 100, 200, 100, true },
	{ "at the end", 100, 200, 200, true },
	{ "before the start", 100, 200, 99, false },
	{ "after the end", 100, 200, 201, false },
	{ "empty interval", 100, 100, 100, true },
	{ "beside an empty interval", 100, 100, 101, false },
	{ "start above end, above the start", U64_MAX - 10, 10, U64_MAX, true },
	{ "start above end, below the end", U64_MAX - 10, 10, 0, true },
	{ "start above end, at the start", U64_MAX - 10, 10, U64_MAX - 10, true },
	{ "start above end, at the end", U64_MAX - 10, 10, 10, true },
	{ "start above end, below the start", U64_MAX - 10, 10, U64_MAX - 11, false },
	{ "start above end, above the end", U64_MAX - 10, 10, 11, false },
	{ "start above end, between", 0xfffffff0, 0x10, 0x80000000, false },
};

KUNIT_ARRAY_PARAM_DESC(xts_interval, xts_interval_params, desc);

static void timestamp_in_interval_bounds(struct kunit *test)
{
	const struct xts_interval_param *p = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, timestamp_in_interval(p->start, p->end, p->ts), p->in,
			    "%llu in [%llu, %llu]", p->ts, p->start, p->end);
}

/* adjust_historical_crosststamp() */

/*
 * The history begins at these times; the current interval starts
 * XTS_TOTAL counts later, XTS_RAW_SPAN ns of monotonic raw and
 * XTS_REAL_SPAN ns of realtime later. The two spans differ, so a mix-up of
 * the clocks shows.
 */
#define XTS_HIST_RAW	1000000000LL
#define XTS_HIST_REAL	1700000000000000000LL
#define XTS_TOTAL	1000
#define XTS_RAW_SPAN	1000000
#define XTS_REAL_SPAN	2000000
#define XTS_DEVICE_TIME	4711

static void xts_history(struct system_time_snapshot *history,
			struct system_device_crosststamp *ts, s64 raw_span, s64 real_span)
{
	memset(history, 0, sizeof(*history));
	history->raw = ns_to_ktime(XTS_HIST_RAW);
	history->real = ns_to_ktime(XTS_HIST_REAL);
	memset(ts, 0, sizeof(*ts));
	ts->device = ns_to_ktime(XTS_DEVICE_TIME);
	ts->sys_monoraw = ns_to_ktime(XTS_HIST_RAW + raw_span);
	ts->sys_realtime = ns_to_ktime(XTS_HIST_REAL + real_span);
}

struct xts_adjust_param {
	const char *desc;
	u64 partial;		/* counts from the counter value to the interval start */
	u64 total;		/* counts from the history to the interval start */
	s64 raw;		/* expected monotonic raw, after the history */
	s64 real;		/* expected realtime, after the history */
};

/*
 * The expected times are worked out by hand: a value @partial counts
 * before the interval start lies (total - partial) / total of the way
 * through the history. The nearer end is the interval start up to
 * total / 2 and the history after it; the correction from it is
 * truncated. Only a total that does not divide evenly shows from which
 * end a value was interpolated (the two thirds).
 */
static const struct xts_adjust_param xts_adjust_params[] = {
	{ "at the interval start", 0, XTS_TOTAL, XTS_RAW_SPAN, XTS_REAL_SPAN },
	{ "no history", 1, 0, XTS_RAW_SPAN, XTS_REAL_SPAN },
	{ "1 count before the interval", 1, XTS_TOTAL, 999000, 1998000 },
	{ "a quarter from the interval", 250, XTS_TOTAL, 750000, 1500000 },
	{ "half way", 500, XTS_TOTAL, 500000, 1000000 },
	{ "just past half way", 501, XTS_TOTAL, 499000, 998000 },
	{ "a quarter from the history", 750, XTS_TOTAL, 250000, 500000 },
	{ "1 count after the history", 999, XTS_TOTAL, 1000, 2000 },
	{ "at the history", XTS_TOTAL, XTS_TOTAL, 0, 0 },
	/* 1e6 / 3 = 333333.3: 333333 back from the interval start */
	{ "a third from the interval", 1, 3, 666667, 1333334 },
	/* and 333333 on from the history */
	{ "a third from the history", 2, 3, 333333, 666666 },
};

KUNIT_ARRAY_PARAM_DESC(xts_adjust, xts_adjust_params, desc);

static void adjust_historical_crosststamp_linear(struct kunit *test)
{
	const struct xts_adjust_param *p = test->param_value;
	struct system_device_crosststamp ts;
	struct system_time_snapshot history;

	xts_history(&history, &ts, XTS_RAW_SPAN, XTS_REAL_SPAN);
	KUNIT_ASSERT_EQ(test, adjust_historical_crosststamp(&history, p->partial, p->total,
							    false, &ts), 0);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - XTS_HIST_RAW, p->raw);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_realtime) - XTS_HIST_REAL, p->real);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.device), XTS_DEVICE_TIME);
}

/*
 * A clock set inside the history: realtime is not interpolated across the
 * step (XTS_STEP here) but corrected like monotonic raw, scaled by
 * mult(real) / mult(raw). On a machine without NTP the two mults are about
 * equal: the case shows which correction realtime takes, not the ratio.
 */
#define XTS_STEP		(3600LL * NSEC_PER_SEC)

struct xts_clock_set_param {
	const char *desc;
	u64 partial;
};

static const struct xts_clock_set_param xts_clock_set_params[] = {
	{ "a quarter from the interval", 250 },
	{ "a quarter from the history", 750 },
};

KUNIT_ARRAY_PARAM_DESC(xts_clock_set, xts_clock_set_params, desc);

static void adjust_historical_crosststamp_clock_set(struct kunit *test)
{
	const struct xts_clock_set_param *p = test->param_value;
	struct timekeeper *tk = &tk_core.timekeeper;
	bool backward = p->partial <= XTS_TOTAL / 2;
	struct system_device_crosststamp ts;
	struct system_time_snapshot history;
	u32 mono_mult, raw_mult;
	unsigned int seq;
	u64 corr_raw;
	s64 real;
	int ret;

	/* adjust_historical_crosststamp() reads both mults; hold them still */
	do {
		seq = read_seqcount_begin(&tk_core.seq);
		mono_mult = tk->tkr_mono.mult;
		raw_mult = tk->tkr_raw.mult;
		xts_history(&history, &ts, XTS_RAW_SPAN, XTS_REAL_SPAN + XTS_STEP);
		ret = adjust_historical_crosststamp(&history, p->partial, XTS_TOTAL, true, &ts);
	} while (read_seqcount_retry(&tk_core.seq, seq));

	KUNIT_ASSERT_EQ(test, ret, 0);
	corr_raw = XTS_RAW_SPAN / XTS_TOTAL * (backward ? p->partial : XTS_TOTAL - p->partial);
	real = mul_u64_u32_div(corr_raw, mono_mult, raw_mult);
	if (backward)
		real = XTS_REAL_SPAN + XTS_STEP - real;
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - XTS_HIST_RAW,
			XTS_RAW_SPAN - XTS_RAW_SPAN / XTS_TOTAL * (s64)p->partial);
	KUNIT_EXPECT_EQ_MSG(test, ktime_to_ns(ts.sys_realtime) - XTS_HIST_REAL, real,
			    "mult(real) %u, mult(raw) %u", mono_mult, raw_mult);
}

/*
 * scale64_check_overflow() refuses span * partial / total when the bits
 * of partial and of the span's remainder modulo total add up to more than
 * 64, a check on the safe side of a real overflow. With total = 2^33 and
 * partial = 2^32 (the most a backward interpolation takes) a span below
 * 2^31 ns passes, 2^31 ns does not.
 */
struct xts_overflow_param {
	const char *desc;
	s64 raw_span;
	s64 real_span;
	int ret;
	s64 raw;
	s64 real;
};

/* Passed, the value is half way: half of each span back from its end. */
static const struct xts_overflow_param xts_overflow_params[] = {
	{ "raw span just passes", (1LL << 31) - 1, 1000, 0, 1LL << 30, 500 },
	{ "raw span refused", 1LL << 31, 1000, -EOVERFLOW, 1LL << 31, 1000 },
	{ "realtime span refused", 1000, 1LL << 31, -EOVERFLOW, 1000, 1LL << 31 },
};

KUNIT_ARRAY_PARAM_DESC(xts_overflow, xts_overflow_params, desc);

static void adjust_historical_crosststamp_overflow(struct kunit *test)
{
	const struct xts_overflow_param *p = test->param_value;
	struct system_device_crosststamp ts;
	struct system_time_snapshot history;

	xts_history(&history, &ts, p->raw_span, p->real_span);
	KUNIT_EXPECT_EQ(test, adjust_historical_crosststamp(&history, 1ULL << 32, 1ULL << 33,
							    false, &ts), p->ret);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - XTS_HIST_RAW, p->raw);
	KUNIT_EXPECT_EQ_MSG(test, ktime_to_ns(ts.sys_realtime) - XTS_HIST_REAL, p->real,
			    "a refused timestamp must be left as it was");
}

static struct kunit_case timekeeping_crosststamp_interp_cases[] = {
	KUNIT_CASE_PARAM(timestamp_in_interval_bounds, xts_interval_gen_params),
	KUNIT_CASE_PARAM(adjust_historical_crosststamp_linear, xts_adjust_gen_params),
	KUNIT_CASE_PARAM(adjust_historical_crosststamp_clock_set, xts_clock_set_gen_params),
	KUNIT_CASE_PARAM(adjust_historical_crosststamp_overflow, xts_overflow_gen_params),
	{}
};

static struct kunit_suite timekeeping_crosststamp_interp_suite = {
	.name = "timekeeping_crosststamp_interp",
	.test_cases = timekeeping_crosststamp_interp_cases,
};

kunit_test_suite(timekeeping_crosststamp_interp_suite);
#ifdef CPUHP_KUNIT_PART_clock

/* get_device_system_crosststamp() on the current clocksource */

/* How long a case waits for timekeeping to start a new update interval. */
#define XTS_UPDATE_TIMEOUT	(10 * HZ)

/*
 * The longest history a case interpolates across: well inside what
 * scale64_check_overflow() passes for a counter of a few GHz (about 3 s).
 */
#define XTS_HISTORY_MAX_NS	(100 * NSEC_PER_MSEC)

/* How often a case starts again when the timekeeper moved under it. */
#define XTS_ATTEMPTS		5

enum xts_counter {
	XTS_COUNTER_NONE,	/* no clocksource */
	XTS_COUNTER_OTHER,	/* a clocksource that is not the current one */
	XTS_COUNTER_NOW,	/* the current clocksource, read in the callback */
	XTS_COUNTER_VALUE,	/* the current clocksource, @cycles */
};

struct xts_dev {
	enum xts_counter counter;
	u64 cycles;
};

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
/* Before 6.10 a counter value names its clocksource by pointer. */
static struct clocksource xts_not_registered = { .name = "not registered" };

static bool xts_tag(struct system_counterval_t *counter, enum xts_counter which,
		    struct clocksource *cs)
{
	counter->cs = which == XTS_COUNTER_NONE ? NULL :
		      which == XTS_COUNTER_OTHER ? &xts_not_registered : cs;
	return true;
}
#else
/*
 * Names @which clocksource in @counter, the current one being @cs; false
 * when @cs has no ID to name it by, or there is no other ID: one that is
 * neither @cs's nor its base clock's.
 */
static bool xts_tag(struct system_counterval_t *counter, enum xts_counter which,
		    struct clocksource *cs)
{
	struct clocksource_base *base = READ_ONCE(cs->base);
	enum clocksource_ids id = CSID_GENERIC;

	if (which == XTS_COUNTER_OTHER) {
		for (id = CSID_GENERIC + 1; id < CSID_MAX; id++)
			if (id != cs->id && (!base || id != base->id))
				break;
		if (id == CSID_MAX)
			return false;
	} else if (which != XTS_COUNTER_NONE) {
		id = cs->id;
	}
	counter->cs_id = id;
	counter->use_nsecs = false;
	return which == XTS_COUNTER_NONE || id != CSID_GENERIC;
}
#endif

/* The fake device's get_time_fn(), called inside the timekeeper's read section */
static int xts_dev_get_time(ktime_t *device_time, struct system_counterval_t *counter,
			    void *ctx)
{
	struct tk_read_base *tkr = &tk_core.timekeeper.tkr_mono;
	struct xts_dev *dev = ctx;

	*device_time = ns_to_ktime(XTS_DEVICE_TIME);
	if (!xts_tag(counter, dev->counter, tkr->clock))
		return -ENOENT;
	counter->cycles = dev->counter == XTS_COUNTER_NOW ? tk_clock_read(tkr) : dev->cycles;
	return 0;
}

static int xts_crosststamp(struct xts_dev *dev, struct system_time_snapshot *history,
			   struct system_device_crosststamp *xt)
{
	xt->device = KTIME_MIN;
	xt->sys_realtime = KTIME_MIN;
	xt->sys_monoraw = KTIME_MIN;
	return get_device_system_crosststamp(xts_dev_get_time, dev, history, xt);
}

/* What a case must see unchanged: the clocksource, the clock sets, the interval. */
struct xts_state {
	u8 cs_was_changed_seq;
	unsigned int clock_was_set_seq;
	u64 interval_start;
	u64 mask;
	bool named;		/* a counter value can name the clocksource */
	const char *name;
};

static void xts_state(struct xts_state *st)
{
	struct timekeeper *tk = &tk_core.timekeeper;
	struct system_counterval_t counter;
	unsigned int seq;

	do {
		seq = read_seqcount_begin(&tk_core.seq);
		st->cs_was_changed_seq = tk->cs_was_changed_seq;
		st->clock_was_set_seq = tk->clock_was_set_seq;
		st->mask = tk->tkr_mono.mask;
		st->interval_start = tk->tkr_mono.cycle_last & st->mask;
		st->named = xts_tag(&counter, XTS_COUNTER_NOW, tk->tkr_mono.clock);
		st->name = tk->tkr_mono.clock->name;
	} while (read_seqcount_retry(&tk_core.seq, seq));
}

/* Whether the clocksource changed or the clock was set between @a and @b. */
static bool xts_moved(const struct xts_state *a, const struct xts_state *b)
{
	return a->cs_was_changed_seq != b->cs_was_changed_seq ||
	       a->clock_was_set_seq != b->clock_was_set_seq;
}

/* Skips @test when no counter value can name the current clocksource. */
static void xts_need_clock_id(struct kunit *test, const struct xts_state *st)
{
	if (!st->named)
		kunit_skip(test, "clocksource %s has no ID: no driver can cross-timestamp with it",
			   st->name);
}

static void crosststamp_no_clocksource(struct kunit *test)
{
	struct xts_dev dev = { .counter = XTS_COUNTER_NONE };
	struct system_device_crosststamp xt;

	KUNIT_EXPECT_EQ(test, xts_crosststamp(&dev, NULL, &xt), -ENODEV);
}

static void crosststamp_other_clocksource(struct kunit *test)
{
	struct xts_dev dev = { .counter = XTS_COUNTER_OTHER };
	struct system_device_crosststamp xt;
	int ret;

	ret = xts_crosststamp(&dev, NULL, &xt);
	if (ret == -ENOENT)
		kunit_skip(test, "no clocksource ID but the current clocksource's and its base's");
	KUNIT_EXPECT_EQ(test, ret, -ENODEV);
}

static void crosststamp_in_current_interval(struct kunit *test)
{
	struct xts_dev dev = { .counter = XTS_COUNTER_NOW };
	struct system_device_crosststamp xt;
	struct xts_state st[2];
	ktime_t raw[2], real[2];
	int attempt, ret = 0;

	for (attempt = 0; attempt < XTS_ATTEMPTS; attempt++) {
		xts_state(&st[0]);
		xts_need_clock_id(test, &st[0]);
		raw[0] = ktime_get_raw();
		real[0] = ktime_get_real();
		ret = xts_crosststamp(&dev, NULL, &xt);
		raw[1] = ktime_get_raw();
		real[1] = ktime_get_real();
		xts_state(&st[1]);
		if (!xts_moved(&st[0], &st[1]))
			break;
	}
	if (attempt == XTS_ATTEMPTS)
		kunit_skip(test, "the clocksource changed or the clock was set %d times in a row",
			   XTS_ATTEMPTS);

	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(xt.device), XTS_DEVICE_TIME);
	KUNIT_EXPECT_LE(test, raw[0], xt.sys_monoraw);
	KUNIT_EXPECT_LE(test, xt.sys_monoraw, raw[1]);
	KUNIT_EXPECT_LE(test, real[0], xt.sys_realtime);
	KUNIT_EXPECT_LE(test, xt.sys_realtime, real[1]);
}

/*
 * Waits until the current update interval starts after @cycles, a value of
 * the clocksource @st describes read before; returns how far after, 0 after
 * XTS_UPDATE_TIMEOUT or when the clocksource changed or the clock was set.
 */
static u64 xts_wait_past(u64 cycles, const struct xts_state *st)
{
	unsigned long timeout = jiffies + XTS_UPDATE_TIMEOUT;
	struct xts_state now;
	u64 ahead;

	do {
		xts_state(&now);
		if (xts_moved(st, &now))
			return 0;
		ahead = (now.interval_start - cycles) & st->mask;
		if (ahead && ahead < st->mask / 2)
			return ahead;
		/* timekeeping starts an interval on a tick: wait for one */
		schedule_timeout_uninterruptible(1);
	} while (time_before(jiffies, timeout));
	return 0;
}

/*
 * A value half way between a history and the start of a later update
 * interval, with a snapshot @after taken in that interval; false when the
 * clocksource changed or the clock was set meanwhile, the interval did not
 * begin in time, or the history got too long to interpolate.
 */
static bool xts_value_before_interval(struct kunit *test, struct xts_dev *dev,
				      struct system_time_snapshot *history,
				      struct system_time_snapshot *after,
				      struct xts_state *st)
{
	u64 ahead;

	xts_state(st);
	xts_need_clock_id(test, st);
	ktime_get_snapshot(history);
	ahead = xts_wait_past(history->cycles, st);
	if (!ahead)
		return false;
	ktime_get_snapshot(after);
	dev->counter = XTS_COUNTER_VALUE;
	dev->cycles = (history->cycles + ahead / 2) & st->mask;
	return ktime_to_ns(ktime_sub(after->raw, history->raw)) < XTS_HISTORY_MAX_NS;
}

/* Monotonic raw of counter value @cycles, linear between @a and @b. */
static s64 xts_raw_between(const struct system_time_snapshot *a,
			   const struct system_time_snapshot *b, u64 cycles, u64 mask)
{
	u64 span = ktime_to_ns(ktime_sub(b->raw, a->raw));

	return ktime_to_ns(a->raw) +
	       mul_u64_u64_div_u64(span, (cycles - a->cycles) & mask,
				   (b->cycles - a->cycles) & mask);
}

/* Rounding of the snapshots and of the interpolation, in ns. */
#define XTS_RAW_SLACK		10

static void crosststamp_before_current_interval(struct kunit *test)
{
	struct system_time_snapshot history, after, changed;
	struct system_device_crosststamp xt, ignored;
	int attempt, ret = 0, refused[3] = {};
	struct xts_state st[2];
	struct xts_dev dev, before;

	for (attempt = 0; attempt < XTS_ATTEMPTS; attempt++) {
		if (!xts_value_before_interval(test, &dev, &history, &after, &st[0]))
			continue;
		ret = xts_crosststamp(&dev, &history, &xt);
		refused[0] = xts_crosststamp(&dev, NULL, &ignored);
		changed = history;
		changed.cs_was_changed_seq++;
		refused[1] = xts_crosststamp(&dev, &changed, &ignored);
		before = dev;
		before.cycles = (history.cycles - 1) & st[0].mask;
		refused[2] = xts_crosststamp(&before, &history, &ignored);
		xts_state(&st[1]);
		if (!xts_moved(&st[0], &st[1]))
			break;
	}
	if (attempt == XTS_ATTEMPTS)
		kunit_skip(test,
			   "%d attempts: no new interval within %d jiffies, or the clocksource changed or the clock was set",
			   XTS_ATTEMPTS, XTS_UPDATE_TIMEOUT);

	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(xt.device), XTS_DEVICE_TIME);
	KUNIT_EXPECT_LE_MSG(test,
			    abs(ktime_to_ns(xt.sys_monoraw) -
				xts_raw_between(&history, &after, dev.cycles, st[0].mask)),
			    XTS_RAW_SLACK, "monoraw %lld ns, %lld ns after the history",
			    ktime_to_ns(xt.sys_monoraw),
			    ktime_to_ns(ktime_sub(xt.sys_monoraw, history.raw)));
	KUNIT_EXPECT_LE(test, history.real, xt.sys_realtime);
	KUNIT_EXPECT_LT(test, xt.sys_realtime, after.real);

	KUNIT_EXPECT_EQ_MSG(test, refused[0], -EINVAL,
			    "a value before the interval needs a history");
	KUNIT_EXPECT_EQ_MSG(test, refused[1], -EINVAL,
			    "a history from before a clocksource change cannot interpolate");
	KUNIT_EXPECT_EQ_MSG(test, refused[2], -EINVAL,
			    "a history that begins after the value cannot interpolate it");
}

/*
 * A history that begins in the current interval, after the value: the
 * interval [history, interval start] has its start above its end, as one
 * across a wrap of the counter would.
 */
static void crosststamp_history_in_current_interval(struct kunit *test)
{
	struct system_time_snapshot history, after;
	struct system_device_crosststamp xt;
	struct xts_state st[2];
	struct xts_dev dev;
	int attempt, ret = 0;
	u64 in;

	for (attempt = 0; attempt < XTS_ATTEMPTS; attempt++) {
		if (!xts_value_before_interval(test, &dev, &history, &after, &st[0]))
			continue;
		/* the interval @after was taken in must still be the current one */
		xts_state(&st[0]);
		in = (after.cycles - st[0].interval_start) & st[0].mask;
		if (!in || in >= st[0].mask / 2)
			continue;
		ret = xts_crosststamp(&dev, &after, &xt);
		xts_state(&st[1]);
		if (after.cs_was_changed_seq == st[1].cs_was_changed_seq &&
		    after.clock_was_set_seq == st[1].clock_was_set_seq &&
		    st[0].interval_start == st[1].interval_start)
			break;
	}
	if (attempt == XTS_ATTEMPTS)
		kunit_skip(test, "timekeeping moved on under every one of %d attempts",
			   XTS_ATTEMPTS);

	KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL,
			    "a history that begins in the current interval, after the value, cannot interpolate it (where 0 came back: monoraw %+lld ns from the interpolation against the history before the value)",
			    ret ? 0 : ktime_to_ns(xt.sys_monoraw) -
				      xts_raw_between(&history, &after, dev.cycles, st[0].mask));
}

static struct kunit_case timekeeping_crosststamp_clock_cases[] = {
	KUNIT_CASE(crosststamp_no_clocksource),
	KUNIT_CASE(crosststamp_other_clocksource),
	KUNIT_CASE(crosststamp_in_current_interval),
	KUNIT_CASE(crosststamp_before_current_interval),
	KUNIT_CASE(crosststamp_history_in_current_interval),
	{}
};

static struct kunit_suite timekeeping_crosststamp_clock_suite = {
	.name = "timekeeping_crosststamp_clock",
	.test_cases = timekeeping_crosststamp_clock_cases,
};

kunit_test_suite(timekeeping_crosststamp_clock_suite);
#endif
