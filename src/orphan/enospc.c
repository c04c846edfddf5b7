/*
 * enospc.c - ENOSPC only when the space is really gone.
 *
 * Owns: ordfs_should_retry_alloc, the step every allocating operation
 * takes before it reports ENOSPC (ext4_should_retry_alloc is the model).
 *
 * Why: blocks freed by a transaction are not reused before it commits
 * [J5], and an unlinked file's blocks are freed by its eviction, which
 * runs when the kernel drops its last reference (FUSE's FORGET, sent a
 * moment after the unlink) and may be running on another thread.  Right
 * after `rm` of a large file the space is free for df but not yet for the
 * allocator.  So an operation that got -ENOSPC waits for evictions under
 * way; if nothing is pending but inodes are on the orphan list, it gives
 * their FORGETs a moment (at most ORPHAN_WAIT_MS, less as soon as the list
 * shrinks: an unlinked file that is still open only delays the answer);
 * and if blocks are waiting for a commit, it forces the commit and tries
 * again, a few times at most.
 *
 * Rules:
 *  - Never with a handle open [J8]: the commit would wait for it.  Callers
 *    retry around whole handles (the operation gave everything back when
 *    it failed with -ENOSPC); with a handle held the answer is "no".
 *  - The retry count is the caller's, per operation, so a filesystem that
 *    is really full answers after at most ORDFS_ALLOC_RETRIES commits.
 */
#include <errno.h>
#include <unistd.h>

#include "fs.h"
#include "enospc.h"
#include "inode/inode.h"
#include "orphan.h"
#include "alloc/alloc.h"
#include "journal/journal.h"

#define ORDFS_ALLOC_RETRIES 3
#define ORPHAN_WAIT_MS 1000

bool ordfs_should_retry_alloc(struct ordfs *fs, int err, unsigned *retries)
{
	if (err != -ENOSPC || !fs->journal || *retries >= ORDFS_ALLOC_RETRIES ||
	    journal_handle_held())
		return false;
	(*retries)++;
	/* An eviction under way frees its blocks in handles of its own;
	 * what it has freed is pending until the next commit. */
	inode_wait_evictions(fs);
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	uint32_t orphans = orphan_count(fs);
	for (unsigned ms = 0; c.pending_free == 0 && orphans > 0 && ms < ORPHAN_WAIT_MS;
	     ms += 10) {
		usleep(10 * 1000);
		uint32_t now = orphan_count(fs);
		if (now < orphans) /* a FORGET came: its eviction may be running */
			inode_wait_evictions(fs);
		alloc_get_counts(fs->alloc, &c);
		orphans = now;
	}
	if (c.pending_free == 0)
		return false;
	return journal_force_commit(fs->journal) == 0;
}
