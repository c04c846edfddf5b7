/*
 * scrub.h - the online scrub: a check of a mounted, live filesystem's
 * metadata and cross-references, without unmounting (ordfsctl scrub,
 * as xfs_scrub is for XFS).  design/checker.md, "Online scrub".
 *
 * Owns: what a scrub checks and how it tells a real contradiction from
 * the passing states of operations that run beside it:
 *   1. inode slots: each decodes (checksum, structure, a link count an
 *      inode not on the orphan list must have) or is free; a slot in use
 *      is marked in the inode bitmap and a marked inode has a slot;
 *   2. each inode in use, under its lock (shared): its extent tree and
 *      xattr block decode, every block it maps lies in the data area, is
 *      no metadata and is marked in the block bitmap; a directory's blocks
 *      verify and its entries name inodes in use, never itself;
 *   3. no block is mapped twice (cross-linked): a block seen twice in
 *      pass 2 is confirmed by holding both owners' locks at once and
 *      finding it in both trees.
 *
 * Rules:
 *  - Read-only: a scrub changes nothing on the image.  What it finds is
 *    reported, counted, and recorded as the filesystem's error state
 *    (ordfs_error_corruption: the errors= policy applies, and the next
 *    read-write mount asks for fsck.ordfs).
 *  - No false alarm from a concurrent operation: a contradiction seen
 *    without the locks that make it stable (an inode slot against its
 *    bitmap bit) is read again, after the journal's running transaction
 *    has committed, and reported only if it is still there.
 *  - Locks as any operation takes them (design/locking.md): one inode
 *    lock, and a second only tried, never waited for (the two may be
 *    parent and child, whose order their numbers do not give); never a
 *    handle; the allocator's lock only under an inode lock, as writeback
 *    does.  Inode slots are read through the inode cache, never from the
 *    table buffer (a cached inode's slot is rewritten in place).
 *  - It gives way: between inodes it yields the CPU, so the requests
 *    beside it go first (the daemon also runs it at low priority).
 */
#ifndef ORDFS_SCRUB_H
#define ORDFS_SCRUB_H

#include <stdint.h>

#include "check.h"

struct ordfs;

struct scrub_result {
	uint64_t inodes;      /* inodes in use checked */
	uint64_t dirs;        /* of which directories */
	uint64_t blocks;      /* blocks mapped by them (tree blocks included) */
	uint32_t problems;
	/* Called with each problem found (may be NULL). */
	void (*report)(void *ctx, enum check_problem code, const char *msg);
	void *ctx;
};

/* Scrubs the mounted filesystem fs.  0 when the scrub ran to the end
 * (res->problems tells what it found), or a negative errno when it could
 * not (out of memory, an I/O error reading the image: also counted as a
 * problem when it is the image's). */
int ordfs_scrub(struct ordfs *fs, struct scrub_result *res);

#endif
