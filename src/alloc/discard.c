/*
 * discard.c - giving freed blocks back to the host: -o discard, a full
 * host, and `ordfsctl trim` (fstrim for an image).
 *
 * Owns: ordfs_trim and the journal's release callback.  Rules:
 *  - Online discard punches every freed extent with -o discard, and on a
 *    sparse image also while its host filesystem is full (hostfs.h: an
 *    ENOSPC lately, or little free space), so deleting files in ordfs
 *    gives the host its space back without an administrator.  Otherwise
 *    freed blocks stay backed, and the allocator reuses them first.
 *  - Every punched range is told to the allocator (alloc_note_holes)
 *    before it can be handed out again: it needs host space then.
 *  - A block is discarded only while nothing can allocate it: online
 *    discard runs in the release callback, after the freeing transaction
 *    committed and before the allocator gets the blocks back [J5]; trim
 *    claims each free run in memory (alloc_claim_free_run), discards it,
 *    then gives it back.  So a discard never punches data written since.
 *  - Freed blocks hold nothing recovery needs: a freed metadata block (or
 *    data block under data=journal) was revoked by the freeing
 *    transaction [J6].
 *  - A backend that cannot discard (-EOPNOTSUPP) turns online discard off
 *    with one log line; trim reports it to the caller.
 */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "fs.h"
#include "base/log.h"
#include "ops.h"
#include "alloc.h"
#include "blockdev/blockdev.h"

#define TRIM_RUN_BLOCKS 8192u /* claimed at a time, so writers are never kept waiting long */

/* Should a freed extent be punched now?  -o discard, or a sparse image
 * whose host is full. */
static bool punch_freed(struct ordfs *fs)
{
	if (__atomic_load_n(&fs->discard_off, __ATOMIC_RELAXED))
		return false;
	return FS_OPT(fs, discard) || blockdev_host_full(fs->bd);
}

void ordfs_release_freed(void *ctx, uint64_t start, uint32_t len)
{
	struct ordfs *fs = ctx;
	if (punch_freed(fs)) {
		int err = blockdev_discard(fs->bd, start * fs->block_size,
					   (uint64_t)len * fs->block_size);
		if (!err)
			alloc_note_holes(fs->alloc, start, len);
		if (err == -EOPNOTSUPP || err == -EINVAL) {
			__atomic_store_n(&fs->discard_off, true, __ATOMIC_RELAXED);
			ordfs_log(LOG_WARNING, "the image cannot discard (%s): discard is off",
				  strerror(-err));
		}
	}
	alloc_release_freed(fs->alloc, start, len);
}

int ordfs_trim(struct ordfs *fs, uint64_t *trimmed)
{
	*trimmed = 0;
	if (fs->opts.readonly || !fs->journal)
		return -EROFS;
	int err = ordfs_writable(fs);
	if (err)
		return err;
	uint64_t from = 0;
	for (;;) {
		uint64_t start;
		uint32_t len;
		alloc_claim_free_run(fs->alloc, from, TRIM_RUN_BLOCKS, &start, &len);
		if (len == 0)
			return 0;
		err = blockdev_discard(fs->bd, start * fs->block_size,
				       (uint64_t)len * fs->block_size);
		if (!err)
			alloc_note_holes(fs->alloc, start, len);
		alloc_unclaim_blocks(fs->alloc, start, len, 0);
		if (err)
			return err;
		*trimmed += (uint64_t)len * fs->block_size;
		from = start + len;
	}
}
