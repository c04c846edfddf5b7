/*
 * time.h - timestamps: the one clock every layer reads.
 *
 * Owns: struct ordfs_timespec (the in-memory form of an on-disk time;
 * format.h encodes it) and ordfs_now.  Rules: CLOCK_REALTIME, as Linux
 * stamps inodes; nothing here knows about the image.
 */
#ifndef ORDFS_BASE_TIME_H
#define ORDFS_BASE_TIME_H

#include <stdint.h>

struct ordfs_timespec {
	int64_t sec;
	uint32_t nsec;
};

/* Current time as an on-disk timestamp. */
struct ordfs_timespec ordfs_now(void);

#endif
