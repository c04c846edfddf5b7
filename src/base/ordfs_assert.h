/*
 * ordfs_assert.h - the design's rules, checked while the code runs.
 *
 * Owns: ORDFS_ASSERT and ORDFS_ASSERT_CHEAP, and what happens when one
 * fails: a log line naming the rule (file, line, function, the condition)
 * and abort().  A broken rule is a bug; continuing would write whatever
 * the bug made onto the image.
 *
 * Rules:
 *  - ORDFS_ASSERT is checked in debug and sanitizer builds (meson defines
 *    ORDFS_DEBUG_CHECKS there) and compiles to nothing in a release build:
 *    use it for checks that walk a list, take a lock or sit on a hot path.
 *    Its condition must have no side effects.
 *  - ORDFS_ASSERT_CHEAP is checked in every build: a compare of values at
 *    hand, on paths where a wrong value would damage the image.
 */
#ifndef ORDFS_ASSERT_H
#define ORDFS_ASSERT_H

#include <stdbool.h>

__attribute__((noreturn, cold)) void ordfs_assert_fail(const char *cond, const char *file,
							 int line, const char *func);

#define ORDFS_ASSERT_CHEAP(cond)                                                        \
	(__builtin_expect(!!(cond), 1) ? (void)0                                         \
				       : ordfs_assert_fail(#cond, __FILE__, __LINE__, __func__))

#ifdef ORDFS_DEBUG_CHECKS
#define ORDFS_ASSERT(cond) ORDFS_ASSERT_CHEAP(cond)
#else
#define ORDFS_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
