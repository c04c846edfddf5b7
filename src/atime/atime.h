/*
 * atime.h - when a read must update the access time: a pure policy.
 *
 * Owns: the decision only (no I/O, no locks), so it can be tested over a
 * table.  Rules are Linux's atime_needs_update()/relatime_need_update():
 *   noatime          never;
 *   nodiratime       never for directories (combines with the others);
 *   relatime         when atime <= mtime, or atime <= ctime, or atime is
 *                    at least 24 hours older than now (default);
 *   strictatime      always;
 * and in every mode, never when atime already equals now.
 * lazytime does not change the decision, only when the new value is
 * written (the caller keeps it in memory).
 */
#ifndef ORDFS_ATIME_H
#define ORDFS_ATIME_H

#include <stdbool.h>

#include "../format.h"

enum atime_mode {
	ATIME_RELATIME = 0,
	ATIME_STRICT,
	ATIME_NOATIME,
};

struct atime_policy {
	enum atime_mode mode;
	bool nodiratime;
	bool lazytime;
};

#define ATIME_RELATIME_MAX_AGE_SEC (24 * 60 * 60)

bool atime_needs_update(const struct atime_policy *p, bool is_dir,
			struct ordfs_timespec atime, struct ordfs_timespec mtime,
			struct ordfs_timespec ctime, struct ordfs_timespec now);

/* -1, 0, 1 as a is before, equal to, after b. */
int ordfs_timespec_cmp(struct ordfs_timespec a, struct ordfs_timespec b);

#endif
