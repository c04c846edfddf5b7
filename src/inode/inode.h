/*
 * inode.h - in-memory inodes and the inode table.
 *
 * Owns: struct inode (the in-memory copy of an on-disk inode plus the state
 * that never reaches disk), the inode cache keyed by inode number, and the
 * encoding of inodes into inode table blocks under a handle.
 *
 * Rules:
 *  - inode->lock (rwlock) owns inode->d, the inode's extent tree, its
 *    directory blocks and its page cache.  Readers take it shared, writers
 *    exclusive.  Two inodes are locked in ascending inode number, except
 *    parent-before-child in lookups; directory renames also take
 *    fs-level rename_lock first (see design/locking.md).
 *  - inode->d is authoritative in memory; inode_write() copies it into the
 *    inode table buffer under a handle.  d.size is the on-disk size
 *    (i_disksize): it covers only data whose allocation is recorded.
 *    inode->size is what users see (>= d.size while data is delayed).
 *  - inode_write records the handle's transaction in sync_tid, so fsync
 *    knows which commit it needs; datasync_tid only when more than
 *    timestamps changed (INODE_WRITE_DATASYNC).
 *  - inode->raw_lock (a leaf: nothing is taken under it) owns the inode's
 *    bytes in its inode table buffer: encoding a slot and computing its
 *    checksum happen under it as one step, so two threads that write the
 *    same slot (its owner, and the orphan list linking past it) never mix
 *    their bytes or checksum bytes they did not write (ext4's i_raw_lock).
 *    d.next_orphan is the orphan list's (orphan.h): written holding
 *    orphan_lock and raw_lock, read holding either.
 *
 * Design: docs/design/locking.md (whole inodes), allocation.md (new inodes).
 */
#ifndef ORDFS_INODE_H
#define ORDFS_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"
#include "base/errseq.h"
#include "lock/lock.h"

struct ordfs;
struct handle;
struct page_cache;

struct inode {
	uint32_t ino;
	struct ordfs_rwlock lock;
	struct ordfs_inode d;  /* on-disk fields (inode->lock) */
	uint64_t size;         /* user-visible size (inode->lock) */
	struct ordfs_mutex raw_lock; /* the inode's slot in its table buffer */
	uint64_t sync_tid;     /* last transaction that changed the inode (atomic) */
	uint64_t datasync_tid; /* last transaction that changed more than times (atomic) */
	struct page_cache *pages; /* file data awaiting writeback (pages.h) */
	bool times_dirty;      /* d's timestamps changed since the last inode_write */
	bool atime_dirty;      /* lazytime: d.atime changed, not yet written
				  (inode->lock; atomic, for racy peeks) */
	int64_t atime_dirty_since; /* CLOCK_REALTIME seconds when it first did */
	struct errseq wb_err;  /* write errors of this file's data and commits,
				  reported once per open file description */

	/* fs->orphan_lock: the in-memory orphan list (orphan.h) */
	struct inode *orphan_prev, *orphan_next;
	bool on_orphan_list;   /* also read atomically without the lock */

	/* inode_cache lock */
	uint32_t refs;
	bool evicting;         /* links == 0 and being freed on disk */
	bool unhashed;         /* replaced in the cache by a new inode with the
				  same number, or its read failed (its last put
				  just frees it) */
	bool is_new;           /* being read from its slot, or created, by the
				  thread that cached it (the kernel's I_NEW):
				  inode_get waits, walks of the cache skip it */
	int new_err;           /* that read or creation failed: waiters
				  return this */
	struct inode *hash_next;
};

/* Frees an unlinked inode on disk when its last reference goes (the
 * orphan layer's orphan_evict; the mount gives it, so the cache never
 * calls up into the layers that free blocks).  Called with no handle
 * held [J8] and without the inode's lock (the eviction takes it). */
typedef void (*inode_evict_fn)(struct ordfs *fs, struct inode *inode);

int inode_cache_create(struct ordfs *fs, inode_evict_fn evict, struct inode_cache **out);
/* Frees every cached inode; none may be referenced. */
void inode_cache_destroy(struct inode_cache *ic);

/* Returns the inode with a reference.  -ENOENT if the slot is free (mode 0),
 * -EINVAL if ino is out of range, -EUCLEAN if its checksum is bad. */
int inode_get(struct ordfs *fs, uint32_t ino, struct inode **out);
void inode_hold(struct ordfs *fs, struct inode *inode);
/* Drops a reference.  The last reference to an unlinked inode frees it on
 * disk, which starts handles: never call it holding a handle [J8] -- use
 * INODE_PUT_NO_EVICT there. */
void inode_put(struct ordfs *fs, struct inode *inode);
#define INODE_PUT_NO_EVICT 0x1u
void inode_put_flags(struct ordfs *fs, struct inode *inode, unsigned flags);

#define INODE_WRITE_DATASYNC 0x1u /* more than timestamps changed */
#define INODE_WRITE_CREDITS 1u

/* Encodes inode->d into its inode table block under h. */
int inode_write(struct ordfs *fs, struct handle *h, struct inode *inode, unsigned flags);

/* Sets d.next_orphan and patches only that field (and the checksum) of the
 * inode's slot under h, without reading the rest of d: the orphan list's
 * write to an inode whose lock another thread may hold.  orphan_lock held. */
int inode_write_next_orphan(struct ordfs *fs, struct handle *h, struct inode *inode,
			    uint32_t next);

/* What a new inode starts with.  It is whole before it enters the inode
 * cache: the writeback thread and eviction of unlinked inodes walk the
 * cache, and must not see it half set up (links 0 would even look
 * unlinked). */
struct inode_init {
	uint16_t mode;
	uint32_t uid, gid;
	uint32_t rdev;
	uint32_t links;   /* what the name the caller adds will make it */
	uint32_t parent;  /* directories: the one it is created in */
	uint32_t attr_flags; /* file flags (iflags_inherited from the
				directory); the caller has made sure the
				superblock has their feature */
};

/* Allocates and initialises a new inode and writes it under h.  It is
 * returned new (is_new): nobody else sees it until the caller, done
 * setting it up (its name, symlink target, attributes), calls
 * inode_unlock_new -- the kernel's new inode under I_NEW, which the
 * creator fills without taking its lock (an inode lock may not be taken
 * under a handle). */
int inode_create(struct ordfs *fs, struct handle *h, uint32_t goal,
		 const struct inode_init *init, struct inode **out);
/* Makes a new inode visible; err != 0 says the creation failed: the
 * inode leaves the cache and threads that waited for it get err. */
void inode_unlock_new(struct ordfs *fs, struct inode *inode, int err);

/* Calls fn on every cached inode (each held for the call); stops at the
 * first error and returns it. */
int inode_cache_for_each(struct ordfs *fs, int (*fn)(struct ordfs *, struct inode *, void *),
			 void *ctx);

/* Waits (at most a few seconds) until no eviction runs on another thread;
 * returns at once on a thread that is evicting. */
void inode_wait_evictions(struct ordfs *fs);

/* Frees on disk every cached inode whose link count is 0, whatever still
 * references it (unmount: the kernel's references die with the mount). */
int inode_evict_unlinked(struct ordfs *fs);

/* Reads an inode straight from the table without caching (checker). */
int inode_read_raw(struct ordfs *fs, uint32_t ino, struct ordfs_inode *out);
/* The same, but file-flag bits no ordfs defines are returned in
 * *unknown_flags (left out of out->attr_flags) instead of failing it
 * (ordfs_inode_decode_check): the checker repairs them without losing
 * the file. */
int inode_read_for_check(struct ordfs *fs, uint32_t ino, struct ordfs_inode *out,
			 uint32_t *unknown_flags);

#endif
