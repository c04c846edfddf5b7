/*
 * atime.c - the access-time policy (see atime.h for the rules).
 */
#include "atime.h"

int ordfs_timespec_cmp(struct ordfs_timespec a, struct ordfs_timespec b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	if (a.nsec != b.nsec)
		return a.nsec < b.nsec ? -1 : 1;
	return 0;
}

static bool relatime_needs_update(struct ordfs_timespec atime, struct ordfs_timespec mtime,
				  struct ordfs_timespec ctime, struct ordfs_timespec now)
{
	if (ordfs_timespec_cmp(mtime, atime) >= 0)
		return true;
	if (ordfs_timespec_cmp(ctime, atime) >= 0)
		return true;
	/* Compare in unsigned 64-bit space so clocks far in the past or the
	 * future cannot overflow the subtraction. */
	if (now.sec > atime.sec &&
	    (uint64_t)now.sec - (uint64_t)atime.sec >= ATIME_RELATIME_MAX_AGE_SEC)
		return true;
	return false;
}

bool atime_needs_update(const struct atime_policy *p, bool is_dir,
			struct ordfs_timespec atime, struct ordfs_timespec mtime,
			struct ordfs_timespec ctime, struct ordfs_timespec now)
{
	if (p->mode == ATIME_NOATIME)
		return false;
	if (is_dir && p->nodiratime)
		return false;
	if (p->mode == ATIME_RELATIME && !relatime_needs_update(atime, mtime, ctime, now))
		return false;
	return ordfs_timespec_cmp(atime, now) != 0;
}
