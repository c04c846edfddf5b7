/*
 * test_wb_route.c - the write route (writeback/route.h) against the rules
 * of design/write-routes.md, "Write routes": first the table there, row by row,
 * then every combination of the facts against each rule stated alone.
 */
#include "suite_main.h"
#include <check.h>
#include <stdbool.h>

#include "writeback/route.h"

#define ORD JOURNAL_DATA_ORDERED
#define WB JOURNAL_DATA_WRITEBACK
#define JNL JOURNAL_DATA_JOURNAL

/* The kind of block under a page: exactly one of these facts is set. */
#define HOLE .delayed = true
#define UNWR .unwritten = true
#define TAIL .extends = true
#define DATA .delayed = false

/* design/write-routes.md's table: facts -> route, and whether in place it is
* ordered. */
static const struct {
	struct wb_route_facts facts;
	enum wb_route route;
	bool ordered;
} design_table[] = {
	/* the heavy writer, data=ordered: everything in place, new data ordered */
	{ { .mode = ORD, HOLE }, WB_ALLOC_IN_PLACE, true },
	{ { .mode = ORD, UNWR }, WB_CONVERT_IN_PLACE, true },
	{ { .mode = ORD, TAIL }, WB_EXTEND_IN_PLACE, true },
	{ { .mode = ORD, DATA }, WB_OVERWRITE_IN_PLACE, false },
	/* fsync of a little new data, data=ordered: logged, one flush */
	{ { .mode = ORD, .waited = true, .small = true, HOLE }, WB_ALLOC_LOGGED, false },
	{ { .mode = ORD, .waited = true, .small = true, UNWR }, WB_CONVERT_LOGGED, false },
	{ { .mode = ORD, .waited = true, .small = true, TAIL }, WB_EXTEND_LOGGED, false },
	/* ... but an overwrite inside the size on disk is not */
	{ { .mode = ORD, .waited = true, .small = true, DATA }, WB_OVERWRITE_IN_PLACE, false },
	/* fsync of much new data: in place, F1 before the commit */
	{ { .mode = ORD, .waited = true, HOLE }, WB_ALLOC_IN_PLACE, true },
	{ { .mode = ORD, .waited = true, TAIL }, WB_EXTEND_IN_PLACE, true },
	/* data=writeback orders new blocks too (never another file's bytes),
	 * logged for a small fsync, but not a file's own tail */
	{ { .mode = WB, HOLE }, WB_ALLOC_IN_PLACE, true },
	{ { .mode = WB, UNWR }, WB_CONVERT_IN_PLACE, true },
	{ { .mode = WB, .waited = true, .small = true, HOLE }, WB_ALLOC_LOGGED, false },
	{ { .mode = WB, .waited = true, .small = true, UNWR }, WB_CONVERT_LOGGED, false },
	{ { .mode = WB, .waited = true, .small = true, TAIL }, WB_EXTEND_IN_PLACE, false },
	{ { .mode = WB, TAIL }, WB_EXTEND_IN_PLACE, false },
	/* data=journal logs everything */
	{ { .mode = JNL, HOLE }, WB_ALLOC_LOGGED, false },
	{ { .mode = JNL, DATA }, WB_OVERWRITE_LOGGED, false },
	{ { .mode = JNL, UNWR }, WB_CONVERT_LOGGED, false },
	{ { .mode = JNL, TAIL }, WB_EXTEND_LOGGED, false },
	/* a block with a cached buffer goes through the log in every mode */
	{ { .mode = WB, .cached = true, DATA }, WB_OVERWRITE_LOGGED, false },
	{ { .mode = WB, .cached = true, TAIL }, WB_EXTEND_LOGGED, false },
	{ { .mode = ORD, .cached = true, HOLE }, WB_ALLOC_LOGGED, false },
	{ { .mode = ORD, .cached = true, UNWR }, WB_CONVERT_LOGGED, false },
};

START_TEST(test_design_table)
{
	for (unsigned i = 0; i < sizeof(design_table) / sizeof(design_table[0]); i++) {
		const struct wb_route_facts *f = &design_table[i].facts;
		enum wb_route got = wb_route_choose(f);
		ck_assert_msg(got == design_table[i].route, "row %u: %s, expected %s", i,
			      wb_route_name(got), wb_route_name(design_table[i].route));
		ck_assert_msg(wb_route_ordered(got, f->mode) == design_table[i].ordered,
			      "row %u: %s ordered %d", i, wb_route_name(got),
			      wb_route_ordered(got, f->mode));
	}
}
END_TEST

/* Calls fn for every combination of the facts (a page is over a hole, an
 * unwritten extent, a written block it extends or any other written
 * block: never two of them). */
static void for_all_facts(void (*fn)(const struct wb_route_facts *f))
{
	static const enum journal_data_mode modes[] = { ORD, WB, JNL };
	for (unsigned m = 0; m < 3; m++)
		for (unsigned kind = 0; kind < 4; kind++)
			for (unsigned bits = 0; bits < 8; bits++) {
				struct wb_route_facts f = {
					.mode = modes[m],
					.waited = bits & 1,
					.small = bits & 2,
					.cached = bits & 4,
					.delayed = kind == 0,
					.unwritten = kind == 1,
					.extends = kind == 2,
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
	else if (f->extends)
		ck_assert(r == WB_EXTEND_IN_PLACE || r == WB_EXTEND_LOGGED);
	else
		ck_assert(r == WB_OVERWRITE_IN_PLACE || r == WB_OVERWRITE_LOGGED);
}

static void journal_mode_and_cached_blocks_are_logged(const struct wb_route_facts *f)
{
	if (f->mode == JNL || f->cached)
		ck_assert(wb_route_logged(wb_route_choose(f)));
}

/* New data is ordered in place: new blocks in every mode, a file's own
 * tail in data=ordered; data=journal never writes in place. */
static bool must_order(const struct wb_route_facts *f)
{
	return f->delayed || f->unwritten || (f->extends && f->mode == ORD);
}

static void otherwise_logged_only_for_small_waited_ordered_data(const struct wb_route_facts *f)
{
	if (f->mode == JNL || f->cached)
		return;
	bool expect = f->waited && f->small && must_order(f);
	ck_assert_msg(wb_route_logged(wb_route_choose(f)) == expect,
		      "mode %d waited %d small %d delayed %d unwritten %d extends %d: %s", f->mode,
		      f->waited, f->small, f->delayed, f->unwritten, f->extends,
		      wb_route_name(wb_route_choose(f)));
}

static void new_data_in_place_is_ordered(const struct wb_route_facts *f)
{
	enum wb_route r = wb_route_choose(f);
	bool expect = !wb_route_logged(r) && must_order(f);
	ck_assert_msg(wb_route_ordered(r, f->mode) == expect, "mode %d %s: ordered %d", f->mode,
		      wb_route_name(r), wb_route_ordered(r, f->mode));
}

START_TEST(test_every_combination_keeps_the_rules)
{
	for_all_facts(kind_follows_the_block);
	for_all_facts(journal_mode_and_cached_blocks_are_logged);
	for_all_facts(otherwise_logged_only_for_small_waited_ordered_data);
	for_all_facts(new_data_in_place_is_ordered);
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
