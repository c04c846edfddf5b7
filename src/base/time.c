/*
 * time.c - ordfs_now (time.h).
 */
#include <time.h>

#include "time.h"

struct ordfs_timespec ordfs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct ordfs_timespec t = { ts.tv_sec, (uint32_t)ts.tv_nsec };
	return t;
}
