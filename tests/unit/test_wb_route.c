/*
 * test_wb_route.c - the write route (writeback/route.h) against the rules
 * of docs/DESIGN.md, "Write routes": first the table there, row by row,
 * then every combination of the facts against each rule stated alone.
 */
#include "suite_main.h"
#include <check.h>
#include <stdbool.h>

#include "writeback/route.h"

#define ORD JOURNAL_DATA_ORDERED
#define WB JOURNAL_DATA_WRITEBACK
#define JNL JOURNAL_DATA_JOURNAL

/* DESIGN.md's table: mode, waited, small, delayed, unwritten, cached -> route. */
static const struct {
	struct wb_route_facts facts;
	enum wb_route route;
} design_table[] = {
	/* the heavy writer, data=ordered: everything in place */
	{ { ORD, false, false, true, false, false }, WB_ALLOC_IN_PLACE },
	{ { ORD, false, false, false, true, false }, WB_CONVERT_IN_PLACE },
	{ { ORD, false, false, false, false, false }, WB_OVERWRITE_IN_PLACE },
	/* fsync of a little new data, data=ordered: logged, one flush */
	{ { ORD, true, true, true, false, false }, WB_ALLOC_LOGGED },
	{ { ORD, true, true, false, true, false }, WB_CONVERT_LOGGED },
	/* ... but an overwrite of written blocks is not */
	{ { ORD, true, true, false, false, false }, WB_OVERWRITE_IN_PLACE },
	/* fsync of much new data: in place, F1 before the commit */
	{ { ORD, true, false, true, false, false }, WB_ALLOC_IN_PLACE },
	/* data=writeback never logs for smallness */
	{ { WB, true, true, true, false, false }, WB_ALLOC_IN_PLACE },
	{ { WB, true, true, false, true, false }, WB_CONVERT_IN_PLACE },
	/* data=journal logs everything */
	{ { JNL, false, false, true, false, false }, WB_ALLOC_LOGGED },
	{ { JNL, false, false, false, false, false }, WB_OVERWRITE_LOGGED },
	{ { JNL, false, false, false, true, false }, WB_CONVERT_LOGGED },
	/* a block with a cached buffer goes through the log in every mode */
	{ { WB, false, false, false, false, true }, WB_OVERWRITE_LOGGED },
	{ { ORD, false, false, true, false, true }, WB_ALLOC_LOGGED },
	{ { ORD, false, false, false, true, true }, WB_CONVERT_LOGGED },
};

START_TEST(test_design_table)
{
	for (unsigned i = 0; i < sizeof(design_table) / sizeof(design_table[0]); i++) {
		enum wb_route got = wb_route_choose(&design_table[i].facts);
		ck_assert_msg(got == design_table[i].route, "row %u: %s, expected %s", i,
			      wb_route_name(got), wb_route_name(design_table[i].route));
	}
}
END_TEST

/* Calls fn for every combination of the facts (a page is over a hole, an
 * unwritten extent or a written block: never two of them). */
static void for_all_facts(void (*fn)(const struct wb_route_facts *f))
{
	static const enum journal_data_mode modes[] = { ORD, WB, JNL };
	for (unsigned m = 0; m < 3; m++)
		for (unsigned kind = 0; kind < 3; kind++)
			for (unsigned bits = 0; bits < 8; bits++) {
				struct wb_route_facts f = {
					.mode = modes[m],
					.waited = bits & 1,
					.small = bits & 2,
					.cached = bits & 4,
					.delayed = kind == 0,
					.unwritten = kind == 1,
				};
				fn(&f);
			}
}

static void kind_follows_the_block(const struct wb_route_facts *f)
{
	enum wb_route r = wb_route_choose(f);
	if (f->delayed)
		ck_assert(r == WB_ALLOC_IN_PLACE || r == WB_ALLOC_LOGGED);
	else if (f->unwritten)
		ck_assert(r == WB_CONVERT_IN_PLACE || r == WB_CONVERT_LOGGED);
	else
		ck_assert(r == WB_OVERWRITE_IN_PLACE || r == WB_OVERWRITE_LOGGED);
}

static void journal_mode_and_cached_blocks_are_logged(const struct wb_route_facts *f)
{
	if (f->mode == JNL || f->cached)
		ck_assert(wb_route_logged(wb_route_choose(f)));
}

static void otherwise_logged_only_for_small_waited_new_data(const struct wb_route_facts *f)
{
	if (f->mode == JNL || f->cached)
		return;
	bool expect = f->mode == ORD && f->waited && f->small && (f->delayed || f->unwritten);
	ck_assert_msg(wb_route_logged(wb_route_choose(f)) == expect,
		      "mode %d waited %d small %d delayed %d unwritten %d: %s", f->mode,
		      f->waited, f->small, f->delayed, f->unwritten,
		      wb_route_name(wb_route_choose(f)));
}

START_TEST(test_every_combination_keeps_the_rules)
{
	for_all_facts(kind_follows_the_block);
	for_all_facts(journal_mode_and_cached_blocks_are_logged);
	for_all_facts(otherwise_logged_only_for_small_waited_new_data);
}
END_TEST

static Suite *route_suite(void)
{
	Suite *s = suite_create("wb_route");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_design_table);
	tcase_add_test(tc, test_every_combination_keeps_the_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(route_suite());
}
