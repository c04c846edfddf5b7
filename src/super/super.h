/*
 * super.h - the superblock layer: superblock I/O (super.c) and what the
 * filesystem does about errors found while mounted (errors.c: errors=,
 * the error recorded in the superblock, whether it takes changes).
 *
 * Rules: nothing here is called with a handle open that it might have to
 * start itself [J8]; the superblock in memory (fs->sb) is guarded by
 * fs->sb_lock.
 *
 * Design: docs/design/flush.md (errors=), nbd.md (the owner record), grow.md.
 */
#ifndef ORDFS_SUPER_H
#define ORDFS_SUPER_H

#include <stdbool.h>

#include "format/format.h"

struct ordfs;
struct blockdev;
struct handle;

/* Reads and validates the primary superblock (or the backup if use_backup). */
int ordfs_read_super(struct blockdev *bd, bool use_backup, struct ordfs_super *sb,
		     const char **why);
/* Writes the superblock to block 0 (and, with backup, to the last block).
 * Only while the journal is closed. */
int ordfs_write_super(struct blockdev *bd, const struct ordfs_super *sb, bool backup);

/* fsck, after a clean check of an image whose log is empty: clears the
 * superblock's ERROR state and the journal's recorded errno.  *cleared
 * tells whether there was anything to clear. */
int ordfs_clear_error_state(struct blockdev *bd, bool *cleared);

/* Writes the in-memory superblock into block 0 under h.  sb_lock held. */
int ordfs_write_super_journaled(struct ordfs *fs, struct handle *h);
/* The same with sb's bytes in block 0 instead of fs->sb's (an online grow
 * writes the grown superblock before fs->sb takes it).  sb_lock held. */
int ordfs_write_super_journaled_as(struct ordfs *fs, struct handle *h,
				   const struct ordfs_super *sb);
/* Sets ro_compat feature bit(s) `feature` in the superblock, in block 0
 * under h (one credit), unless they are set already (then nothing is
 * written).  Takes sb_lock.  The change commits with whatever in h needs
 * the feature, so no image holds the one without the other. */
int ordfs_super_require_ro_compat(struct ordfs *fs, struct handle *h, uint32_t feature);
/* Are ro_compat feature bit(s) `feature` set in the superblock in memory?
 * Takes sb_lock (for asserts). */
bool ordfs_super_has_ro_compat(struct ordfs *fs, uint32_t feature);

/* Run-time errors (errors.c).  ordfs_error_corruption: a checksum or
 * structure check failed while mounted; applies errors= (continue: record
 * it in the superblock; remount-ro: abort the journal and record it;
 * abort: stop).  Returns err for the caller to pass on. */
int ordfs_error_corruption(struct ordfs *fs, int err, const char *what);
/* The one door for errors found while mounted, from any layer (the FUSE
 * glue, background writeback, eviction, fsck's repair mount): -EUCLEAN
 * (a damaged structure) goes to ordfs_error_corruption, with `what` in
 * its log line; anything else passes through.  Returns err. */
int ordfs_report_error(struct ordfs *fs, int err, const char *what);
/* The journal aborted on an error of its own rules (a transaction that
 * cannot be committed): errors= applies as for corruption. */
void ordfs_error_internal(struct ordfs *fs, int err);
/* Marks the superblock ERROR with err (journaled while the journal runs,
 * directly plus the journal superblock's errno once it has aborted), so
 * the next read-write mount asks for fsck.  Best effort; idempotent. */
void ordfs_record_error(struct ordfs *fs, int err);
/* 0 if the filesystem takes modifications, else -EROFS. */
int ordfs_writable(struct ordfs *fs);
/* Around an operation that dirties pages without a handle (write,
 * truncate, fallocate): ordfs_writable's answer, and while it is 0 a
 * remount,ro waits for ordfs_write_exit before it writes everything back
 * (mount/remount.c). */
int ordfs_write_enter(struct ordfs *fs);
void ordfs_write_exit(struct ordfs *fs);

#endif
