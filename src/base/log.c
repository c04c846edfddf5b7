/*
 * log.c - see log.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "ordfs_assert.h"

static ordfs_log_sink current_sink;

void ordfs_log_set_sink(ordfs_log_sink sink)
{
	__atomic_store_n(&current_sink, sink, __ATOMIC_RELEASE);
}

void ordfs_log(int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ordfs_log_sink sink = __atomic_load_n(&current_sink, __ATOMIC_ACQUIRE);
	if (sink)
		sink(prio, msg);
	else
		fprintf(stderr, "ordfs: %s\n", msg);
}

void ordfs_assert_fail(const char *cond, const char *file, int line, const char *func)
{
	ordfs_log(LOG_ERR, "internal error: rule broken at %s:%d in %s(): %s", file, line, func,
		  cond);
	abort();
}
