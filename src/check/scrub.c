/*
 * scrub.c - the online scrub (see scrub.h for what it checks and its
 * rules).  Three passes over the live filesystem, the first two in one
 * walk of the inode numbers (pass_inodes):
 *   1. inode slots against the inode bitmap (no lock makes a slot and its
 *      bit change together for an observer, so a contradiction is a
 *      suspect, read again after a commit: confirm_inode_suspects);
 *   2. each inode in use under its lock: tree, blocks, bitmap bits,
 *      directory entries; every block is claimed in a bit map, a block
 *      claimed twice is a suspect;
 *   3. the owners of the suspects are found (a walk of every inode again,
 *      looking only for them) and each pair confirmed with both locks
 *      held (the second only tried: confirm_cross_link): a block freed by one inode and taken by another between two
 *      visits is no cross-link, one both trees map at the same moment is.
 * Memory: a bit per block and a bit per inode, plus the suspects.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "scrub.h"
#include "../fs.h"
#include "../alloc/alloc.h"
#include "../dir/dir.h"
#include "../extent/extent.h"
#include "../super/super.h"
#include "inode/inode.h"
#include "base/log.h"
#include "base/ordfs_assert.h"
#include "lock/lock.h"

struct u64vec {
	uint64_t *v;
	size_t n, cap;
};

static int u64vec_push(struct u64vec *vec, uint64_t x)
{
	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 64;
		uint64_t *v = realloc(vec->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = x;
	return 0;
}

struct scrubber {
	struct ordfs *fs;
	struct scrub_result *res;
	uint64_t block_count;  /* at the start (a grow only adds blocks) */
	uint32_t inode_count;
	uint8_t *claimed;      /* pass 2: bit per block mapped by an inode */
	uint8_t *in_use;       /* pass 1: bit per inode (bit i = inode i + 1) */
	struct u64vec dup_blocks;   /* pass 2: blocks claimed twice */
	struct u64vec ino_suspects; /* pass 1: inodes to read again */
	/* per inode */
	uint32_t cur_ino;
	bool cur_bad;          /* a problem already reported for it */
	uint64_t cur_blocks;   /* blocks it maps (tree, data, xattr) */
	/* pass 3 */
	struct u64vec owners;  /* (block << 32 | ino) of suspect blocks' owners */
	uint64_t hunt_block;   /* confirm: the block looked for */
	uint32_t hunt_hits;    /* ... and how often the tree maps it */
	int err;               /* out of memory */
};

static void scrub_problem(struct scrubber *s, enum check_problem code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void scrub_problem(struct scrubber *s, enum check_problem code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->res->problems++;
	ordfs_log(LOG_ERR, "scrub: %s", msg);
	if (s->res->report)
		s->res->report(s->res->ctx, code, msg);
}

static bool bit_test_set(uint8_t *map, uint64_t i)
{
	uint8_t mask = (uint8_t)(1u << (i % 8));
	bool was = map[i / 8] & mask;
	map[i / 8] |= mask;
	return was;
}

static bool bit_get(const uint8_t *map, uint64_t i)
{
	return (map[i / 8] >> (i % 8)) & 1;
}

/* Lets the requests beside the scrub go first. */
static void give_way(void)
{
	sched_yield();
}

/* ---- pass 1: inode slots and the inode bitmap --------------------------- */

enum slot_state { SLOT_OK, SLOT_CORRUPT, SLOT_USED_UNMARKED, SLOT_MARKED_EMPTY };

/* The state of inode ino's slot against its bitmap bit; *used: it holds
 * an inode, and then with `keep` the reference is handed over in *keep.
 * Read through the inode cache (inode_get), never from the table buffer
 * directly: a cached inode is rewritten in its slot under its raw_lock,
 * so a bare read could see it half written, while the cache hands out its
 * copy, or reads an uncached slot as its only reader (design/locking.md,
 * "Locking": the cache hands out only whole inodes). */
static enum slot_state slot_state(struct scrubber *s, uint32_t ino, bool *used,
				  struct inode **keep)
{
	*used = false;
	if (ino == 1) /* reserved: marked, its slot never read */
		return alloc_inode_in_use(s->fs->alloc, ino) ? SLOT_OK : SLOT_MARKED_EMPTY;
	struct inode *inode;
	int err = inode_get(s->fs, ino, &inode);
	bool marked = alloc_inode_in_use(s->fs->alloc, ino);
	if (!err) {
		/* Under its lock: an inode the kernel forgets while we hold it
		 * is evicted by the last put, which zeroes d under the lock
		 * (ThreadSanitizer saw the bare read race with orphan_evict). */
		ordfs_rwlock_rdlock(&inode->lock);
		*used = inode->d.mode != 0;
		ordfs_rwlock_unlock(&inode->lock);
		if (*used && keep)
			*keep = inode;
		else
			inode_put(s->fs, inode);
	} else if (err != -ENOENT) {
		return SLOT_CORRUPT; /* damaged, or its block unreadable */
	}
	if (*used && !marked)
		return SLOT_USED_UNMARKED;
	if (!*used && marked)
		return SLOT_MARKED_EMPTY;
	return SLOT_OK;
}

/* A slot and its bit change in one handle, in two steps another thread
 * may see between: what pass 1 suspected is read again once every handle
 * open then has closed and committed. */
static void confirm_inode_suspects(struct scrubber *s)
{
	if (!s->ino_suspects.n)
		return;
	if (s->fs->journal)
		(void)journal_force_commit(s->fs->journal);
	for (size_t i = 0; i < s->ino_suspects.n; i++) {
		uint32_t ino = (uint32_t)s->ino_suspects.v[i];
		bool used;
		switch (slot_state(s, ino, &used, NULL)) {
		case SLOT_OK:
			break;
		case SLOT_CORRUPT:
			scrub_problem(s, CHK_INODE_CORRUPT, "inode %u is corrupt", ino);
			break;
		case SLOT_USED_UNMARKED:
			scrub_problem(s, CHK_INODE_BITMAP,
				      "inode %u is in use but the inode bitmap says free", ino);
			break;
		case SLOT_MARKED_EMPTY:
			scrub_problem(s, CHK_INODE_BITMAP,
				      "inode %u is free but the inode bitmap says in use", ino);
			break;
		}
	}
}

/* ---- pass 2: each inode in use, under its lock -------------------------- */

/* Blocks [start, start + len) mapped by the current inode (data when
 * `data`, else a tree or xattr block): in the data area, no group bitmap
 * block, marked in the block bitmap, and claimed (a second claim is a
 * suspect for pass 3). */
static void claim(struct scrubber *s, uint64_t start, uint64_t len, const char *what)
{
	/* the extent verifier's rule, at the size now: an online grow beside
	 * the scrub adds blocks, and makes the old backup superblock's a
	 * data block */
	if (!ordfs_in_data_area(&s->fs->sb, fs_block_count(s->fs), start, len)) {
		scrub_problem(s, CHK_BLOCK_RANGE, "inode %u: %s %llu+%llu outside the data area",
			      s->cur_ino, what, (unsigned long long)start, (unsigned long long)len);
		s->cur_bad = true;
		return;
	}
	s->cur_blocks += len;
	s->res->blocks += len;
	uint64_t unmarked = alloc_first_unmarked(s->fs->alloc, start, len);
	if (unmarked != UINT64_MAX) /* one line per extent */
		scrub_problem(s, CHK_BLOCK_BITMAP,
			      "inode %u maps %s block %llu, which the block bitmap says is free",
			      s->cur_ino, what, (unsigned long long)unmarked);
	for (uint64_t b = start; b < start + len && b < s->block_count; b++)
		if (bit_test_set(s->claimed, b) && u64vec_push(&s->dup_blocks, b))
			s->err = -ENOMEM; /* (blocks a grow added are not cross-checked) */
}

static int node_claim(void *ctx, uint64_t blockno, unsigned depth, int bad)
{
	struct scrubber *s = ctx;
	(void)depth;
	if (bad) {
		scrub_problem(s, CHK_EXTENT_TREE, "inode %u: bad extent tree block %llu", s->cur_ino,
			      (unsigned long long)blockno);
		s->cur_bad = true;
		return 0;
	}
	claim(s, blockno, 1, "extent tree");
	return 0;
}

static int extent_claim(void *ctx, const struct ordfs_extent *e)
{
	struct scrubber *s = ctx;
	claim(s, e->physical, e->len, "data");
	return 0;
}

struct dir_scrub {
	struct scrubber *s;
	uint32_t dir;
};

static int entry_check(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype)
{
	struct dir_scrub *ds = ctx;
	struct scrubber *s = ds->s;
	int n = len > 64 ? 64 : (int)len;
	(void)dtype;
	if (ino == ds->dir)
		scrub_problem(s, CHK_DIR_ENTRY, "dir %u: entry '%.*s' names the directory itself",
			      ds->dir, n, name);
	else if (ino < ORDFS_ROOT_INO || ino > s->inode_count)
		scrub_problem(s, CHK_DIR_ENTRY, "dir %u: entry '%.*s' names inode %u, out of range",
			      ds->dir, n, name, ino);
	/* Under the directory's lock its entries are stable, and an inode
	 * with a name is never freed: the bit must be set. */
	else if (!alloc_inode_in_use(s->fs->alloc, ino))
		scrub_problem(s, CHK_DIR_ENTRY, "dir %u: entry '%.*s' names free inode %u", ds->dir,
			      n, name, ino);
	return 0;
}

static void dir_problem(void *ctx, uint64_t lblk, const char *what)
{
	struct dir_scrub *ds = ctx;
	scrub_problem(ds->s, CHK_DIR_STRUCT, "dir %u block %llu: %s", ds->dir,
		      (unsigned long long)lblk, what);
}

static void scrub_inode(struct scrubber *s, struct inode *inode)
{
	s->cur_ino = inode->ino;
	s->cur_bad = false;
	s->cur_blocks = 0;
	s->res->inodes++;
	if (inode->d.xattr_block)
		claim(s, inode->d.xattr_block, 1, "xattr");
	if (!(inode->d.flags & ORDFS_INODE_FAST_SYMLINK)) {
		struct extent_walk_ops ops = { node_claim, extent_claim, s };
		int err = extent_walk(s->fs, inode, &ops);
		if (err && !s->cur_bad)
			scrub_problem(s, CHK_EXTENT_TREE, "inode %u: extent tree unreadable (%s)",
				      inode->ino, strerror(-err));
		if (err)
			return;
	}
	/* d.blocks changes with the tree, under the same lock */
	if (!s->cur_bad && s->cur_blocks != inode->d.blocks)
		scrub_problem(s, CHK_BLOCK_COUNT, "inode %u: blocks count %llu, maps %llu",
			      inode->ino, (unsigned long long)inode->d.blocks,
			      (unsigned long long)s->cur_blocks);
	if (S_ISDIR(inode->d.mode)) {
		s->res->dirs++;
		struct dir_scrub ds = { s, inode->ino };
		struct dir_verify_ops ops = { entry_check, dir_problem, &ds };
		(void)dir_verify(s->fs, inode, &ops); /* problems reported as found */
	}
}

/* Passes 1 and 2 in one walk of the inode numbers: each slot against its
 * bit, and each inode in use scrubbed under its lock with the reference
 * that read it. */
static void pass_inodes(struct scrubber *s)
{
	for (uint32_t ino = 1; ino <= s->inode_count && !s->err; ino++) {
		bool used;
		struct inode *inode = NULL;
		enum slot_state st = slot_state(s, ino, &used, &inode);
		if (st != SLOT_OK && u64vec_push(&s->ino_suspects, ino))
			s->err = -ENOMEM;
		if (inode) {
			bit_test_set(s->in_use, ino - 1);
			ordfs_rwlock_rdlock(&inode->lock);
			if (inode->d.mode) /* not freed while we waited */
				scrub_inode(s, inode);
			ordfs_rwlock_unlock(&inode->lock);
			inode_put(s->fs, inode);
			give_way();
		} else if ((ino & 255) == 0) {
			give_way();
		}
	}
}

/* ---- pass 3: cross-links confirmed -------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Is any suspect block in [start, start + len)?  The first one or, with
 * none, UINT64_MAX. */
static uint64_t first_suspect(const struct scrubber *s, uint64_t start, uint64_t len)
{
	size_t lo = 0, hi = s->dup_blocks.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->dup_blocks.v[mid] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->dup_blocks.n && s->dup_blocks.v[lo] - start < len ? s->dup_blocks.v[lo]
									  : UINT64_MAX;
}

static void note_owner(struct scrubber *s, uint64_t start, uint64_t len)
{
	if (start >= s->block_count || len > s->block_count - start)
		return;
	for (uint64_t b = first_suspect(s, start, len); b != UINT64_MAX;
	     b = b + 1 < start + len ? first_suspect(s, b + 1, start + len - b - 1) : UINT64_MAX)
		if (u64vec_push(&s->owners, b << 32 | s->cur_ino))
			s->err = -ENOMEM;
}

static int node_owner(void *ctx, uint64_t blockno, unsigned depth, int bad)
{
	(void)depth;
	if (!bad)
		note_owner(ctx, blockno, 1);
	return 0;
}

static int extent_owner(void *ctx, const struct ordfs_extent *e)
{
	note_owner(ctx, e->physical, e->len);
	return 0;
}

/* Notes the inode as an owner of each suspect block it maps (its lock
 * held). */
static void note_owners(struct scrubber *s, struct inode *inode)
{
	if (inode->d.xattr_block)
		note_owner(s, inode->d.xattr_block, 1);
	if (inode->d.flags & ORDFS_INODE_FAST_SYMLINK)
		return;
	struct extent_walk_ops ops = { node_owner, extent_owner, s };
	(void)extent_walk(s->fs, inode, &ops);
}

static int node_hunt(void *ctx, uint64_t blockno, unsigned depth, int bad)
{
	struct scrubber *s = ctx;
	(void)depth;
	s->hunt_hits += !bad && blockno == s->hunt_block;
	return 0;
}

static int extent_hunt(void *ctx, const struct ordfs_extent *e)
{
	struct scrubber *s = ctx;
	s->hunt_hits += s->hunt_block - e->physical < e->len;
	return 0;
}

/* How often inode maps block b right now (its lock held). */
static uint32_t maps_now(struct scrubber *s, struct inode *inode, uint64_t b)
{
	s->hunt_block = b;
	s->hunt_hits = inode->d.xattr_block == b;
	if (!(inode->d.flags & ORDFS_INODE_FAST_SYMLINK)) {
		struct extent_walk_ops ops = { node_hunt, extent_hunt, s };
		(void)extent_walk(s->fs, inode, &ops);
	}
	return s->hunt_hits;
}

#define CONFIRM_TRIES 1000 /* a millisecond apart */

/* Block b was found in inodes a and b_ino (a <= b_ino): report it if both
 * map it with both locks held (one inode: twice in its tree). */
static void confirm_cross_link(struct scrubber *s, uint64_t b, uint32_t a, uint32_t b_ino)
{
	struct inode *x, *y = NULL;
	if (inode_get(s->fs, a, &x) != 0)
		return;
	if (b_ino != a && inode_get(s->fs, b_ino, &y) != 0) {
		inode_put(s->fs, x);
		return;
	}
	/* The two may be parent and child, whose order (parent first) their
	 * numbers do not tell: the second lock is only tried, and on a miss
	 * both go and the pair is tried again a little later. */
	unsigned tries = 0;
	for (;;) {
		ordfs_rwlock_rdlock(&x->lock);
		if (!y || ordfs_rwlock_tryrdlock(&y->lock))
			break;
		ordfs_rwlock_unlock(&x->lock);
		if (++tries == CONFIRM_TRIES) { /* busy: the next scrub sees it */
			inode_put(s->fs, y);
			inode_put(s->fs, x);
			return;
		}
		struct timespec nap = { 0, 1000000 };
		nanosleep(&nap, NULL);
	}
	uint32_t in_x = maps_now(s, x, b);
	uint32_t in_y = y ? maps_now(s, y, b) : 0;
	if (y && in_x && in_y)
		scrub_problem(s, CHK_BLOCK_DUP, "block %llu is mapped by inodes %u and %u",
			      (unsigned long long)b, a, b_ino);
	else if (!y && in_x > 1)
		scrub_problem(s, CHK_BLOCK_DUP, "block %llu is mapped %u times by inode %u",
			      (unsigned long long)b, in_x, a);
	if (y)
		ordfs_rwlock_unlock(&y->lock);
	ordfs_rwlock_unlock(&x->lock);
	if (y)
		inode_put(s->fs, y);
	inode_put(s->fs, x);
}

static void pass_cross_links(struct scrubber *s)
{
	if (!s->dup_blocks.n || s->err)
		return;
	qsort(s->dup_blocks.v, s->dup_blocks.n, sizeof(uint64_t), cmp_u64);
	size_t n = 0;
	for (size_t i = 0; i < s->dup_blocks.n; i++)
		if (!n || s->dup_blocks.v[n - 1] != s->dup_blocks.v[i])
			s->dup_blocks.v[n++] = s->dup_blocks.v[i];
	s->dup_blocks.n = n;

	for (uint32_t ino = ORDFS_ROOT_INO; ino <= s->inode_count && !s->err; ino++) {
		if (!bit_get(s->in_use, ino - 1))
			continue;
		struct inode *inode;
		if (inode_get(s->fs, ino, &inode) != 0)
			continue;
		ordfs_rwlock_rdlock(&inode->lock);
		s->cur_ino = ino;
		note_owners(s, inode);
		ordfs_rwlock_unlock(&inode->lock);
		inode_put(s->fs, inode);
		give_way();
	}
	/* owners sorted by block, then inode: each block's first two owners
	 * (or one owner twice) are confirmed. */
	qsort(s->owners.v, s->owners.n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i + 1 < s->owners.n && !s->err; i++) {
		uint64_t b = s->owners.v[i] >> 32;
		if (s->owners.v[i + 1] >> 32 != b || (i && s->owners.v[i - 1] >> 32 == b))
			continue;
		confirm_cross_link(s, b, (uint32_t)s->owners.v[i], (uint32_t)s->owners.v[i + 1]);
	}
}

int ordfs_scrub(struct ordfs *fs, struct scrub_result *res)
{
	struct scrubber s = { .fs = fs, .res = res };
	res->inodes = res->dirs = res->blocks = 0;
	res->problems = 0;
	ORDFS_ASSERT(!journal_handle_held()); /* it waits for commits */

	ordfs_mutex_lock(&fs->sb_lock);
	s.inode_count = fs->sb.inode_count;
	ordfs_mutex_unlock(&fs->sb_lock);
	s.block_count = fs_block_count(fs);
	s.claimed = calloc(s.block_count / 8 + 1, 1);
	s.in_use = calloc(s.inode_count / 8 + 1, 1);
	int err = -ENOMEM;
	if (!s.claimed || !s.in_use)
		goto out;

	pass_inodes(&s);
	confirm_inode_suspects(&s);
	pass_cross_links(&s);
	err = s.err;
	if (!err && res->problems) {
		char what[96];
		snprintf(what, sizeof(what), "online scrub found %u problem%s", res->problems,
			 res->problems == 1 ? "" : "s");
		(void)ordfs_error_corruption(fs, -EUCLEAN, what);
	}
out:
	free(s.claimed);
	free(s.in_use);
	free(s.dup_blocks.v);
	free(s.ino_suspects.v);
	free(s.owners.v);
	return err;
}
