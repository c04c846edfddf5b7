/*
 * enospc.c - ENOSPC only when the space is really gone.
 *
 * Owns: ordfs_should_retry_alloc, the step every allocating operation
 * takes before it reports ENOSPC (ext4_should_retry_alloc is the model).
 *
 * Why: blocks freed by a transaction are not reused before it commits
 * [J5], and an unlinked file's blocks are freed by its eviction, which may
 * be running on another thread.  Right after `rm` of a large file the
 * space is free for df but not yet for the allocator.  So an operation
 * that got -ENOSPC waits for evictions under way, and if blocks are
 * waiting for a commit, forces it and tries again, a few times at most.
 *
 * Rules:
 *  - Never with a handle open [J8]: the commit would wait for it.  Callers
 *    retry around whole handles (the operation gave everything back when
 *    it failed with -ENOSPC); with a handle held the answer is "no".
 *  - The retry count is the caller's, per operation, so a filesystem that
 *    is really full answers after at most ORDFS_ALLOC_RETRIES commits.
 */
#include <errno.h>

#include "fs.h"
#include "inode.h"
#include "alloc/alloc.h"
#include "journal/journal.h"

#define ORDFS_ALLOC_RETRIES 3

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
	if (c.pending_free == 0)
		return false;
	return journal_force_commit(fs->journal) == 0;
}
