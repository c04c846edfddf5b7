/*
 * test_atime.c - the access-time policy over a table of cases, including
 * the 24-hour boundary and clocks far in the past and future.
 */
#include "suite_main.h"
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "atime/atime.h"

#define DAY (24 * 60 * 60)

static struct ordfs_timespec ts(int64_t sec, uint32_t nsec)
{
	struct ordfs_timespec t = { sec, nsec };
	return t;
}

struct atime_case {
	enum atime_mode mode;
	bool nodiratime, is_dir;
	int64_t atime, mtime, ctime, now;
	bool expect;
};

static const struct atime_case cases[] = {
	/* relatime: modified since last read -> update (the mutt case) */
	{ ATIME_RELATIME, false, false, 1000, 2000, 2000, 3000, true },
	/* mtime == atime counts as "not older": update */
	{ ATIME_RELATIME, false, false, 2000, 2000, 1000, 3000, true },
	/* ctime newer than atime: update */
	{ ATIME_RELATIME, false, false, 2000, 1000, 2500, 3000, true },
	/* read again, nothing changed, < 24 h: no update */
	{ ATIME_RELATIME, false, false, 3000, 2000, 2000, 3001, false },
	/* exactly 24 h old: update; one second less: no update */
	{ ATIME_RELATIME, false, false, 10000, 1, 1, 10000 + DAY, true },
	{ ATIME_RELATIME, false, false, 10000, 1, 1, 10000 + DAY - 1, false },
	/* atime two days back (the tmp-cleaner case): update */
	{ ATIME_RELATIME, false, false, 5000, 1, 1, 5000 + 2 * DAY, true },
	/* atime in the future relative to now: no update under relatime */
	{ ATIME_RELATIME, false, false, 9000, 1, 1, 100, false },
	/* clocks at the extremes do not overflow */
	{ ATIME_RELATIME, false, false, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MAX, true },
	{ ATIME_RELATIME, false, false, INT64_MAX - 5, 0, 0, INT64_MAX, false },
	{ ATIME_RELATIME, false, false, -4 * DAY, -5 * DAY, -5 * DAY, 0, true },
	/* strictatime: always, unless atime already equals now */
	{ ATIME_STRICT, false, false, 3000, 2000, 2000, 3001, true },
	{ ATIME_STRICT, false, false, 3001, 2000, 2000, 3001, false },
	/* noatime: never */
	{ ATIME_NOATIME, false, false, 1000, 2000, 2000, 3000 + DAY, false },
	/* nodiratime: never for directories, files unaffected */
	{ ATIME_STRICT, true, true, 1000, 2000, 2000, 3000, false },
	{ ATIME_STRICT, true, false, 1000, 2000, 2000, 3000, true },
	{ ATIME_RELATIME, true, false, 1000, 2000, 2000, 3000, true },
	/* relatime directories without nodiratime follow the rule */
	{ ATIME_RELATIME, false, true, 1000, 2000, 2000, 3000, true },
};

START_TEST(test_policy_table)
{
	const struct atime_case *c = &cases[_i];
	struct atime_policy p = { c->mode, c->nodiratime, false };
	bool got = atime_needs_update(&p, c->is_dir, ts(c->atime, 0), ts(c->mtime, 0),
				      ts(c->ctime, 0), ts(c->now, 0));
	ck_assert_msg(got == c->expect, "case %d: got %d", _i, got);
}
END_TEST

START_TEST(test_nanoseconds_matter)
{
	struct atime_policy p = { ATIME_RELATIME, false, false };
	/* mtime a nanosecond after atime: modified since the read. */
	ck_assert(atime_needs_update(&p, false, ts(100, 5), ts(100, 6), ts(50, 0), ts(101, 0)));
	ck_assert(!atime_needs_update(&p, false, ts(100, 7), ts(100, 6), ts(50, 0), ts(101, 0)));
	/* strict: equal to the nanosecond means no update. */
	p.mode = ATIME_STRICT;
	ck_assert(!atime_needs_update(&p, false, ts(100, 7), ts(1, 0), ts(1, 0), ts(100, 7)));
	ck_assert(atime_needs_update(&p, false, ts(100, 7), ts(1, 0), ts(1, 0), ts(100, 8)));
	/* lazytime does not change the decision. */
	p.lazytime = true;
	ck_assert(atime_needs_update(&p, false, ts(100, 7), ts(1, 0), ts(1, 0), ts(100, 8)));
}
END_TEST

/* The kernel may serve reads from its cache (keep_cache at open). */
static const struct atime_case cache_cases[] = {
	/* relatime: atime newer than mtime and ctime, under 24 h: cached */
	{ ATIME_RELATIME, false, false, 3000, 2000, 2000, 3001, true },
	/* written since the last read (the mutt case): not cached */
	{ ATIME_RELATIME, false, false, 1000, 2000, 2000, 3000, false },
	{ ATIME_RELATIME, false, false, 2000, 1000, 2500, 3000, false },
	/* 24 h old: the next read must refresh it */
	{ ATIME_RELATIME, false, false, 10000, 1, 1, 10000 + DAY, false },
	{ ATIME_RELATIME, false, false, 10000, 1, 1, 10000 + DAY - 1, true },
	/* strictatime: never, even when atime equals now */
	{ ATIME_STRICT, false, false, 3001, 2000, 2000, 3001, false },
	/* noatime: always */
	{ ATIME_NOATIME, false, false, 1000, 2000, 2000, 3000 + DAY, true },
	/* nodiratime: always for directories, files by the mode */
	{ ATIME_STRICT, true, true, 1000, 2000, 2000, 3000, true },
	{ ATIME_STRICT, true, false, 3001, 2000, 2000, 3001, false },
	{ ATIME_RELATIME, false, true, 1000, 2000, 2000, 3000, false },
};

START_TEST(test_cache_table)
{
	const struct atime_case *c = &cache_cases[_i];
	struct atime_policy p = { c->mode, c->nodiratime, false };
	bool got = atime_reads_may_be_cached(&p, c->is_dir, ts(c->atime, 0), ts(c->mtime, 0),
					     ts(c->ctime, 0), ts(c->now, 0));
	ck_assert_msg(got == c->expect, "case %d: got %d", _i, got);
}
END_TEST

/* Safety over every case of the policy table: whenever reads may be
 * served from the cache, no read would have changed atime. */
START_TEST(test_cached_reads_never_owe_an_atime)
{
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct atime_case *c = &cases[i];
		struct atime_policy p = { c->mode, c->nodiratime, false };
		if (atime_reads_may_be_cached(&p, c->is_dir, ts(c->atime, 0), ts(c->mtime, 0),
					      ts(c->ctime, 0), ts(c->now, 0)))
			ck_assert_msg(!atime_needs_update(&p, c->is_dir, ts(c->atime, 0),
							  ts(c->mtime, 0), ts(c->ctime, 0),
							  ts(c->now, 0)),
				      "case %u", i);
	}
}
END_TEST

static Suite *atime_suite(void)
{
	Suite *s = suite_create("atime");
	TCase *tc = tcase_create("policy");
	tcase_add_loop_test(tc, test_policy_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_nanoseconds_matter);
	tcase_add_loop_test(tc, test_cache_table, 0,
			    (int)(sizeof(cache_cases) / sizeof(cache_cases[0])));
	tcase_add_test(tc, test_cached_reads_never_owe_an_atime);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(atime_suite());
}
