/*
 * atime.c - the access-time policy (see atime.h for the rules).
 */
#include <stdio.h>
#include <string.h>

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

bool atime_reads_may_be_cached(const struct atime_policy *p, bool is_dir,
				struct ordfs_timespec atime, struct ordfs_timespec mtime,
				struct ordfs_timespec ctime, struct ordfs_timespec now)
{
	if (p->mode == ATIME_NOATIME || (is_dir && p->nodiratime))
		return true;
	if (p->mode == ATIME_STRICT)
		return false; /* every read changes atime */
	return !relatime_needs_update(atime, mtime, ctime, now);
}

void atime_policy_for(const struct atime_policy *mount, uint32_t attr_flags,
		      struct atime_policy *out)
{
	*out = *mount;
	if (attr_flags & ORDFS_FL_NOATIME)
		out->mode = ATIME_NOATIME;
}

bool atime_parse_option(const char *opt, struct atime_policy *p)
{
	if (strcmp(opt, "relatime") == 0)
		p->mode = ATIME_RELATIME;
	else if (strcmp(opt, "strictatime") == 0 || strcmp(opt, "norelatime") == 0 ||
		 strcmp(opt, "atime") == 0)
		p->mode = ATIME_STRICT;
	else if (strcmp(opt, "noatime") == 0)
		p->mode = ATIME_NOATIME;
	else if (strcmp(opt, "nodiratime") == 0)
		p->nodiratime = true;
	else if (strcmp(opt, "diratime") == 0)
		p->nodiratime = false;
	else if (strcmp(opt, "lazytime") == 0)
		p->lazytime = true;
	else if (strcmp(opt, "nolazytime") == 0)
		p->lazytime = false;
	else
		return false;
	return true;
}

void atime_policy_describe(const struct atime_policy *p, char *buf, unsigned len)
{
	const char *mode = p->mode == ATIME_STRICT    ? "strictatime"
			   : p->mode == ATIME_NOATIME ? "noatime"
						      : "relatime";
	snprintf(buf, len, "%s%s%s", mode, p->nodiratime ? ",nodiratime" : "",
		 p->lazytime ? ",lazytime" : "");
}
