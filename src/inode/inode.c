/*
 * inode.c - the inode cache and the inode table.
 *
 * Owns: struct inode lifetime (a hash table keyed by inode number, each
 * entry reference counted), reading and decoding inode table slots, and
 * writing inodes into the table under a handle.  Rules:
 *  - ic->lock guards the hash table and reference counts only; it is never
 *    held across I/O.
 *  - One thread reads an inode's slot: a cache miss enters the inode as
 *    new (is_new) before reading, and other threads that want it wait for
 *    the read, as the kernel's iget_locked does.  Two threads reading the
 *    same slot while a third, holding the first copy, wrote it, was a
 *    data race that could even fail a checksum.
 *  - A created inode enters the cache new, whole (inode_init), before its
 *    slot is written and after any read of that (free) slot has finished;
 *    it stays new until its creator has set it up (inode_unlock_new).
 *  - Walks of the cache skip new inodes: their fields are not theirs yet.
 *  - An inode whose last reference goes away is dropped from memory unless
 *    it still has data waiting for writeback (its pages keep it then).
 *  - The last reference to an unlinked inode frees it on disk through the
 *    eviction hook the cache was created with (orphan_evict).
 *  - An all-zero slot or a slot with mode 0 is a free inode (-ENOENT).
 *  - The inode bitmap is not trusted alone (issue 36): a number it hands
 *    out is used only if its slot is free on disk and no live inode is
 *    cached under it; otherwise the create fails with -EUCLEAN, the bit
 *    stays set (so the number is not offered again) and one line names
 *    the inode.  design/allocation.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "fs.h"
#include "iflags.h"
#include "inode.h"
#include "pages.h"
#include "alloc/alloc.h"
#include "cache/bcache.h"
#include "journal/journal.h"
#include "base/log.h"
#include "base/ordfs_assert.h"
#include "lock/lock.h"

/* The hash table starts with 2^12 chains and doubles whenever it holds
 * more than two inodes per chain, up to 2^24 chains: a lookup walks a
 * chain of about two whether the kernel keeps a thousand inodes referenced
 * or ten million (a fixed 4096 made a million cached inodes cost 250 steps
 * a lookup, and each of the kernel's forgets as many). */
#define ICACHE_MIN_SHIFT 12u
#define ICACHE_MAX_SHIFT 24u

struct inode_cache {
	struct ordfs *fs;
	inode_evict_fn evict;        /* frees an unlinked inode on disk */
	struct ordfs_mutex lock;
	struct inode **table;        /* 2^shift chains */
	uint32_t shift;
	uint64_t count;
	uint32_t evictions_running;  /* lock */
	pthread_cond_t evictions_done;
	pthread_cond_t new_done;     /* an inode stopped being new */
};

/* Set while this thread runs an eviction (it must not wait for itself). */
static __thread bool evicting_here;

int inode_cache_create(struct ordfs *fs, inode_evict_fn evict, struct inode_cache **out)
{
	struct inode_cache *ic = calloc(1, sizeof(*ic));
	if (!ic)
		return -ENOMEM;
	ic->shift = ICACHE_MIN_SHIFT;
	ic->table = calloc(1u << ic->shift, sizeof(*ic->table));
	if (!ic->table) {
		free(ic);
		return -ENOMEM;
	}
	ic->fs = fs;
	ic->evict = evict;
	ordfs_mutex_init(&ic->lock, LOCK_ICACHE, "inode cache lock");
	pthread_cond_init(&ic->evictions_done, NULL);
	pthread_cond_init(&ic->new_done, NULL);
	*out = ic;
	return 0;
}

static void inode_free(struct inode *inode)
{
	pages_destroy(inode);
	ordfs_mutex_destroy(&inode->raw_lock);
	errseq_destroy(&inode->wb_err);
	ordfs_rwlock_destroy(&inode->lock);
	free(inode);
}

void inode_cache_destroy(struct inode_cache *ic)
{
	if (!ic)
		return;
	for (uint32_t i = 0; i < (1u << ic->shift); i++) {
		struct inode *inode = ic->table[i];
		while (inode) {
			struct inode *next = inode->hash_next;
			inode_free(inode);
			inode = next;
		}
	}
	ordfs_mutex_destroy(&ic->lock);
	pthread_cond_destroy(&ic->evictions_done);
	pthread_cond_destroy(&ic->new_done);
	free(ic->table);
	free(ic);
}

/* The low `shift` bits of ino times an odd constant: consecutive numbers
 * never share a chain.  (Walks of the cache go chain by chain, so this
 * order is also the order writeback meets inodes in, which decides where
 * delayed blocks land; tests/fsck-cases' expected outputs name them.) */
static uint32_t chain_of(uint32_t ino, uint32_t shift)
{
	return (ino * 2654435761u) & ((1u << shift) - 1);
}

static struct inode **slot_of(struct inode_cache *ic, uint32_t ino)
{
	return &ic->table[chain_of(ino, ic->shift)];
}

/* Doubles the chains when they average more than two inodes; a table that
 * cannot be allocated just keeps its chains longer.  ic->lock. */
static void maybe_grow(struct inode_cache *ic)
{
	if (ic->shift >= ICACHE_MAX_SHIFT || ic->count <= (2ull << ic->shift))
		return;
	uint32_t shift = ic->shift + 1;
	struct inode **table = calloc(1u << shift, sizeof(*table));
	if (!table)
		return;
	for (uint32_t i = 0; i < (1u << ic->shift); i++) {
		struct inode *inode = ic->table[i];
		while (inode) {
			struct inode *next = inode->hash_next;
			struct inode **slot = &table[chain_of(inode->ino, shift)];
			inode->hash_next = *slot;
			*slot = inode;
			inode = next;
		}
	}
	free(ic->table);
	ic->table = table;
	ic->shift = shift;
}

static struct inode *cache_find(struct inode_cache *ic, uint32_t ino)
{
	for (struct inode *i = *slot_of(ic, ino); i; i = i->hash_next)
		if (i->ino == ino)
			return i;
	return NULL;
}

static bool slot_is_zero(const uint8_t *raw)
{
	for (uint32_t i = 0; i < ORDFS_INODE_SIZE; i++)
		if (raw[i])
			return false;
	return true;
}

int inode_read_raw(struct ordfs *fs, uint32_t ino, struct ordfs_inode *out)
{
	uint32_t unknown;
	int err = inode_read_for_check(fs, ino, out, &unknown);
	return err ? err : unknown ? -EUCLEAN : 0;
}

int inode_read_for_check(struct ordfs *fs, uint32_t ino, struct ordfs_inode *out,
			 uint32_t *unknown_flags)
{
	*unknown_flags = 0;
	if (ino == 0 || ino > fs->sb.inode_count)
		return -EINVAL;
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&fs->sb, ino, &blk, &off);

	struct buf *b;
	int err = bcache_read(fs->cache, blk, &b);
	if (err)
		return err;
	if (slot_is_zero(b->data + off))
		err = -ENOENT;
	else
		err = ordfs_inode_decode_check(b->data + off, ino, fs->csum_seed, out,
					       unknown_flags);
	if (!err && out->mode == 0)
		err = -ENOENT;
	bcache_put(fs->cache, b);
	return err;
}

static struct inode *inode_alloc_mem(uint32_t ino)
{
	struct inode *inode = calloc(1, sizeof(*inode));
	if (!inode)
		return NULL;
	inode->ino = ino;
	ordfs_rwlock_init(&inode->lock, LOCK_INODE, "inode lock");
	ordfs_mutex_init(&inode->raw_lock, LOCK_INODE_RAW, "inode raw_lock");
	errseq_init(&inode->wb_err);
	return inode;
}

/* Takes the chain entry of `inode` out of the hash table.  ic->lock. */
static void cache_unhash(struct inode_cache *ic, struct inode *inode)
{
	struct inode **pp = slot_of(ic, inode->ino);
	while (*pp != inode)
		pp = &(*pp)->hash_next;
	*pp = inode->hash_next;
	inode->unhashed = true;
	ic->count--;
}

static void cache_hash(struct inode_cache *ic, struct inode *inode)
{
	struct inode **slot = slot_of(ic, inode->ino);
	inode->hash_next = *slot;
	*slot = inode;
	ic->count++;
	maybe_grow(ic);
}

/* Waits until the cached `have` (held) is no longer new; 0, or the error
 * its reader or creator met, with the reference dropped (*free_it: the
 * caller frees it, unlocked).  ic->lock. */
static int wait_not_new(struct inode_cache *ic, struct inode *have, bool *free_it)
{
	*free_it = false;
	while (have->is_new)
		ordfs_cond_wait(&ic->new_done, &ic->lock);
	if (!have->new_err)
		return 0;
	*free_it = --have->refs == 0;
	return have->new_err;
}

/* Ends the new state of `inode`; on err it leaves the hash table and
 * waiters get err.  ic->lock. */
static void end_new(struct inode_cache *ic, struct inode *inode, int err)
{
	ORDFS_ASSERT(inode->is_new);
	inode->is_new = false;
	if (err) {
		inode->new_err = err;
		if (!inode->unhashed)
			cache_unhash(ic, inode);
	}
	pthread_cond_broadcast(&ic->new_done);
}

void inode_unlock_new(struct ordfs *fs, struct inode *inode, int err)
{
	ordfs_mutex_lock(&fs->icache->lock);
	end_new(fs->icache, inode, err);
	ordfs_mutex_unlock(&fs->icache->lock);
}

int inode_get(struct ordfs *fs, uint32_t ino, struct inode **out)
{
	struct inode_cache *ic = fs->icache;
	struct inode *fresh = NULL;

	ordfs_mutex_lock(&ic->lock);
	for (;;) {
		struct inode *have = cache_find(ic, ino);
		if (have) {
			have->refs++;
			bool free_it;
			int err = wait_not_new(ic, have, &free_it);
			ordfs_mutex_unlock(&ic->lock);
			if (free_it)
				inode_free(have);
			if (fresh)
				inode_free(fresh);
			if (!err)
				*out = have;
			return err;
		}
		if (fresh)
			break;
		ordfs_mutex_unlock(&ic->lock);
		fresh = inode_alloc_mem(ino);
		if (!fresh)
			return -ENOMEM;
		ordfs_mutex_lock(&ic->lock);
	}
	fresh->is_new = true;
	fresh->refs = 1;
	cache_hash(ic, fresh);
	ordfs_mutex_unlock(&ic->lock);

	uint32_t unknown_flags;
	int err = inode_read_for_check(fs, ino, &fresh->d, &unknown_flags);
	/* File-flag bits no ordfs defines make the inode corrupt, except in
	 * the checker's own mount, which reads past them (its pass 1 reports
	 * them; the repair strips them) so the other passes see the file. */
	if (!err && unknown_flags && !fs->opts.check_mode)
		err = -EUCLEAN;
	/* An inode whose last link went leaves its name and joins the orphan
	 * list in one transaction, so one read with no link that is not an
	 * orphan was never unlinked: its link count is damaged, and the
	 * eviction that its FORGET would bring must not free a file that
	 * still has a name (fsck sets the count from the names it finds). */
	if (!err && fresh->d.links == 0 && !(fresh->d.flags & ORDFS_INODE_ORPHAN) &&
	    !fs->opts.check_mode && !fs->opts.fsck_repair) {
		ordfs_log(LOG_ERR, "inode %u has no link and is not an orphan: its link count is "
			  "damaged (run fsck.ordfs)", ino);
		err = -EUCLEAN;
	}
	if (!err) {
		fresh->size = fresh->d.size;
		/* What changed this inode before it was last dropped from
		 * memory may not be committed yet (or may wait for a retry):
		 * fsync must wait for the running transaction, like ext4's
		 * iget. */
		if (fs->journal)
			fresh->sync_tid = fresh->datasync_tid = journal_running_tid(fs->journal);
	}

	ordfs_mutex_lock(&ic->lock);
	end_new(ic, fresh, err);
	bool free_it = err && --fresh->refs == 0;
	ordfs_mutex_unlock(&ic->lock);
	if (free_it)
		inode_free(fresh);
	if (!err)
		*out = fresh;
	return err;
}

void inode_hold(struct ordfs *fs, struct inode *inode)
{
	ordfs_mutex_lock(&fs->icache->lock);
	inode->refs++;
	ordfs_mutex_unlock(&fs->icache->lock);
}

/* Runs an eviction that the caller counted in evictions_running. */
static void evict(struct ordfs *fs, struct inode *inode)
{
	struct inode_cache *ic = fs->icache;
	bool outer = !evicting_here;
	evicting_here = true;
	ic->evict(fs, inode);
	evicting_here = !outer;
	ordfs_mutex_lock(&ic->lock);
	ORDFS_ASSERT_CHEAP(ic->evictions_running > 0);
	if (--ic->evictions_running == 0)
		pthread_cond_broadcast(&ic->evictions_done);
	ordfs_mutex_unlock(&ic->lock);
}

void inode_wait_evictions(struct ordfs *fs)
{
	struct inode_cache *ic = fs->icache;
	if (evicting_here)
		return;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	ordfs_mutex_lock(&ic->lock);
	while (ic->evictions_running > 0 &&
	       ordfs_cond_timedwait(&ic->evictions_done, &ic->lock, &until) == 0)
		;
	ordfs_mutex_unlock(&ic->lock);
}

void inode_put(struct ordfs *fs, struct inode *inode)
{
	inode_put_flags(fs, inode, 0);
}

void inode_put_flags(struct ordfs *fs, struct inode *inode, unsigned flags)
{
	struct inode_cache *ic = fs->icache;

	ordfs_mutex_lock(&ic->lock);
	if (inode->refs == 0)
		abort(); /* reference underflow: a bug, never continue */
	/* What only memory holds keeps a linked inode cached until writeback
	 * writes it: dirty data, a size not yet in d.size (a truncate up or a
	 * write past the end with its pages gone: punched, or written back
	 * before the size could follow), timestamps, a lazily kept atime.
	 * Dropped here, the next lookup would read the older inode from disk
	 * (fsx found the size going back after the kernel forgot the file).
	 * An unlinked inode's state is thrown away by its eviction.  Every
	 * change of these was made by a thread that then put its reference,
	 * under ic->lock like this read. */
	if (--inode->refs > 0 ||
	    ((pages_has_dirty(inode) || inode->size != inode->d.size || inode->times_dirty ||
	      __atomic_load_n(&inode->atime_dirty, __ATOMIC_RELAXED)) &&
	     inode->d.links > 0)) {
		ordfs_mutex_unlock(&ic->lock);
		return;
	}
	if (inode->d.links == 0 && (flags & INODE_PUT_NO_EVICT)) {
		/* Stays cached (and on the orphan list) for a later put, the
		 * unmount or the next mount. */
		ordfs_mutex_unlock(&ic->lock);
		return;
	}
	if (__atomic_load_n(&inode->on_orphan_list, __ATOMIC_ACQUIRE) &&
	    (inode->evicting || inode->d.links > 0)) {
		/* The in-memory orphan list points at it: an eviction or a
		 * truncate that failed left it there for the next mount. */
		ordfs_mutex_unlock(&ic->lock);
		return;
	}
	if (inode->d.links == 0 && inode->d.mode != 0 && !inode->evicting && fs->journal) {
		/* Last reference to an unlinked inode: free it on disk.  Callers
		 * never hold a handle here [J8]. */
		inode->evicting = true;
		inode->refs++;
		ic->evictions_running++;
		ordfs_mutex_unlock(&ic->lock);
		evict(fs, inode);
		inode_put(fs, inode);
		return;
	}
	if (!inode->unhashed)
		cache_unhash(ic, inode);
	ordfs_mutex_unlock(&ic->lock);
	inode_free(inode);
}

/* Inserts a just-created inode, whole, before its slot is written.  Its
 * number was free on disk, so an entry still cached under it is either a
 * dying inode (freed by an eviction that has not dropped its last
 * reference yet: the new inode takes its place and the old one is freed by
 * its own last put) or a read of the free slot through a stale number,
 * which is let finish first (it fails with -ENOENT and leaves).  Anything
 * else cached under the number is a live inode whose bit a damaged bitmap
 * has clear: -EUCLEAN, nothing inserted (replacing it would leave the
 * kernel's references on the old struct counted on the new one: the
 * "reference underflow" of a later FORGET). */
static int cache_insert_new(struct inode_cache *ic, struct inode *fresh)
{
	ordfs_mutex_lock(&ic->lock);
	struct inode *old;
	while ((old = cache_find(ic, fresh->ino)) && old->is_new)
		ordfs_cond_wait(&ic->new_done, &ic->lock);
	if (old && !old->evicting) {
		ordfs_mutex_unlock(&ic->lock);
		return -EUCLEAN;
	}
	if (old)
		cache_unhash(ic, old);
	fresh->is_new = true;
	fresh->refs = 1;
	cache_hash(ic, fresh);
	ordfs_mutex_unlock(&ic->lock);
	return 0;
}

/* Is a live inode (not new, not dying) cached under ino? */
static bool cached_live(struct inode_cache *ic, uint32_t ino)
{
	ordfs_mutex_lock(&ic->lock);
	struct inode *have = cache_find(ic, ino);
	bool live = have && !have->is_new && !have->evicting;
	ordfs_mutex_unlock(&ic->lock);
	return live;
}

/* Is the slot of ino free on disk (all zero, or mode 0: FORMAT.md)?  Read
 * through the buffer cache, so it sees what handles not yet committed
 * wrote (an eviction zeroes the slot before it frees the number).  The
 * number is ours (its bit set under the allocator's lock), so nobody else
 * writes the slot meanwhile.  An unreadable block is not free. */
static int slot_free(struct ordfs *fs, uint32_t ino, bool *free_out)
{
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&fs->sb, ino, &blk, &off);
	struct buf *b;
	int err = bcache_read(fs->cache, blk, &b);
	if (err)
		return err;
	*free_out = le_get16(b->data + off) == 0; /* mode */
	bcache_put(fs->cache, b);
	return 0;
}

/* The bitmap said ino was free and it is not: its bit stays set (alloc_inode
 * set it under h, so it is never handed out again, and the commit records
 * it), one line names it, and the caller's request fails with -EUCLEAN,
 * which the errors= policy sees once the handle is closed [J8]. */
static int inode_in_use_contradiction(uint32_t ino, const char *where)
{
	ordfs_log(LOG_ERR, "inode %u is in use (%s) but free in the inode bitmap: "
		  "marked in use, not reused (run fsck.ordfs)", ino, where);
	return -EUCLEAN;
}

int inode_cache_for_each(struct ordfs *fs, int (*fn)(struct ordfs *, struct inode *, void *),
			 void *ctx)
{
	struct inode_cache *ic = fs->icache;
	uint32_t cap = 0, n = 0;
	struct inode **list = NULL;

	ordfs_mutex_lock(&ic->lock);
	cap = (uint32_t)ic->count;
	list = malloc((cap ? cap : 1) * sizeof(*list));
	if (!list) {
		ordfs_mutex_unlock(&ic->lock);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < (1u << ic->shift); i++) {
		for (struct inode *inode = ic->table[i]; inode; inode = inode->hash_next) {
			if (inode->is_new)
				continue;
			inode->refs++;
			list[n++] = inode;
		}
	}
	ordfs_mutex_unlock(&ic->lock);

	int err = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!err)
			err = fn(fs, list[i], ctx);
		inode_put(fs, list[i]);
	}
	free(list);
	return err;
}

/* The inode's table buffer, joined to h's transaction; *off is the slot. */
static int slot_for_write(struct ordfs *fs, struct handle *h, const struct inode *inode,
			  struct buf **out, uint32_t *off)
{
	uint64_t blk;
	ordfs_inode_location(&fs->sb, inode->ino, &blk, off);
	struct buf *b;
	int err = bcache_read(fs->cache, blk, &b);
	if (err)
		return err;
	err = journal_get_write_access(h, b, 0);
	if (err) {
		bcache_put(fs->cache, b);
		return err;
	}
	*out = b;
	return 0;
}

int inode_write(struct ordfs *fs, struct handle *h, struct inode *inode, unsigned flags)
{
	struct buf *b;
	uint32_t off;
	int err = slot_for_write(fs, h, inode, &b, &off);
	if (err)
		return err;
	/* A bit no ordfs defines would make the slot corrupt. */
	ORDFS_ASSERT_CHEAP(!(inode->d.attr_flags & ~ORDFS_FL_KNOWN));
	ordfs_mutex_lock(&inode->raw_lock);
	ordfs_inode_encode(&inode->d, inode->ino, fs->csum_seed, b->data + off);
	ordfs_mutex_unlock(&inode->raw_lock);
	bcache_put(fs->cache, b);
	inode->times_dirty = false;
	/* d.atime went with the rest */
	__atomic_store_n(&inode->atime_dirty, false, __ATOMIC_RELAXED);
	uint64_t tid = journal_handle_tid(h);
	__atomic_store_n(&inode->sync_tid, tid, __ATOMIC_RELAXED);
	if (flags & INODE_WRITE_DATASYNC)
		__atomic_store_n(&inode->datasync_tid, tid, __ATOMIC_RELAXED);
	return 0;
}

int inode_write_next_orphan(struct ordfs *fs, struct handle *h, struct inode *inode,
			    uint32_t next)
{
	struct buf *b;
	uint32_t off;
	int err = slot_for_write(fs, h, inode, &b, &off);
	if (err)
		return err;
	ordfs_mutex_lock(&inode->raw_lock);
	inode->d.next_orphan = next;
	ordfs_inode_patch_next_orphan(b->data + off, inode->ino, fs->csum_seed, next);
	ordfs_mutex_unlock(&inode->raw_lock);
	bcache_put(fs->cache, b);
	return 0;
}

int inode_create(struct ordfs *fs, struct handle *h, uint32_t goal,
		 const struct inode_init *init, struct inode **out)
{
	uint32_t ino;
	int err = alloc_inode(fs->alloc, h, goal, &ino);
	if (err)
		return err;
	/* The bitmap is not trusted alone: a live inode cached under the
	 * number (looked at first: its owner may be writing its slot), or a
	 * slot in use, keeps its number. */
	if (cached_live(fs->icache, ino))
		return inode_in_use_contradiction(ino, "cached and live");
	bool free_slot;
	err = slot_free(fs, ino, &free_slot);
	if (!err && !free_slot)
		return inode_in_use_contradiction(ino, "its slot has a mode");
	if (err) {
		alloc_free_inode(fs->alloc, h, ino);
		return err;
	}

	struct inode *fresh = inode_alloc_mem(ino);
	if (!fresh) {
		alloc_free_inode(fs->alloc, h, ino);
		return -ENOMEM;
	}
	struct ordfs_timespec now = ordfs_now();
	fresh->d.mode = init->mode;
	fresh->d.uid = init->uid;
	fresh->d.gid = init->gid;
	fresh->d.rdev = init->rdev;
	fresh->d.links = init->links;
	fresh->d.parent = init->parent;
	ORDFS_ASSERT(!(init->attr_flags & ~iflags_allowed(init->mode)));
	fresh->d.attr_flags = init->attr_flags;
	fresh->d.atime = fresh->d.mtime = fresh->d.ctime = fresh->d.crtime = now;
	if (getrandom(&fresh->d.generation, sizeof(fresh->d.generation), GRND_NONBLOCK) < 0)
		fresh->d.generation = (uint32_t)now.nsec ^ ino;
	ordfs_extent_root_init(fresh->d.data);

	if (cache_insert_new(fs->icache, fresh) != 0) {
		inode_free(fresh);
		return inode_in_use_contradiction(ino, "cached and live");
	}
	err = inode_write(fs, h, fresh, INODE_WRITE_DATASYNC);
	if (err) {
		/* Never on disk: out of the cache, and its last put (maybe by
		 * whoever waited for it through a stale number) only frees
		 * memory. */
		alloc_free_inode(fs->alloc, h, ino);
		fresh->d.links = 0;
		fresh->d.mode = 0;
		inode_unlock_new(fs, fresh, -ENOENT);
		inode_put(fs, fresh);
		return err;
	}
	*out = fresh;
	return 0;
}

static int evict_if_unlinked(struct ordfs *fs, struct inode *inode, void *ctx)
{
	(void)ctx;
	ordfs_mutex_lock(&fs->icache->lock);
	bool do_evict = inode->d.links == 0 && inode->d.mode != 0 && !inode->evicting &&
		     !inode->unhashed;
	if (do_evict) {
		inode->evicting = true;
		fs->icache->evictions_running++;
	}
	ordfs_mutex_unlock(&fs->icache->lock);
	if (do_evict)
		evict(fs, inode);
	return 0;
}

int inode_evict_unlinked(struct ordfs *fs)
{
	return inode_cache_for_each(fs, evict_if_unlinked, NULL);
}
