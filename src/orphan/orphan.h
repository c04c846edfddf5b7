/*
 * orphan.h - the orphan layer: inodes whose blocks or inode must still be
 * freed, so a crash in between is finished by the next mount.
 *
 * Owns: the orphan list (orphan.c), the eviction of unlinked inodes and
 * the mount's pass over the list (evict.c), freeing a file's blocks past
 * a point with the truncate bracket (truncate.c), and the ENOSPC retry
 * that waits for evictions (enospc.c, enospc.h).
 *
 * The list: on disk (a chain through each inode's next_orphan, headed
 * by sb.orphan_head) and its copy in memory (doubly linked through
 * inode->orphan_prev/orphan_next, first at fs->orphan_first), kept in the
 * same order.
 *
 * Rules:
 *  - fs->orphan_lock owns sb.orphan_head, every d.next_orphan (together
 *    with that inode's raw_lock) and the in-memory links.  Lock order:
 *    inode locks -> journal_start -> orphan_lock -> sb_lock, raw_lock.
 *  - Adding or removing an inode changes the list in memory only once the
 *    on-disk change is made under the handle; removal finds the
 *    predecessor in memory (no inode_get, no walk of the chain) and
 *    patches only its next_orphan (inode_write_next_orphan), since its
 *    owner may hold its lock and be changing the rest of it.
 *  - An inode on the list is never dropped from the inode cache
 *    (inode_put keeps it), so the in-memory pointers stay valid.
 *  - After mount the list on disk and in memory are the same: the mount
 *    loads the chain (orphan_list_load) and frees what it names.
 *
 * Design: docs/design/directories.md (orphans), allocation.md (the ENOSPC retry).
 */
#ifndef ORDFS_ORPHAN_H
#define ORDFS_ORPHAN_H

#include <stdbool.h>
#include <stdint.h>

struct ordfs;
struct handle;
struct inode;

/* Puts inode (its lock held exclusively) at the head of the list under h:
 * writes the inode with ORDFS_INODE_ORPHAN and its next_orphan, and the
 * superblock's head.  On failure nothing in memory changed. */
int orphan_add(struct ordfs *fs, struct handle *h, struct inode *inode);

/* Takes inode (its lock held exclusively) off the list under h: the
 * predecessor's next_orphan or the head moves past it, and inode's own
 * d.next_orphan and ORDFS_INODE_ORPHAN are cleared for the caller's next
 * inode_write.  Not on the list: clears them and returns 0. */
int orphan_remove(struct ordfs *fs, struct handle *h, struct inode *inode);

/* How many inodes are on the list (a snapshot, without the lock). */
uint32_t orphan_count(struct ordfs *fs);

/* The inode number at the head of the list (0: empty). */
uint32_t orphan_head(struct ordfs *fs);

/* Mount: reads the chain on disk into memory.  Returns every inode on it,
 * in order, each with a reference the caller drops (*out, *count; *out is
 * malloc'd).  -EUCLEAN for a chain that loops or names a free inode. */
int orphan_list_load(struct ordfs *fs, struct inode ***out, uint32_t *count);

/* ---- eviction (evict.c) -------------------------------------------------- */

/* Frees an unlinked inode's pages, blocks, xattr block and the inode
 * itself (its last reference went: the inode cache's eviction hook).
 * Errors are logged and leave the inode on the orphan list for the next
 * mount.  No handle held [J8]. */
void orphan_evict(struct ordfs *fs, struct inode *inode);
/* Mount: frees every inode on the orphan list: evicts the unlinked ones
 * and finishes interrupted truncates of the others. */
int orphan_process_list(struct ordfs *fs);

/* ---- freeing blocks (truncate.c); inode->lock held exclusively, no
 * handle, unless said otherwise ---------------------------------------- */

/* The orphan-list bracket of a truncate: begin runs in the handle that
 * lowers d.size (it writes the inode), end after the last block is freed. */
int orphan_truncate_begin(struct ordfs *fs, struct handle *h, struct inode *inode);
int orphan_truncate_end(struct ordfs *fs, struct inode *inode);
/* The last block a truncate keeps, with its bytes past the new size
 * zeroed: logged in the handle that lowers d.size, so the size and the
 * zeros commit together (a crash shows the file before the truncate or
 * after it, never its data cut away under the old size). */
struct truncate_tail {
	uint64_t phys;       /* the block on the image */
	const uint8_t *data; /* its new contents, a whole block */
};
/* A truncate's block freeing, with d.size already lowered in memory:
 * writes it inside the bracket (with `tail`, if not NULL, logged in the
 * same handle), frees every block from keep_blocks on, and closes the
 * bracket. */
int orphan_truncate_blocks(struct ordfs *fs, struct inode *inode, uint64_t keep_blocks,
			   const struct truncate_tail *tail);
/* Unmaps (and frees) the blocks [first_lblk, first_lblk + count), or every
 * block from first_lblk on, a bounded number of extent records per
 * handle. */
int unmap_range(struct ordfs *fs, struct inode *inode, uint64_t first_lblk, uint64_t count);
int unmap_from(struct ordfs *fs, struct inode *inode, uint64_t first_lblk);

#endif
