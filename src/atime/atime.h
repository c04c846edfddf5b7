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
 * and in every mode, never when atime already equals now.  An inode
 * flagged A (ORDFS_FL_NOATIME, chattr +A) is noatime whatever the mount
 * says, as Linux's S_NOATIME (atime_policy_for): its reads change
 * nothing, so its pages may stay cached across opens.
 * lazytime does not change the decision, only when the new value is
 * written (the caller keeps it in memory).
 *
 * Design: docs/design/atime.md.
 */
#ifndef ORDFS_ATIME_H
#define ORDFS_ATIME_H

#include <stdbool.h>

#include "format/format.h"

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

/* True if no read of the inode could change its atime now under policy
 * p, so the kernel may serve reads from its page cache (or readdir from
 * its cache) without asking: noatime (nodiratime for a directory)
 * always; relatime while atime is newer than mtime and ctime and younger
 * than 24 hours; strictatime never.  Asked at open: a file held open
 * across the 24-hour boundary keeps being served from the cache. */
bool atime_reads_may_be_cached(const struct atime_policy *p, bool is_dir,
			       struct ordfs_timespec atime, struct ordfs_timespec mtime,
			       struct ordfs_timespec ctime, struct ordfs_timespec now);

/* The policy for one inode: the mount's, or noatime for an inode whose
 * file flags (attr_flags) hold A. */
void atime_policy_for(const struct atime_policy *mount, uint32_t attr_flags,
		      struct atime_policy *out);

/* -1, 0, 1 as a is before, equal to, after b. */
int ordfs_timespec_cmp(struct ordfs_timespec a, struct ordfs_timespec b);

/* Parses one mount option of the family (relatime, strictatime,
 * norelatime, noatime, atime, nodiratime, diratime, lazytime,
 * nolazytime) into p.  true if opt was one of them. */
bool atime_parse_option(const char *opt, struct atime_policy *p);
/* "relatime", "strictatime" or "noatime" (+ ",nodiratime", ",lazytime"). */
void atime_policy_describe(const struct atime_policy *p, char *buf, unsigned len);

/* ---- applying it (touch.c) ---------------------------------------------
 * A read, readdir or readlink that reached the daemon calls atime_touch
 * (no locks, no handle held).  Without lazytime the new atime is written
 * in a handle of its own, never flagged as a datasync change: it joins
 * the running transaction and is committed with the next periodic or
 * requested commit; it never forces one, and fdatasync ignores it.  With
 * lazytime it stays in memory (inode->atime_dirty) until another change
 * writes the inode, fsync, ordfsctl sync, unmount, or 24 hours. */
struct ordfs;
struct inode;
int atime_touch(struct ordfs *fs, struct inode *inode);
/* Writes a lazily kept atime of inode now (inode->lock held exclusively,
 * no handle). */
int atime_write_pending(struct ordfs *fs, struct inode *inode);
/* Writes the lazily kept atimes of every cached inode (all), or of those
 * kept for 24 hours (!all).  Periodic writeback, sync and unmount. */
int atime_write_lazy(struct ordfs *fs, bool all);

#endif
