/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the cpuhp and crosststamp suites use of KUnit that an older kernel's
 * KUnit lacks, written on what it has: Debian 12's 6.1 has no deferred
 * actions (kunit_add_action_or_reset(), kunit_release_action(),
 * KUNIT_DEFINE_ACTION_WRAPPER()), no KUNIT_ARRAY_PARAM_DESC(), no
 * KUNIT_EXPECT_MEMEQ() and no KUNIT_CASE_SLOW(). On a kernel that has them
 * this header adds nothing. One copy for every suite and every kernel; the
 * macros do what 6.12's do.
 */
#ifndef _CPUHP_KUNIT_COMPAT_H
#define _CPUHP_KUNIT_COMPAT_H

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/slab.h>
#include <linux/string.h>

#ifndef KUNIT_CASE_SLOW
/* No test attributes: a slow case is a case. */
#define KUNIT_CASE_SLOW(test_name) KUNIT_CASE(test_name)
#endif

#ifndef KUNIT_ARRAY_PARAM_DESC
#define KUNIT_ARRAY_PARAM_DESC(name, array, desc_member)				\
	static const void *name##_gen_params(const void *prev, char *desc)		\
	{										\
		typeof(&(array)[0]) __next;						\
											\
		__next = prev ? (typeof(__next))prev + 1 : &(array)[0];			\
		if (__next - (array) < ARRAY_SIZE((array))) {				\
			strscpy(desc, __next->desc_member, KUNIT_PARAM_DESC_SIZE);	\
			return __next;							\
		}									\
		return NULL;								\
	}
#endif

#ifndef KUNIT_EXPECT_MEMEQ
#define KUNIT_EXPECT_MEMEQ(test, left, right, size)					\
	KUNIT_EXPECT_EQ_MSG(test, memcmp(left, right, size), 0,			\
			    "%s and %s differ", #left, #right)
#endif

#ifndef KUNIT_DEFINE_ACTION_WRAPPER
/*
 * Deferred actions (6.5; KUNIT_DEFINE_ACTION_WRAPPER() came with 6.8, the
 * test for all of them: 6.5 to 6.7 are not supported) as test-managed
 * resources: the action runs when the resource is freed, at the end of the
 * test case or on release.
 */
typedef void (kunit_action_t)(void *);

struct cpuhp_kunit_action {
	kunit_action_t *fn;
	void *data;
};

static inline int cpuhp_kunit_action_init(struct kunit_resource *res, void *context)
{
	res->data = kmemdup(context, sizeof(struct cpuhp_kunit_action), GFP_KERNEL);
	return res->data ? 0 : -ENOMEM;
}

static inline void cpuhp_kunit_action_free(struct kunit_resource *res)
{
	struct cpuhp_kunit_action *action = res->data;

	action->fn(action->data);
	kfree(action);
}

static inline int kunit_add_action_or_reset(struct kunit *test, kunit_action_t *fn, void *data)
{
	struct cpuhp_kunit_action action = { .fn = fn, .data = data };

	if (kunit_alloc_resource(test, cpuhp_kunit_action_init, cpuhp_kunit_action_free,
				 GFP_KERNEL, &action))
		return 0;
	fn(data);
	return -ENOMEM;
}

/* Only actions added from the same file: the free function is file-local. */
static inline bool cpuhp_kunit_action_match(struct kunit *test, struct kunit_resource *res,
					    void *match_data)
{
	struct cpuhp_kunit_action *want = match_data, *action = res->data;

	return res->free == cpuhp_kunit_action_free && action->fn == want->fn &&
	       action->data == want->data;
}

static inline void kunit_release_action(struct kunit *test, kunit_action_t *fn, void *data)
{
	struct cpuhp_kunit_action action = { .fn = fn, .data = data };

	kunit_destroy_resource(test, cpuhp_kunit_action_match, &action);
}

#define KUNIT_DEFINE_ACTION_WRAPPER(wrapper, orig, arg_type)	\
	static void wrapper(void *in)				\
	{							\
		orig((arg_type)in);				\
	}
#endif

#endif /* _CPUHP_KUNIT_COMPAT_H */
