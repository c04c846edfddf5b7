/*
 * test_errseq.c - per-open-file error reporting (Linux errseq semantics).
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "base/errseq.h"

START_TEST(test_each_open_file_sees_error_once)
{
	struct errseq e;
	errseq_init(&e);
	errseq_t f1 = errseq_sample(&e), f2 = errseq_sample(&e);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f1), 0);
	errseq_set(&e, -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f1), -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f1), 0);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f2), -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f2), 0);
	/* Opened after everyone saw it: nothing to report. */
	errseq_t f3 = errseq_sample(&e);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f3), 0);
	/* A new error reaches all of them again. */
	errseq_set(&e, -ENOSPC);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f1), -ENOSPC);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f3), -ENOSPC);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f3), 0);
	errseq_destroy(&e);
}
END_TEST

START_TEST(test_unseen_error_reaches_next_opener)
{
	struct errseq e;
	errseq_init(&e);
	errseq_set(&e, -EIO); /* nobody has the file open */
	errseq_t late = errseq_sample(&e);
	ck_assert_int_eq(errseq_check_and_advance(&e, &late), -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &late), 0);
	/* Two errors before anyone looks count as one report. */
	errseq_t f = errseq_sample(&e);
	errseq_set(&e, -EIO);
	errseq_set(&e, -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f), -EIO);
	ck_assert_int_eq(errseq_check_and_advance(&e, &f), 0);
	errseq_destroy(&e);
}
END_TEST

static Suite *errseq_suite(void)
{
	Suite *s = suite_create("errseq");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_each_open_file_sees_error_once);
	tcase_add_test(tc, test_unseen_error_reaches_next_opener);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(errseq_suite());
}
