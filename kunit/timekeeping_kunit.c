// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the cross-timestamp in kernel/time/timekeeping.c
 *
 * This file is included at the end of timekeeping.c when
 * CONFIG_TIMEKEEPING_KUNIT_TEST is set, so that the tests can call its
 * static helpers and read the timekeeper.
 *
 * timekeeping_crosststamp_interp: the arithmetic of
 * get_device_system_crosststamp(), on constructed inputs:
 *
 *  - timestamp_in_interval() takes both ends of [start, end], on a 64-bit
 *    counter and across the wrap of a narrower one;
 *  - adjust_historical_crosststamp() interpolates linearly between the
 *    history and the start of the current interval, from whichever end is
 *    closer, truncating towards that end; after a clock set inside the
 *    history (a discontinuity) realtime follows the raw correction scaled
 *    by mult(real) / mult(raw); a scaling whose product would not fit in
 *    64 bits is refused with -EOVERFLOW and leaves the timestamp as it was.
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
 *    with -EINVAL without a history or with one taken after it.
 *
#endif
 * Nothing here registers a clocksource, sets the clock or leaves state
 * behind.
 */

#include <kunit/test.h>
#include <linux/version.h>

/* timestamp_in_interval() */

struct tk_interval_param {
	const char *desc;
	u64 start;
	u64 end;
	u64 ts;
	bool in;
};

static const struct tk_interval_param tk_interval_params[] = {
	{ "inside", 100, 200, 150, true },
	{ "at the start", 100, 200, 100, true },
	{ "at the end", 100, 200, 200, true },
	{ "before the start", 100, 200, 99, false },
	{ "after the end", 100, 200, 201, false },
	{ "empty interval", 100, 100, 100, true },
	{ "beside an empty interval", 100, 100, 101, false },
	{ "64-bit wrap, before it", U64_MAX - 10, 10, U64_MAX, true },
	{ "64-bit wrap, after it", U64_MAX - 10, 10, 0, true },
	{ "64-bit wrap, at the start", U64_MAX - 10, 10, U64_MAX - 10, true },
	{ "64-bit wrap, at the end", U64_MAX - 10, 10, 10, true },
	{ "64-bit wrap, before the start", U64_MAX - 10, 10, U64_MAX - 11, false },
	{ "64-bit wrap, after the end", U64_MAX - 10, 10, 11, false },
	{ "32-bit wrap, before it", 0xfffffff0, 0x10, 0xffffffff, true },
	{ "32-bit wrap, after it", 0xfffffff0, 0x10, 0x0, true },
	{ "32-bit wrap, between", 0xfffffff0, 0x10, 0x80000000, false },
};

static void tk_interval_desc(const struct tk_interval_param *p, char *desc)
{
	strscpy(desc, p->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tk_interval, tk_interval_params, tk_interval_desc);

static void crosststamp_in_interval(struct kunit *test)
{
	const struct tk_interval_param *p = test->param_value;

	KUNIT_EXPECT_EQ_MSG(test, timestamp_in_interval(p->start, p->end, p->ts), p->in,
			    "%llu in [%llu, %llu]", p->ts, p->start, p->end);
}

/* adjust_historical_crosststamp() */

/*
 * The history begins at these times; the current interval starts
 * TK_TOTAL counts later, TK_RAW_SPAN ns of monotonic raw and
 * TK_REAL_SPAN ns of realtime later. The two spans differ, so a mix-up of
 * the clocks shows.
 */
#define TK_HIST_RAW	1000000000LL
#define TK_HIST_REAL	1700000000000000000LL
#define TK_TOTAL	1000
#define TK_RAW_SPAN	1000000
#define TK_REAL_SPAN	2000000

static void tk_history(struct system_time_snapshot *history,
		       struct system_device_crosststamp *ts, s64 raw_span, s64 real_span)
{
	memset(history, 0, sizeof(*history));
	history->raw = ns_to_ktime(TK_HIST_RAW);
	history->real = ns_to_ktime(TK_HIST_REAL);
	memset(ts, 0, sizeof(*ts));
	ts->device = ns_to_ktime(4711);
	ts->sys_monoraw = ns_to_ktime(TK_HIST_RAW + raw_span);
	ts->sys_realtime = ns_to_ktime(TK_HIST_REAL + real_span);
}

struct tk_adjust_param {
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
 * truncated.
 */
static const struct tk_adjust_param tk_adjust_params[] = {
	{ "at the interval start", 0, TK_TOTAL, TK_RAW_SPAN, TK_REAL_SPAN },
	{ "no history", 1, 0, TK_RAW_SPAN, TK_REAL_SPAN },
	{ "1 count before the interval", 1, TK_TOTAL, 999000, 1998000 },
	{ "a quarter from the interval", 250, TK_TOTAL, 750000, 1500000 },
	{ "half way", 500, TK_TOTAL, 500000, 1000000 },
	{ "just past half way", 501, TK_TOTAL, 499000, 998000 },
	{ "a quarter from the history", 750, TK_TOTAL, 250000, 500000 },
	{ "1 count after the history", 999, TK_TOTAL, 1000, 2000 },
	{ "at the history", TK_TOTAL, TK_TOTAL, 0, 0 },
	/* 1e6 / 3 = 333333.3: 333333 from the interval start back */
	{ "a third, truncated", 1, 3, 666667, 1333334 },
	/* and 333333 from the history on */
	{ "two thirds, truncated", 2, 3, 333333, 666666 },
};

static void tk_adjust_desc(const struct tk_adjust_param *p, char *desc)
{
	strscpy(desc, p->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tk_adjust, tk_adjust_params, tk_adjust_desc);

static void crosststamp_interpolation(struct kunit *test)
{
	const struct tk_adjust_param *p = test->param_value;
	struct system_device_crosststamp ts;
	struct system_time_snapshot history;

	tk_history(&history, &ts, TK_RAW_SPAN, TK_REAL_SPAN);
	KUNIT_ASSERT_EQ(test, adjust_historical_crosststamp(&history, p->partial, p->total,
							    false, &ts), 0);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - TK_HIST_RAW, p->raw);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_realtime) - TK_HIST_REAL, p->real);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.device), 4711);
}

/*
 * A clock set inside the history: realtime is not interpolated across the
 * step (TK_STEP here), the raw correction is scaled to it instead.
 */
#define TK_STEP		(3600LL * NSEC_PER_SEC)

static const u64 tk_discontinuity_partials[] = { 250, 750 };

static void tk_discontinuity_desc(const u64 *partial, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%llu of %d counts before the interval",
		 *partial, TK_TOTAL);
}

KUNIT_ARRAY_PARAM(tk_discontinuity, tk_discontinuity_partials, tk_discontinuity_desc);

static void crosststamp_interpolation_clock_set(struct kunit *test)
{
	const u64 *partial = test->param_value;
	struct timekeeper *tk = &tk_core.timekeeper;
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
		tk_history(&history, &ts, TK_RAW_SPAN, TK_REAL_SPAN + TK_STEP);
		ret = adjust_historical_crosststamp(&history, *partial, TK_TOTAL, true, &ts);
	} while (read_seqcount_retry(&tk_core.seq, seq));

	KUNIT_ASSERT_EQ(test, ret, 0);
	corr_raw = *partial <= TK_TOTAL / 2 ? TK_RAW_SPAN / TK_TOTAL * *partial :
		   TK_RAW_SPAN / TK_TOTAL * (TK_TOTAL - *partial);
	real = mul_u64_u32_div(corr_raw, mono_mult, raw_mult);
	if (*partial <= TK_TOTAL / 2)
		real = TK_REAL_SPAN + TK_STEP - real;
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - TK_HIST_RAW,
			TK_RAW_SPAN - TK_RAW_SPAN / TK_TOTAL * *partial);
	KUNIT_EXPECT_EQ_MSG(test, ktime_to_ns(ts.sys_realtime) - TK_HIST_REAL, real,
			    "mult(real) %u, mult(raw) %u", mono_mult, raw_mult);
}

/*
 * The correction is span * partial / total, computed as
 * (span / total) * partial + (span % total) * partial / total; each
 * product must fit in 64 bits. With total = 2^33 and partial = 2^32
 * (the most a backward interpolation takes) a span below 2^31 ns fits,
 * 2^31 ns does not.
 */
struct tk_overflow_param {
	const char *desc;
	s64 raw_span;
	s64 real_span;
	int ret;
	s64 raw;
};

static const struct tk_overflow_param tk_overflow_params[] = {
	{ "raw span just fits", (1LL << 31) - 1, 1000, 0, (1LL << 31) - 1 - ((1LL << 30) - 1) },
	{ "raw span too long", 1LL << 31, 1000, -EOVERFLOW, 1LL << 31 },
	{ "realtime span too long", 1000, 1LL << 31, -EOVERFLOW, 1000 },
};

static void tk_overflow_desc(const struct tk_overflow_param *p, char *desc)
{
	strscpy(desc, p->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tk_overflow, tk_overflow_params, tk_overflow_desc);

static void crosststamp_interpolation_overflow(struct kunit *test)
{
	const struct tk_overflow_param *p = test->param_value;
	struct system_device_crosststamp ts;
	struct system_time_snapshot history;

	tk_history(&history, &ts, p->raw_span, p->real_span);
	KUNIT_EXPECT_EQ(test, adjust_historical_crosststamp(&history, 1ULL << 32, 1ULL << 33,
							    false, &ts), p->ret);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(ts.sys_monoraw) - TK_HIST_RAW, p->raw);
	if (p->ret)
		KUNIT_EXPECT_EQ_MSG(test, ktime_to_ns(ts.sys_realtime) - TK_HIST_REAL,
				    p->real_span, "a refused timestamp must be left as it was");
}

static struct kunit_case timekeeping_crosststamp_interp_cases[] = {
	KUNIT_CASE_PARAM(crosststamp_in_interval, tk_interval_gen_params),
	KUNIT_CASE_PARAM(crosststamp_interpolation, tk_adjust_gen_params),
	KUNIT_CASE_PARAM(crosststamp_interpolation_clock_set, tk_discontinuity_gen_params),
	KUNIT_CASE_PARAM(crosststamp_interpolation_overflow, tk_overflow_gen_params),
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
#define TK_UPDATE_TIMEOUT	(10 * HZ)

/* Device time the fake device reports; it is passed through. */
#define TK_DEVICE_TIME		4711

enum tk_counter {
	TK_COUNTER_NONE,	/* no clocksource */
	TK_COUNTER_OTHER,	/* a clocksource that is not the current one */
	TK_COUNTER_NOW,		/* the current clocksource, read in the callback */
	TK_COUNTER_VALUE,	/* the current clocksource, @cycles */
};

struct tk_dev {
	enum tk_counter counter;
	u64 cycles;
};

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
/* Before 6.10 a counter value names its clocksource by pointer. */
static struct clocksource tk_not_registered = { .name = "not registered" };

static bool tk_tag(struct system_counterval_t *counter, enum tk_counter which,
		   struct clocksource *cs)
{
	counter->cs = which == TK_COUNTER_NONE ? NULL :
		      which == TK_COUNTER_OTHER ? &tk_not_registered : cs;
	return true;
}
#else
/*
 * Names @which clocksource in @counter, the current one being @cs; false
 * when none can be named: @cs has no ID, or there is no other ID.
 */
static bool tk_tag(struct system_counterval_t *counter, enum tk_counter which,
		   struct clocksource *cs)
{
	struct clocksource_base *base = READ_ONCE(cs->base);
	enum clocksource_ids id = CSID_GENERIC;

	if (which == TK_COUNTER_OTHER) {
		for (id = CSID_GENERIC + 1; id < CSID_MAX; id++)
			if (id != cs->id && (!base || id != base->id))
				break;
	} else if (which != TK_COUNTER_NONE) {
		id = cs->id;
	}
	counter->cs_id = id;
	counter->use_nsecs = false;
	return which == TK_COUNTER_NONE || (id != CSID_GENERIC && id != CSID_MAX);
}
#endif

/* The fake device's get_time_fn(), called inside the timekeeper's read section */
static int tk_dev_get_time(ktime_t *device_time, struct system_counterval_t *counter,
			   void *ctx)
{
	struct tk_read_base *tkr = &tk_core.timekeeper.tkr_mono;
	struct tk_dev *dev = ctx;

	*device_time = ns_to_ktime(TK_DEVICE_TIME);
	if (!tk_tag(counter, dev->counter, tkr->clock))
		return -ENOENT;
	counter->cycles = dev->counter == TK_COUNTER_NOW ? tk_clock_read(tkr) : dev->cycles;
	return 0;
}

static int tk_crosststamp(struct tk_dev *dev, struct system_time_snapshot *history,
			  struct system_device_crosststamp *xt)
{
	xt->device = KTIME_MIN;
	xt->sys_realtime = KTIME_MIN;
	xt->sys_monoraw = KTIME_MIN;
	return get_device_system_crosststamp(tk_dev_get_time, dev, history, xt);
}

/* Skips @test when no counter value can name the current clocksource. */
static void tk_need_clock_id(struct kunit *test)
{
	struct system_counterval_t counter;
	struct clocksource *cs;
	unsigned int seq;
	bool named;

	do {
		seq = read_seqcount_begin(&tk_core.seq);
		cs = tk_core.timekeeper.tkr_mono.clock;
		named = tk_tag(&counter, TK_COUNTER_NOW, cs);
	} while (read_seqcount_retry(&tk_core.seq, seq));
	if (!named)
		kunit_skip(test, "clocksource %s has no ID: no driver can cross-timestamp with it",
			   cs->name);
}

static void crosststamp_no_clocksource(struct kunit *test)
{
	struct tk_dev dev = { .counter = TK_COUNTER_NONE };
	struct system_device_crosststamp xt;

	KUNIT_EXPECT_EQ(test, tk_crosststamp(&dev, NULL, &xt), -ENODEV);
}

static void crosststamp_other_clocksource(struct kunit *test)
{
	struct tk_dev dev = { .counter = TK_COUNTER_OTHER };
	struct system_device_crosststamp xt;
	int ret;

	ret = tk_crosststamp(&dev, NULL, &xt);
	if (ret == -ENOENT)
		kunit_skip(test, "every clocksource ID is the current clocksource's or its base's");
	KUNIT_EXPECT_EQ(test, ret, -ENODEV);
}

static void crosststamp_in_current_interval(struct kunit *test)
{
	struct tk_dev dev = { .counter = TK_COUNTER_NOW };
	struct system_device_crosststamp xt;
	ktime_t raw[2], real[2];

	tk_need_clock_id(test);
	raw[0] = ktime_get_raw();
	real[0] = ktime_get_real();
	KUNIT_ASSERT_EQ(test, tk_crosststamp(&dev, NULL, &xt), 0);
	raw[1] = ktime_get_raw();
	real[1] = ktime_get_real();

	KUNIT_EXPECT_EQ(test, ktime_to_ns(xt.device), TK_DEVICE_TIME);
	KUNIT_EXPECT_LE(test, raw[0], xt.sys_monoraw);
	KUNIT_EXPECT_LE(test, xt.sys_monoraw, raw[1]);
	KUNIT_EXPECT_LE(test, real[0], xt.sys_realtime);
	KUNIT_EXPECT_LE(test, xt.sys_realtime, real[1]);
}

/* The start of the current update interval. */
static u64 tk_interval_start(void)
{
	unsigned int seq;
	u64 start;

	do {
		seq = read_seqcount_begin(&tk_core.seq);
		start = tk_core.timekeeper.tkr_mono.cycle_last & tk_core.timekeeper.tkr_mono.mask;
	} while (read_seqcount_retry(&tk_core.seq, seq));
	return start;
}

/*
 * Waits until the current update interval starts after @cycles, a value of
 * the current clocksource read before; returns how far after, 0 after
 * TK_UPDATE_TIMEOUT or when the clocksource changed.
 */
static u64 tk_wait_past(u64 cycles, u8 cs_was_changed_seq)
{
	unsigned long timeout = jiffies + TK_UPDATE_TIMEOUT;
	u64 mask = tk_core.timekeeper.tkr_mono.mask;
	u64 ahead;

	do {
		if (READ_ONCE(tk_core.timekeeper.cs_was_changed_seq) != cs_was_changed_seq)
			return 0;
		ahead = (tk_interval_start() - cycles) & mask;
		if (ahead && ahead < mask / 2)
			return ahead;
		/* timekeeping starts an interval on a tick: wait for one */
		schedule_timeout_uninterruptible(1);
	} while (time_before(jiffies, timeout));
	return 0;
}

static void crosststamp_before_current_interval(struct kunit *test)
{
	struct tk_dev dev = { .counter = TK_COUNTER_VALUE };
	struct system_time_snapshot history, after;
	struct system_device_crosststamp xt;
	ktime_t good;
	u64 ahead;
	int ret;

	tk_need_clock_id(test);
	ktime_get_snapshot(&history);
	ahead = tk_wait_past(history.cycles, history.cs_was_changed_seq);
	KUNIT_ASSERT_NE_MSG(test, ahead, 0,
			    "no new update interval within %d jiffies, or the clocksource changed",
			    TK_UPDATE_TIMEOUT);
	ktime_get_snapshot(&after);
	/* half way from the history to the interval start */
	dev.cycles = (history.cycles + ahead / 2) & tk_core.timekeeper.tkr_mono.mask;

	KUNIT_EXPECT_EQ_MSG(test, tk_crosststamp(&dev, NULL, &xt), -EINVAL,
			    "a value before the interval needs a history");
	KUNIT_ASSERT_EQ(test, tk_crosststamp(&dev, &history, &xt), 0);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(xt.device), TK_DEVICE_TIME);
	KUNIT_EXPECT_LE(test, history.raw, xt.sys_monoraw);
	KUNIT_EXPECT_LT(test, xt.sys_monoraw, after.raw);
	KUNIT_EXPECT_LE(test, history.real, xt.sys_realtime);
	KUNIT_EXPECT_LT(test, xt.sys_realtime, after.real);

	good = xt.sys_monoraw;
	ret = tk_crosststamp(&dev, &after, &xt);
	KUNIT_EXPECT_EQ_MSG(test, ret, -EINVAL,
			    "a history that begins after the value (and after the interval start) cannot interpolate it: got monoraw %lld ns, %lld ns from the interpolation against a history before it",
			    ktime_to_ns(xt.sys_monoraw),
			    ktime_to_ns(ktime_sub(xt.sys_monoraw, good)));
}

static struct kunit_case timekeeping_crosststamp_clock_cases[] = {
	KUNIT_CASE(crosststamp_no_clocksource),
	KUNIT_CASE(crosststamp_other_clocksource),
	KUNIT_CASE(crosststamp_in_current_interval),
	KUNIT_CASE(crosststamp_before_current_interval),
	{}
};

static struct kunit_suite timekeeping_crosststamp_clock_suite = {
	.name = "timekeeping_crosststamp_clock",
	.test_cases = timekeeping_crosststamp_clock_cases,
};

kunit_test_suite(timekeeping_crosststamp_clock_suite);
#endif
