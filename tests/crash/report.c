/*
 * report.c - the counters and the violation report every crash tool
 * shares: one line per violation on stderr (the first 20, or as many as
 * CRASH_SHOW says), counted all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

uint64_t crash_states_checked, crash_violations;
bool crash_verbose;

void crash_violation(const char *workload, const char *state, const char *fmt, ...)
{
	va_list ap;
	static uint64_t show;
	if (!show)
		show = getenv("CRASH_SHOW") ? strtoull(getenv("CRASH_SHOW"), NULL, 10) : 20;
	crash_violations++;
	if (crash_violations > show)
		return; /* enough to act on */
	fprintf(stderr, "VIOLATION %s [%s]: ", workload, state);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t crash_fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}
