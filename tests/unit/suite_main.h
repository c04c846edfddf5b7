/*
 * suite_main.h - the main() every Check test program shares: run one
 * suite, exit non-zero if any test failed.
 */
#ifndef ORDFS_SUITE_MAIN_H
#define ORDFS_SUITE_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int run_suite(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
