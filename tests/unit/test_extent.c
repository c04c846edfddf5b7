/*
 * test_extent.c - extent trees on a real (in-memory) mkfs'd filesystem:
 * holes, single inserts, merges (in a leaf, across leaves, at the left
 * edge), thousands of random inserts (depth 2-3), huge logical offsets,
 * removal of everything / middles / heads / tails / across nodes with small
 * max_records, chunked removal of long records, blocks and free counts back
 * to where they were, corrupt tree blocks (-EUCLEAN, never a crash), walks,
 * persistence across unmount/mount, concurrent readers.  Every mounting test
 * ends with the checker (tfs_unmount_and_check).
 *
 * Data blocks mapped here are really allocated (a "pool" per test) so the
 * checker sees a consistent image: every pool block is mapped, freed by
 * extent_remove, or freed by the test before unmount.
 */
#include "suite_main.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "extent/extent.h"

#define MAX_LEN ORDFS_EXT_MAX_LEN
#define BIG_SIZE (1ull << 62) /* file size covering every logical block used */

static const struct ordfs_cred root_cred = { 0, 0 };

/* ---- fixture: one regular file on a fresh filesystem ---------------------- */

enum { POOL_UNUSED = 0, POOL_MAPPED = 1, POOL_FREED = 2 };

struct efs {
	struct test_fs t;
	struct inode *f;
	uint32_t ino;
	/* pool of allocated data blocks the test maps */
	uint64_t pool;
	uint32_t pool_len;
	uint8_t *pool_state;
};

static void set_size(struct efs *x, uint64_t size)
{
	ordfs_rwlock_wrlock(&x->f->lock);
	struct handle *h = tfs_start(&x->t, INODE_WRITE_CREDITS);
	x->f->d.size = x->f->size = size;
	ck_assert_int_eq(inode_write(x->t.fs, h, x->f, INODE_WRITE_DATASYNC), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&x->f->lock);
}

static void efs_setup(struct efs *x, uint64_t bytes, uint32_t block_size)
{
	memset(x, 0, sizeof(*x));
	tfs_setup(&x->t, bytes, block_size, 0);
	struct inode *root = tfs_root(&x->t);
	ck_assert_int_eq(ordfs_create(x->t.fs, root, "f", 0644, &root_cred, &x->f), 0);
	inode_put(x->t.fs, root);
	x->ino = x->f->ino;
	set_size(x, BIG_SIZE);
	ck_assert_int_eq(journal_force_commit(x->t.fs->journal), 0);
}

static void efs_remount(struct efs *x)
{
	inode_put(x->t.fs, x->f);
	tfs_unmount(&x->t);
	tfs_mount(&x->t);
	ck_assert_int_eq(inode_get(x->t.fs, x->ino, &x->f), 0);
	ck_assert_uint_eq(x->f->d.size, BIG_SIZE);
}

/* Allocates exactly n contiguous data blocks as the test's pool. */
static void pool_alloc(struct efs *x, uint32_t n)
{
	struct alloc *a = x->t.fs->alloc;
	struct handle *h = tfs_start(&x->t, alloc_credits(a, n));
	uint32_t got;
	ck_assert_int_eq(alloc_blocks(a, h, 0, n, 0, &x->pool, &got), 0);
	ck_assert_uint_eq(got, n);
	tfs_stop(h);
	x->pool_len = n;
	x->pool_state = calloc(n, 1);
	ck_assert_ptr_nonnull(x->pool_state);
}

/* Gives back the pool blocks that were never mapped. */
static void pool_release_unused(struct efs *x)
{
	struct alloc *a = x->t.fs->alloc;
	for (uint32_t i = 0; i < x->pool_len; i++) {
		if (x->pool_state[i] != POOL_UNUSED)
			continue;
		struct handle *h = tfs_start(&x->t, alloc_credits(a, 1));
		ck_assert_int_eq(alloc_free_blocks(a, h, x->pool + i, 1, 0), 0);
		tfs_stop(h);
		x->pool_state[i] = POOL_FREED;
	}
}

static void pool_mark(struct efs *x, uint64_t phys, uint32_t len, uint8_t state)
{
	ck_assert_uint_ge(phys, x->pool);
	ck_assert_uint_le(phys + len, x->pool + x->pool_len);
	for (uint32_t i = 0; i < len; i++)
		x->pool_state[phys - x->pool + i] = state;
}

static void efs_finish(struct efs *x)
{
	if (x->pool_state)
		pool_release_unused(x);
	free(x->pool_state);
	inode_put(x->t.fs, x->f);
	tfs_unmount_and_check(&x->t);
}

/* ---- calls under the inode lock, one handle each ---------------------------- */

static int ins_into(struct efs *x, struct inode *inode, uint64_t logical, uint64_t physical,
		    uint32_t len, uint32_t flags)
{
	struct ordfs_extent e = { logical, physical, len, flags };
	ordfs_rwlock_wrlock(&inode->lock);
	struct handle *h = tfs_start(&x->t, extent_credits(x->t.fs, inode, 1));
	int err = extent_insert(x->t.fs, h, inode, &e);
	tfs_stop(h);
	ordfs_rwlock_unlock(&inode->lock);
	return err;
}

static int ins(struct efs *x, uint64_t logical, uint64_t physical, uint32_t len,
	       uint32_t flags)
{
	return ins_into(x, x->f, logical, physical, len, flags);
}

/* Inserts a pool range and records it as mapped. */
static void ins_ok(struct efs *x, uint64_t logical, uint64_t physical, uint32_t len,
		   uint32_t flags)
{
	ck_assert_int_eq(ins(x, logical, physical, len, flags), 0);
	pool_mark(x, physical, len, POOL_MAPPED);
}

static int rm_from(struct efs *x, struct inode *inode, uint64_t lblk, uint64_t count,
		   uint32_t max_records)
{
	ordfs_rwlock_wrlock(&inode->lock);
	struct handle *h = tfs_start(&x->t, extent_credits(x->t.fs, inode, max_records));
	int ret = extent_remove(x->t.fs, h, inode, lblk, count, max_records);
	tfs_stop(h);
	ordfs_rwlock_unlock(&inode->lock);
	return ret;
}

static int rm(struct efs *x, uint64_t lblk, uint64_t count, uint32_t max_records)
{
	return rm_from(x, x->f, lblk, count, max_records);
}

/* Removes until the range is a hole; returns the number of calls. */
static unsigned rm_all(struct efs *x, uint64_t lblk, uint64_t count, uint32_t max_records)
{
	unsigned calls = 0;
	int ret;
	do {
		ret = rm(x, lblk, count, max_records);
		ck_assert_int_ge(ret, 0);
		calls++;
		ck_assert_uint_lt(calls, 1000000);
	} while (ret == 1);
	return calls;
}

static int look(struct efs *x, uint64_t lblk, struct ordfs_extent *e)
{
	ordfs_rwlock_rdlock(&x->f->lock);
	int ret = extent_lookup(x->t.fs, x->f, lblk, e);
	ordfs_rwlock_unlock(&x->f->lock);
	return ret;
}

static void expect_mapped(struct efs *x, uint64_t lblk, uint64_t logical, uint64_t physical,
			  uint32_t len, uint32_t flags)
{
	struct ordfs_extent e;
	ck_assert_int_eq(look(x, lblk, &e), 1);
	ck_assert_uint_eq(e.logical, logical);
	ck_assert_uint_eq(e.physical, physical);
	ck_assert_uint_eq(e.len, len);
	ck_assert_uint_eq(e.flags, flags);
}

static void expect_hole(struct efs *x, uint64_t lblk, uint32_t len)
{
	struct ordfs_extent e;
	ck_assert_int_eq(look(x, lblk, &e), 0);
	ck_assert_uint_eq(e.logical, lblk);
	ck_assert_uint_eq(e.physical, 0);
	ck_assert_uint_eq(e.len, len);
	ck_assert_uint_eq(e.flags, 0);
}

/* ---- the tree as the walk sees it ------------------------------------------ */

struct tree_view {
	struct ordfs_extent *ext;
	uint64_t *ext_leaf; /* leaf block holding ext[i] (0 = the root) */
	size_t n, cap;
	uint64_t nodes[8192];
	size_t nnodes;
	unsigned depth;     /* tree depth: node_cb level of the leaves */
	uint64_t cur_leaf;
	unsigned bad;
	uint64_t bad_block;
};

static int view_node(void *ctx, uint64_t blockno, unsigned level, int bad)
{
	struct tree_view *v = ctx;
	ck_assert_uint_ge(level, 1);
	ck_assert_uint_le(level, v->depth);
	if (bad) {
		v->bad++;
		v->bad_block = blockno;
		return 0;
	}
	ck_assert_uint_lt(v->nnodes, sizeof(v->nodes) / sizeof(v->nodes[0]));
	v->nodes[v->nnodes++] = blockno;
	if (level == v->depth)
		v->cur_leaf = blockno;
	return 0;
}

static int view_ext(void *ctx, const struct ordfs_extent *e)
{
	struct tree_view *v = ctx;
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 256;
		v->ext = realloc(v->ext, v->cap * sizeof(*v->ext));
		v->ext_leaf = realloc(v->ext_leaf, v->cap * sizeof(*v->ext_leaf));
		ck_assert(v->ext && v->ext_leaf);
	}
	v->ext_leaf[v->n] = v->cur_leaf;
	v->ext[v->n++] = *e;
	return 0;
}

/* Walks the tree; returns extent_walk's result.  Checks logical order. */
static int view_load(struct efs *x, struct tree_view *v)
{
	memset(v, 0, sizeof(*v));
	v->depth = extent_depth(x->f);
	struct extent_walk_ops ops = { view_node, view_ext, v };
	ordfs_rwlock_rdlock(&x->f->lock);
	int err = extent_walk(x->t.fs, x->f, &ops);
	ordfs_rwlock_unlock(&x->f->lock);
	for (size_t i = 1; i < v->n; i++)
		ck_assert_uint_ge(v->ext[i].logical, v->ext[i - 1].logical + v->ext[i - 1].len);
	return err;
}

static void view_free(struct tree_view *v)
{
	free(v->ext);
	free(v->ext_leaf);
	v->ext = NULL;
	v->ext_leaf = NULL;
}

/* Index in v->ext of the first record of the k-th leaf (k >= 1), or 0. */
static size_t view_leaf_start(const struct tree_view *v, unsigned k)
{
	unsigned seen = 0;
	for (size_t i = 1; i < v->n; i++)
		if (v->ext_leaf[i] != v->ext_leaf[i - 1] && ++seen == k)
			return i;
	return 0;
}

/* Walks, and checks blocks == mapped + tree blocks. */
static void expect_blocks_consistent(struct efs *x)
{
	struct tree_view v;
	ck_assert_int_eq(view_load(x, &v), 0);
	uint64_t mapped = 0;
	for (size_t i = 0; i < v.n; i++)
		mapped += v.ext[i].len;
	ck_assert_uint_eq(x->f->d.blocks, mapped + v.nnodes);
	view_free(&v);
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t seed)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)(rng_next(&seed) % i);
		uint32_t tmp = v[i - 1];
		v[i - 1] = v[j];
		v[j] = tmp;
	}
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_empty_tree_is_hole)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	ck_assert_uint_eq(extent_depth(x.f), 0);
	ck_assert_uint_eq(x.f->d.blocks, 0);
	expect_hole(&x, 0, MAX_LEN);
	expect_hole(&x, 123456789, MAX_LEN);
	expect_hole(&x, 1ull << 40, MAX_LEN);
	ck_assert_int_eq(rm(&x, 0, UINT64_MAX, 4), 0);
	ck_assert_int_eq(rm(&x, 7, 0, 4), 0);
	ck_assert_uint_gt(extent_credits(x.t.fs, x.f, 1), 1);

	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, 0);
	ck_assert_uint_eq(v.nnodes, 0);
	view_free(&v);
	efs_finish(&x);
}
END_TEST

START_TEST(test_insert_lookup_single)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	pool_alloc(&x, 10);
	uint64_t p = x.pool;
	ins_ok(&x, 10, p, 4, 0);
	ck_assert_uint_eq(x.f->d.blocks, 4);

	expect_hole(&x, 0, 10);
	expect_hole(&x, 9, 1);
	for (uint64_t l = 10; l < 14; l++)
		expect_mapped(&x, l, 10, p, 4, 0);
	expect_hole(&x, 14, MAX_LEN);

	/* Any overlap is refused and changes nothing. */
	ck_assert_int_eq(ins(&x, 10, p + 5, 1, 0), -EEXIST);
	ck_assert_int_eq(ins(&x, 13, p + 5, 1, 0), -EEXIST);
	ck_assert_int_eq(ins(&x, 8, p + 5, 3, 0), -EEXIST);
	ck_assert_int_eq(ins(&x, 12, p + 5, 3, 0), -EEXIST);
	ck_assert_int_eq(ins(&x, 5, p + 4, 20, 0), -EEXIST);
	/* Bad arguments. */
	const struct ordfs_super *sb = &x.t.fs->sb;
	ck_assert_int_eq(ins(&x, 100, p + 5, 0, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, p + 5, MAX_LEN + 1, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, p + 5, 1, 0x2), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, 0, 1, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, sb->data_start - 1, 1, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, sb->block_count - 1, 1, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, 100, sb->block_count - 2, 2, 0), -EINVAL);
	ck_assert_int_eq(ins(&x, UINT64_MAX - 1, p + 5, 2, 0), -EINVAL);
	ck_assert_uint_eq(x.f->d.blocks, 4);
	expect_blocks_consistent(&x);

	/* A hole exactly between two records fits. */
	ins_ok(&x, 14, p + 5, 1, ORDFS_EXT_UNWRITTEN);
	ins_ok(&x, 7, p + 6, 3, 0);
	expect_mapped(&x, 14, 14, p + 5, 1, ORDFS_EXT_UNWRITTEN);
	expect_mapped(&x, 8, 7, p + 6, 3, 0);
	expect_hole(&x, 6, 1);
	ck_assert_uint_eq(x.f->d.blocks, 8);

	efs_remount(&x);
	expect_mapped(&x, 11, 10, p, 4, 0);
	expect_mapped(&x, 14, 14, p + 5, 1, ORDFS_EXT_UNWRITTEN);
	expect_mapped(&x, 9, 7, p + 6, 3, 0);
	ck_assert_uint_eq(x.f->d.blocks, 8);
	efs_finish(&x);
}
END_TEST

START_TEST(test_merge_left_right_both)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	pool_alloc(&x, 20);
	uint64_t r = x.pool;
	struct tree_view v;

	ins_ok(&x, 100, r, 2, 0);
	ins_ok(&x, 102, r + 2, 3, 0); /* left merge */
	expect_mapped(&x, 101, 100, r, 5, 0);

	ins_ok(&x, 110, r + 10, 2, 0);
	ins_ok(&x, 108, r + 8, 2, 0); /* right merge */
	expect_mapped(&x, 111, 108, r + 8, 4, 0);

	ins_ok(&x, 105, r + 5, 3, 0); /* both: one record again */
	expect_mapped(&x, 100, 100, r, 12, 0);
	expect_mapped(&x, 111, 100, r, 12, 0);
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, 1);
	view_free(&v);

	/* Logically adjacent but not physically: no merge. */
	ins_ok(&x, 112, r + 13, 1, 0);
	expect_mapped(&x, 112, 112, r + 13, 1, 0);
	/* Physically adjacent but different flags: no merge; equal flags: merge. */
	ins_ok(&x, 113, r + 14, 1, ORDFS_EXT_UNWRITTEN);
	ins_ok(&x, 114, r + 15, 2, ORDFS_EXT_UNWRITTEN);
	expect_mapped(&x, 112, 112, r + 13, 1, 0);
	expect_mapped(&x, 115, 113, r + 14, 3, ORDFS_EXT_UNWRITTEN);
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, 3);
	view_free(&v);
	ck_assert_uint_eq(x.f->d.blocks, 12 + 1 + 3);
	efs_remount(&x);
	expect_mapped(&x, 104, 100, r, 12, 0);
	expect_mapped(&x, 113, 113, r + 14, 3, ORDFS_EXT_UNWRITTEN);
	efs_finish(&x);
}
END_TEST

START_TEST(test_many_random_inserts_deep_tree)
{
	struct efs x;
	efs_setup(&x, 32 << 20, 1024);
	const uint32_t n = 6000;
	struct alloc_counts c0, c;
	alloc_get_counts(x.t.fs->alloc, &c0);
	pool_alloc(&x, n);
	uint64_t r = x.pool;

	/* Record j: logical 2j -> r + j.  The holes keep them from merging. */
	uint32_t *order = malloc(n * sizeof(*order));
	for (uint32_t j = 0; j < n; j++)
		order[j] = j;
	shuffle(order, n, 0x9e3779b97f4a7c15ull);
	for (uint32_t k = 0; k < n; k++)
		ins_ok(&x, 2ull * order[k], r + order[k], 1, 0);
	free(order);

	unsigned depth = extent_depth(x.f);
	ck_assert_uint_ge(depth, 2);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t j = 0; j < n; j++) {
			expect_mapped(&x, 2ull * j, 2ull * j, r + j, 1, 0);
			expect_hole(&x, 2ull * j + 1, j + 1 < n ? 1 : MAX_LEN);
		}
		efs_remount(&x); /* second pass: every block read fresh and verified */
	}
	ck_assert_uint_eq(extent_depth(x.f), depth);

	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, n);
	for (uint32_t j = 0; j < n; j++) {
		ck_assert_uint_eq(v.ext[j].logical, 2ull * j);
		ck_assert_uint_eq(v.ext[j].physical, r + j);
	}
	ck_assert_uint_eq(x.f->d.blocks, n + v.nnodes);
	for (size_t i = 0; i < v.nnodes; i++)
		ck_assert(alloc_block_in_use(x.t.fs->alloc, v.nodes[i]));

	/* Remove everything, 7 records per handle, last extent first. */
	unsigned calls = rm_all(&x, 0, UINT64_MAX, 7);
	ck_assert_uint_ge(calls, n / 7);
	ck_assert_uint_eq(x.f->d.blocks, 0);
	ck_assert_uint_eq(extent_depth(x.f), 0);
	expect_hole(&x, 0, MAX_LEN);
	for (size_t i = 0; i < v.nnodes; i++)
		ck_assert(!alloc_block_in_use(x.t.fs->alloc, v.nodes[i]));
	for (uint32_t j = 0; j < n; j++)
		ck_assert(!alloc_block_in_use(x.t.fs->alloc, r + j));
	pool_mark(&x, r, n, POOL_FREED);
	view_free(&v);

	ck_assert_int_eq(journal_force_commit(x.t.fs->journal), 0);
	alloc_get_counts(x.t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	efs_finish(&x);
}
END_TEST

START_TEST(test_huge_logical_offsets)
{
	struct efs x;
	efs_setup(&x, 64 << 20, 4096);
	pool_alloc(&x, 200);
	uint64_t r = x.pool;
	const uint64_t g = 1ull << 32;

	ins_ok(&x, 5, r, 1, 0);
	ins_ok(&x, g, r + 1, 1, 0);
	ins_ok(&x, g + 1, r + 2, 2, 0); /* left merge with the record at 2^32 */
	ins_ok(&x, 3 * g, r + 10, 4, 0);
	ins_ok(&x, (1ull << 46) + 7, r + 20, 1, 0);
	ins_ok(&x, (1ull << 48) - 3, r + 30, 3, 0); /* ends exactly at 2^48 */
	ins_ok(&x, (1ull << 48) + 12345, r + 40, 1, 0);

	expect_mapped(&x, g + 2, g, r + 1, 3, 0);
	expect_hole(&x, g - 1, 1);
	expect_hole(&x, g + 3, MAX_LEN);
	expect_hole(&x, 3 * g - 10, 10);
	expect_mapped(&x, 3 * g + 3, 3 * g, r + 10, 4, 0);
	expect_mapped(&x, (1ull << 48) - 1, (1ull << 48) - 3, r + 30, 3, 0);
	expect_hole(&x, 1ull << 48, 12345);
	expect_hole(&x, (1ull << 48) + 12346, MAX_LEN);

	/* Enough records above 2^32 to push index keys past 32 bits. */
	for (uint32_t k = 0; k < 60; k++)
		ins_ok(&x, (5ull << 36) + k * (1ull << 34), r + 100 + k, 1, 0);
	ck_assert_uint_ge(extent_depth(x.f), 1);
	expect_blocks_consistent(&x);
	efs_remount(&x);
	for (uint32_t k = 0; k < 60; k++)
		expect_mapped(&x, (5ull << 36) + k * (1ull << 34), (5ull << 36) + k * (1ull << 34),
			      r + 100 + k, 1, 0);
	expect_mapped(&x, g, g, r + 1, 3, 0);

	/* Unmap [2^32 + 1, 2^47): trims one record's head and drops others. */
	rm_all(&x, g + 1, (1ull << 47) - (g + 1), 3);
	pool_mark(&x, r + 2, 2, POOL_FREED);
	pool_mark(&x, r + 10, 4, POOL_FREED);
	pool_mark(&x, r + 20, 1, POOL_FREED);
	expect_mapped(&x, g, g, r + 1, 1, 0);
	expect_hole(&x, g + 1, MAX_LEN);
	expect_mapped(&x, 5, 5, r, 1, 0);
	expect_mapped(&x, (1ull << 48) - 2, (1ull << 48) - 3, r + 30, 3, 0);
	for (uint32_t k = 0; k < 60; k++) {
		uint64_t l = (5ull << 36) + k * (1ull << 34);
		if (l < (1ull << 47)) {
			expect_hole(&x, l, MAX_LEN);
			pool_mark(&x, r + 100 + k, 1, POOL_FREED);
		} else {
			expect_mapped(&x, l, l, r + 100 + k, 1, 0);
		}
	}
	expect_blocks_consistent(&x);
	efs_remount(&x);
	expect_mapped(&x, (1ull << 48) + 12345, (1ull << 48) + 12345, r + 40, 1, 0);
	efs_finish(&x);
}
END_TEST

/* Leaves full (sequential appends), then merges at leaf edges: into the
 * first record of the next leaf and at the very left of the tree. */
START_TEST(test_merge_across_leaves_and_left_edge)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 1024);
	const uint32_t n = 300;
	pool_alloc(&x, 3 * n + 3);
	uint64_t r = x.pool;
	/* record k: logical 3k + 3 -> r + 3k + 1 */
	for (uint32_t k = 0; k < n; k++)
		ins_ok(&x, 3ull * k + 3, r + 3ull * k + 1, 1, 0);
	ck_assert_uint_ge(extent_depth(x.f), 1);

	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	size_t k = view_leaf_start(&v, 2); /* first record of the third leaf */
	ck_assert_uint_gt(k, 0);
	uint64_t nodes = v.nnodes;
	view_free(&v);

	/* Fill the hole just before record k, contiguous with it on disk only. */
	uint64_t lk = 3ull * k + 3, pk = r + 3ull * k + 1;
	ins_ok(&x, lk - 1, pk - 1, 1, 0);
	expect_mapped(&x, lk - 1, lk - 1, pk - 1, 2, 0);
	expect_mapped(&x, lk, lk - 1, pk - 1, 2, 0);
	expect_mapped(&x, lk - 3, lk - 3, pk - 3, 1, 0);
	expect_hole(&x, lk - 2, 1);

	/* Left edge: merge into the first record, then a new first record. */
	ins_ok(&x, 2, r, 1, 0);
	expect_mapped(&x, 3, 2, r, 2, 0);
	ins_ok(&x, 0, r + 2, 1, 0);
	expect_mapped(&x, 0, 0, r + 2, 1, 0);
	expect_hole(&x, 1, 1);

	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, n + 1);
	ck_assert_uint_ge(v.nnodes, nodes);
	view_free(&v);
	expect_blocks_consistent(&x);
	efs_remount(&x); /* keys verified exact on a fresh read */
	expect_mapped(&x, lk - 1, lk - 1, pk - 1, 2, 0);
	expect_mapped(&x, 2, 2, r, 2, 0);
	expect_mapped(&x, 0, 0, r + 2, 1, 0);
	for (uint32_t j = 0; j < n; j++) {
		struct ordfs_extent e;
		ck_assert_int_eq(look(&x, 3ull * j + 3, &e), 1);
		ck_assert_uint_eq(e.physical + (3ull * j + 3 - e.logical), r + 3ull * j + 1);
	}
	efs_finish(&x);
}
END_TEST

/* ---- removal against a model ------------------------------------------------ */

#define MODEL_LEN 6000u

struct model {
	uint64_t phys[MODEL_LEN]; /* 0 = hole */
	uint32_t flags[MODEL_LEN];
	uint64_t mapped;
};

static void model_map(struct efs *x, struct model *m, uint64_t l, uint64_t p, uint32_t len,
		      uint32_t flags)
{
	ins_ok(x, l, p, len, flags);
	for (uint32_t i = 0; i < len; i++) {
		ck_assert_uint_eq(m->phys[l + i], 0);
		m->phys[l + i] = p + i;
		m->flags[l + i] = flags;
	}
	m->mapped += len;
}

static void model_unmap(struct efs *x, struct model *m, uint64_t l, uint64_t count)
{
	for (uint64_t i = l; i < l + count && i < MODEL_LEN; i++) {
		if (m->phys[i]) {
			pool_mark(x, m->phys[i], 1, POOL_FREED);
			m->phys[i] = 0;
			m->mapped--;
		}
	}
}

/* Every record matches the model block by block, every hole reports the
 * distance to the next mapped block, and the blocks count adds up. */
static void model_check(struct efs *x, const struct model *m)
{
	struct tree_view v;
	ck_assert_int_eq(view_load(x, &v), 0);
	uint64_t seen = 0;
	for (size_t i = 0; i < v.n; i++) {
		const struct ordfs_extent *e = &v.ext[i];
		ck_assert_uint_le(e->logical + e->len, MODEL_LEN);
		for (uint32_t b = 0; b < e->len; b++) {
			ck_assert_uint_eq(m->phys[e->logical + b], e->physical + b);
			ck_assert_uint_eq(m->flags[e->logical + b], e->flags);
		}
		seen += e->len;
	}
	ck_assert_uint_eq(seen, m->mapped);
	ck_assert_uint_eq(x->f->d.blocks, m->mapped + v.nnodes);
	view_free(&v);

	uint64_t next = UINT64_MAX;
	for (uint64_t l = MODEL_LEN; l-- > 0;) {
		struct ordfs_extent e;
		int found = look(x, l, &e);
		ck_assert_int_eq(found, m->phys[l] != 0);
		if (found) {
			ck_assert_uint_eq(e.physical + (l - e.logical), m->phys[l]);
			next = l;
		} else {
			uint64_t gap = next == UINT64_MAX ? MAX_LEN : next - l;
			ck_assert_uint_eq(e.len, gap);
		}
	}
}

START_TEST(test_remove_shapes)
{
	static struct model m;
	memset(&m, 0, sizeof(m));
	struct efs x;
	efs_setup(&x, 16 << 20, 1024);
	pool_alloc(&x, 5000);
	uint64_t seed = 12345, cursor = x.pool;

	/* Random extents of 1..12 blocks in random holes; consecutive pool
	 * blocks, sometimes skipping one so only some neighbours merge. */
	while (m.mapped < 3500) {
		uint64_t l = rng_next(&seed) % (MODEL_LEN - 12);
		uint32_t len = 1 + (uint32_t)(rng_next(&seed) % 12);
		bool free_run = true;
		for (uint32_t i = 0; i < len; i++)
			free_run = free_run && m.phys[l + i] == 0;
		if (!free_run)
			continue;
		if (rng_next(&seed) % 4 == 0)
			cursor++;
		if (cursor + len > x.pool + x.pool_len)
			break;
		model_map(&x, &m, l, cursor, len, rng_next(&seed) % 8 == 0 ? ORDFS_EXT_UNWRITTEN : 0);
		cursor += len;
	}
	ck_assert_uint_ge(extent_depth(x.f), 1);
	model_check(&x, &m);

	/* Middle of a record: one record becomes two. */
	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	size_t big = 0;
	for (size_t i = 0; i < v.n; i++)
		if (v.ext[i].len > v.ext[big].len)
			big = i;
	struct ordfs_extent e = v.ext[big];
	size_t records = v.n;
	view_free(&v);
	ck_assert_uint_ge(e.len, 3);
	ck_assert_int_eq(rm(&x, e.logical + 1, e.len - 2, 1), 0);
	model_unmap(&x, &m, e.logical + 1, e.len - 2);
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.n, records + 1);
	view_free(&v);
	model_check(&x, &m);

	/* A head and a tail. */
	ck_assert_int_eq(view_load(&x, &v), 0);
	e = v.ext[v.n / 3];
	struct ordfs_extent e2 = v.ext[v.n / 2];
	view_free(&v);
	if (e.len > 1) {
		ck_assert_int_eq(rm(&x, e.logical, 1, 1), 0);
		model_unmap(&x, &m, e.logical, 1);
	}
	if (e2.len > 1) {
		ck_assert_int_eq(rm(&x, e2.logical + e2.len - 1, 1, 1), 0);
		model_unmap(&x, &m, e2.logical + e2.len - 1, 1);
	}
	model_check(&x, &m);

	/* Across a leaf boundary, one record per call. */
	ck_assert_int_eq(view_load(&x, &v), 0);
	size_t b = view_leaf_start(&v, 1);
	ck_assert_uint_gt(b, 2);
	uint64_t from = v.ext[b - 2].logical + 1, to = v.ext[b + 1].logical + 1;
	view_free(&v);
	unsigned calls = rm_all(&x, from, to - from, 1);
	ck_assert_uint_ge(calls, 3);
	model_unmap(&x, &m, from, to - from);
	model_check(&x, &m);

	/* Exactly max_records changes per call: three whole records. */
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_gt(v.n, 10);
	struct ordfs_extent a0 = v.ext[5], a2 = v.ext[7];
	view_free(&v);
	ck_assert_int_eq(rm(&x, a0.logical, a2.logical + a2.len - a0.logical, 1), 1);
	ck_assert_int_eq(rm(&x, a0.logical, a2.logical + a2.len - a0.logical, 1), 1);
	ck_assert_int_eq(rm(&x, a0.logical, a2.logical + a2.len - a0.logical, 1), 0);
	model_unmap(&x, &m, a0.logical, a2.logical + a2.len - a0.logical);
	model_check(&x, &m);

	/* Random ranges with small budgets, checked each time. */
	for (int i = 0; i < 12; i++) {
		uint64_t l = rng_next(&seed) % MODEL_LEN;
		uint64_t count = 1 + rng_next(&seed) % 400;
		rm_all(&x, l, count, 1 + (uint32_t)(rng_next(&seed) % 3));
		model_unmap(&x, &m, l, count);
		model_check(&x, &m);
	}
	efs_remount(&x);
	model_check(&x, &m);

	rm_all(&x, 0, UINT64_MAX, 5);
	model_unmap(&x, &m, 0, MODEL_LEN);
	ck_assert_uint_eq(x.f->d.blocks, 0);
	ck_assert_uint_eq(extent_depth(x.f), 0);
	model_check(&x, &m);
	efs_finish(&x);
}
END_TEST

/* A full root split by a hole in the middle grows the tree; removing down to
 * five records pulls them back into the inode. */
START_TEST(test_middle_split_grows_and_shrinks)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	pool_alloc(&x, 40);
	uint64_t r = x.pool;
	for (uint32_t k = 0; k < 4; k++)
		ins_ok(&x, 10ull * k, r + 2 * k, 1, 0);
	ins_ok(&x, 100, r + 20, 10, 0);
	ck_assert_uint_eq(extent_depth(x.f), 0);
	ck_assert_uint_eq(x.f->d.blocks, 14);

	ck_assert_int_eq(rm(&x, 103, 4, 1), 0);
	pool_mark(&x, r + 23, 4, POOL_FREED);
	ck_assert_uint_eq(extent_depth(x.f), 1);
	ck_assert_uint_eq(x.f->d.blocks, 10 + 1);
	expect_mapped(&x, 102, 100, r + 20, 3, 0);
	expect_hole(&x, 103, 4);
	expect_mapped(&x, 107, 107, r + 27, 3, 0);
	expect_blocks_consistent(&x);
	efs_remount(&x);
	expect_mapped(&x, 108, 107, r + 27, 3, 0);

	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	ck_assert_uint_eq(v.nnodes, 1);
	uint64_t leaf = v.nodes[0];
	view_free(&v);

	ck_assert_int_eq(rm(&x, 0, 1, 4), 0);
	pool_mark(&x, r, 1, POOL_FREED);
	ck_assert_uint_eq(extent_depth(x.f), 0);
	ck_assert_uint_eq(x.f->d.blocks, 9);
	ck_assert(!alloc_block_in_use(x.t.fs->alloc, leaf));
	expect_hole(&x, 0, 10);
	expect_mapped(&x, 10, 10, r + 2, 1, 0);
	expect_mapped(&x, 109, 107, r + 27, 3, 0);
	expect_blocks_consistent(&x);
	efs_finish(&x);
}
END_TEST

/* A record longer than one bitmap block's bits is freed over several
 * changes, each within the credits of one handle. */
START_TEST(test_long_record_removed_in_chunks)
{
	struct efs x;
	efs_setup(&x, 64 << 20, 1024);
	struct alloc_counts c0, c;
	alloc_get_counts(x.t.fs->alloc, &c0);
	uint32_t chunk = ordfs_bits_per_bitmap_block(1024);
	uint32_t len = 2 * chunk + chunk / 2;
	pool_alloc(&x, 2 * len);
	uint64_t r = x.pool, r2 = x.pool + len;
	const uint64_t b = 100000;
	ins_ok(&x, 1000, r, len, 0);
	ins_ok(&x, b, r2, len, ORDFS_EXT_UNWRITTEN);
	ck_assert_uint_eq(x.f->d.blocks, 2 * len);
	ck_assert_uint_le(extent_credits(x.t.fs, x.f, 1), 8);

	/* A hole of 1.25 chunks in the middle: the first call splits off the
	 * tail and frees one chunk, the second trims the rest. */
	uint64_t lo = 1000 + chunk / 2, count = chunk + chunk / 4;
	ck_assert_int_eq(rm(&x, lo, count, 1), 1);
	ck_assert_uint_eq(x.f->d.blocks, 2 * len - chunk);
	expect_mapped(&x, lo, 1000, r, (uint32_t)(lo + count - chunk - 1000), 0);
	ck_assert_int_eq(rm(&x, lo, count, 1), 0);
	ck_assert_uint_eq(x.f->d.blocks, 2 * len - count);
	expect_mapped(&x, 1000, 1000, r, chunk / 2, 0);
	expect_hole(&x, lo, (uint32_t)count);
	expect_mapped(&x, lo + count, lo + count, r + (lo + count - 1000),
		      (uint32_t)(len - (lo + count - 1000)), 0);

	/* A whole long record: one chunk per call, from its end. */
	ck_assert_int_eq(rm(&x, b, len, 1), 1);
	expect_mapped(&x, b, b, r2, len - chunk, ORDFS_EXT_UNWRITTEN);
	ck_assert_int_eq(rm(&x, b, len, 1), 1);
	expect_mapped(&x, b, b, r2, len - 2 * chunk, ORDFS_EXT_UNWRITTEN);
	ck_assert_int_eq(rm(&x, b, len, 1), 0);
	expect_hole(&x, b, MAX_LEN);
	ck_assert_uint_eq(x.f->d.blocks, len - count);
	expect_blocks_consistent(&x);

	unsigned calls = rm_all(&x, 0, UINT64_MAX, 1);
	ck_assert_uint_eq(calls, 2);
	ck_assert_uint_eq(x.f->d.blocks, 0);
	pool_mark(&x, r, 2 * len, POOL_FREED);
	ck_assert_int_eq(journal_force_commit(x.t.fs->journal), 0);
	alloc_get_counts(x.t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	efs_finish(&x);
}
END_TEST

/* A directory's blocks are metadata the log may hold: unmapping one revokes
 * it [J6], so replay can never write the old copy over its next owner. */
START_TEST(test_directory_blocks_freed_as_metadata)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	struct inode *root = tfs_root(&x.t), *d;
	ck_assert_int_eq(ordfs_mkdir(x.t.fs, root, "d", 0755, &root_cred, &d), 0);
	inode_put(x.t.fs, root);
	pool_alloc(&x, 1);
	uint64_t blocks = d->d.blocks;

	/* A metadata block of d, committed to the log. */
	struct handle *h = tfs_start(&x.t, 1);
	struct buf *b;
	ck_assert_int_eq(bcache_get_new(x.t.fs->cache, x.pool, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, JWA_CSUM_HDR), 0);
	ordfs_block_hdr_init(b->data, ORDFS_BT_DIR_LEAF, d->ino, x.pool);
	bcache_put(x.t.fs->cache, b);
	tfs_stop(h);
	ck_assert_int_eq(ins_into(&x, d, 40, x.pool, 1, 0), 0);
	ck_assert_uint_eq(d->d.blocks, blocks + 1);
	ck_assert_int_eq(journal_force_commit(x.t.fs->journal), 0);

	struct journal_stats before, after;
	journal_get_stats(x.t.fs->journal, &before);
	ck_assert_int_eq(rm_from(&x, d, 40, 1, 4), 0);
	ck_assert_uint_eq(d->d.blocks, blocks);
	ck_assert(!alloc_block_in_use(x.t.fs->alloc, x.pool));
	ck_assert_int_eq(journal_force_commit(x.t.fs->journal), 0);
	journal_get_stats(x.t.fs->journal, &after);
	ck_assert_uint_eq(after.revokes_logged, before.revokes_logged + 1);
	x.pool_state[0] = POOL_FREED;
	inode_put(x.t.fs, d);
	efs_finish(&x);
}
END_TEST

/* ---- corruption ------------------------------------------------------------- */

static uint8_t *image_block(struct efs *x, uint64_t blockno)
{
	return blockdev_mem_bytes(x->t.mem) + blockno * x->t.fs->block_size;
}

/* Makes the next read of every tree block come from the image bytes. */
static void drop_cache(struct efs *x)
{
	ck_assert_int_eq(journal_flush_all(x->t.fs->journal), 0);
	bcache_shrink(x->t.fs->cache);
}

static void reseal(struct efs *x, uint8_t *blk)
{
	ordfs_block_csum_set(blk, x->t.fs->block_size, x->t.fs->csum_seed);
}

/* Lookups under the bad leaf, walks, inserts and removes there all fail
 * with -EUCLEAN and change nothing; the other leaves still read.  The cache
 * is dropped before each call so each one reads the block from the image. */
static void expect_leaf_rejected(struct efs *x, uint64_t bad_lblk, uint64_t good_lblk,
				 uint64_t leaf, size_t total)
{
	struct ordfs_extent e;
	uint64_t blocks = x->f->d.blocks;
	bcache_shrink(x->t.fs->cache);
	ck_assert_int_eq(look(x, bad_lblk, &e), -EUCLEAN);
	ck_assert_int_eq(look(x, good_lblk, &e), 1);
	bcache_shrink(x->t.fs->cache);
	ck_assert_int_eq(ins(x, bad_lblk + 1, x->pool, 1, 0), -EUCLEAN);
	bcache_shrink(x->t.fs->cache);
	ck_assert_int_eq(rm(x, bad_lblk, 1, 4), -EUCLEAN);
	ck_assert_uint_eq(x->f->d.blocks, blocks);

	struct tree_view v;
	bcache_shrink(x->t.fs->cache);
	ck_assert_int_eq(view_load(x, &v), -EUCLEAN);
	ck_assert_uint_eq(v.bad, 1);
	ck_assert_uint_eq(v.bad_block, leaf);
	ck_assert_uint_lt(v.n, total);
	ck_assert_uint_gt(v.n, 0);
	view_free(&v);
}

START_TEST(test_corrupt_tree_block)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 1024);
	const uint32_t n = 200;
	pool_alloc(&x, n + 1); /* pool[0] stays unused: phys for refused inserts */
	for (uint32_t k = 0; k < n; k++)
		ins_ok(&x, 4ull * k, x.pool + 1 + k, 1, 0);
	ck_assert_uint_eq(extent_depth(x.f), 1);

	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	size_t s1 = view_leaf_start(&v, 1), s2 = view_leaf_start(&v, 2);
	ck_assert_uint_gt(s2, s1 + 2);
	uint64_t leaf = v.ext_leaf[s1], next_leaf = v.ext_leaf[s2];
	uint64_t bad_lblk = v.ext[s1 + 1].logical, good_lblk = v.ext[0].logical;
	uint64_t first = v.ext[s1].logical, next_first = v.ext[s2].logical;
	view_free(&v);

	uint32_t bs = x.t.fs->block_size;
	uint8_t *blk = image_block(&x, leaf);
	uint8_t *saved = malloc(bs);
	drop_cache(&x);
	memcpy(saved, blk, bs);

	/* A flipped bit that leaves a plausible record: only the checksum
	 * catches it. */
	blk[24 + 8 + 24 + 8] ^= 0x01;
	expect_leaf_rejected(&x, bad_lblk, good_lblk, leaf, n);
	memcpy(blk, saved, bs);
	bcache_shrink(x.t.fs->cache);
	expect_mapped(&x, bad_lblk, bad_lblk, x.pool + 1 + bad_lblk / 4, 1, 0);

	/* Structural damage under a valid checksum. */
	for (int kind = 0; kind < 12; kind++) {
		uint8_t *node = blk + 24, *r0 = node + 8, *r1 = r0 + 24;
		unsigned entries = le_get16(node + 2);
		uint8_t *last = r0 + 24 * (entries - 1);
		switch (kind) {
		case 0: /* more entries than fit */
			le_put16(node + 2, (uint16_t)(le_get16(node + 4) + 1));
			break;
		case 1: /* a leaf claiming to be an index node */
			le_put16(node + 6, 1);
			break;
		case 2: /* another inode's block */
			le_put32(blk + 12, x.ino + 1);
			break;
		case 3: /* overlapping records */
			le_put64(r1, le_get64(r0));
			break;
		case 4: /* empty record */
			le_put32(r0 + 16, 0);
			break;
		case 5: /* unknown flag */
			le_put32(r0 + 20, 0x4);
			break;
		case 6: /* data in the metadata area */
			le_put64(r0 + 8, 1);
			break;
		case 7: /* first record no longer at the parent's key */
			le_put64(r0, first + 1);
			break;
		case 8: /* bad node magic */
			le_put16(node, 0x1234);
			break;
		case 9: /* last record runs into the next leaf's range */
			le_put32(last + 16, (uint32_t)(next_first - le_get64(last) + 1));
			break;
		case 10: /* misdirected: the block says it is elsewhere */
			le_put64(blk + 16, leaf + 1);
			break;
		case 11: /* wrong max_entries */
			le_put16(node + 4, (uint16_t)(le_get16(node + 4) - 1));
			break;
		}
		reseal(&x, blk);
		expect_leaf_rejected(&x, bad_lblk, good_lblk, leaf, n);
		memcpy(blk, saved, bs);
		bcache_shrink(x.t.fs->cache);
		expect_mapped(&x, bad_lblk, bad_lblk, x.pool + 1 + bad_lblk / 4, 1, 0);
	}

	/* The root (in memory here) pointing twice at one leaf: the second
	 * path's key range does not match the leaf. */
	uint8_t *root = x.f->d.data;
	uint8_t root_saved[ORDFS_INODE_DATA_LEN];
	memcpy(root_saved, root, sizeof(root_saved));
	ck_assert_uint_ge(le_get16(root + 2), 3);
	ck_assert_uint_eq(le_get64(root + 8 + 24 + 8), leaf);
	le_put64(root + 8 + 24 + 8, next_leaf);
	struct ordfs_extent e;
	ck_assert_int_eq(look(&x, bad_lblk, &e), -EUCLEAN);
	ck_assert_int_eq(look(&x, good_lblk, &e), 1);
	ck_assert_int_eq(view_load(&x, &v), -EUCLEAN);
	ck_assert_uint_eq(v.bad, 1);
	ck_assert_uint_eq(v.bad_block, next_leaf);
	view_free(&v);
	/* A child outside the device, or too many root entries: the whole
	 * tree is refused, nothing is read past the end. */
	for (int kind = 0; kind < 2; kind++) {
		memcpy(root, root_saved, sizeof(root_saved));
		if (kind == 0)
			le_put64(root + 8 + 24 + 8, x.t.fs->sb.block_count + 5);
		else
			le_put16(root + 2, ORDFS_INODE_ROOT_EXTENTS + 1);
		ck_assert_int_eq(look(&x, good_lblk, &e), -EUCLEAN);
		ck_assert_int_eq(rm(&x, 0, UINT64_MAX, 4), -EUCLEAN);
		ck_assert_int_eq(view_load(&x, &v), -EUCLEAN);
		ck_assert_uint_eq(v.n, 0);
		view_free(&v);
	}
	memcpy(root, root_saved, sizeof(root_saved));
	expect_blocks_consistent(&x);

	/* Damage on disk after unmount: the checker reports it; repaired, the
	 * image is clean again. */
	pool_release_unused(&x);
	inode_put(x.t.fs, x.f);
	tfs_unmount(&x.t);
	blk[24 + 8 + 5] ^= 0x01;
	ck_assert_int_gt(tfs_check_image(&x.t), 0);
	blk[24 + 8 + 5] ^= 0x01;
	ck_assert_int_eq(tfs_check_image(&x.t), 0);
	free(saved);
	free(x.pool_state);
	tfs_free(&x.t);
}
END_TEST

/* Whatever a lookup returns is an error or a sane answer about lblk. */
static void expect_sane_lookup(struct efs *x, uint64_t lblk)
{
	const struct ordfs_super *sb = &x->t.fs->sb;
	struct ordfs_extent e;
	int ret = look(x, lblk, &e);
	ck_assert(ret == -EUCLEAN || ret == 0 || ret == 1);
	if (ret == 1) {
		ck_assert_uint_le(e.logical, lblk);
		ck_assert_uint_gt(e.logical + e.len, lblk);
		ck_assert_uint_ge(e.physical, sb->data_start);
		ck_assert_uint_le(e.physical + e.len, sb->block_count - 1);
		ck_assert_uint_le(e.flags, ORDFS_EXT_UNWRITTEN);
	} else if (ret == 0) {
		ck_assert_uint_eq(e.logical, lblk);
		ck_assert_uint_ge(e.len, 1);
	}
}

/* Random damage to the records of a leaf and to the root: lookups (fresh
 * and cached) and walks return -EUCLEAN or sane answers, never crash. */
START_TEST(test_fuzzed_tree_never_crashes)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 1024);
	const uint32_t n = 150;
	pool_alloc(&x, 2 * n);
	for (uint32_t k = 0; k < n; k++)
		ins_ok(&x, 3ull * k, x.pool + 2 * k, 1 + k % 2, 0);
	ck_assert_uint_eq(extent_depth(x.f), 1);
	struct tree_view v;
	ck_assert_int_eq(view_load(&x, &v), 0);
	uint64_t leaf = v.ext_leaf[view_leaf_start(&v, 1)];
	view_free(&v);

	uint32_t bs = x.t.fs->block_size;
	uint8_t *blk = image_block(&x, leaf), *saved = malloc(bs);
	uint8_t root_saved[ORDFS_INODE_DATA_LEN];
	drop_cache(&x);
	memcpy(saved, blk, bs);
	memcpy(root_saved, x.f->d.data, sizeof(root_saved));
	uint64_t seed = 4242;
	for (int round = 0; round < 300; round++) {
		bool in_root = round % 4 == 3;
		int flips = 1 + (int)(rng_next(&seed) % 4);
		for (int i = 0; i < flips; i++) {
			uint64_t rnd = rng_next(&seed);
			if (in_root)
				x.f->d.data[rnd % ORDFS_INODE_DATA_LEN] ^= (uint8_t)(1u << (rnd >> 32) % 8);
			else
				blk[24 + 2 + rnd % (bs - 24 - 2)] ^= (uint8_t)(1u << (rnd >> 32) % 8);
		}
		if (!in_root)
			reseal(&x, blk);
		bcache_shrink(x.t.fs->cache);
		for (int pass = 0; pass < 2; pass++) /* fresh, then cached */
			for (uint64_t l = 0; l < 3ull * n + 3; l += 7)
				expect_sane_lookup(&x, l + (uint64_t)round % 7);
		int err = view_load(&x, &v);
		ck_assert(err == 0 || err == -EUCLEAN);
		view_free(&v);
		memcpy(blk, saved, bs);
		memcpy(x.f->d.data, root_saved, sizeof(root_saved));
		bcache_shrink(x.t.fs->cache);
	}
	free(saved);
	expect_blocks_consistent(&x);
	efs_finish(&x);
}
END_TEST

struct stop_ctx {
	unsigned nodes, exts, stop_after;
	int node_ret;
};

static int stop_node(void *ctx, uint64_t blockno, unsigned level, int bad)
{
	struct stop_ctx *s = ctx;
	(void)blockno;
	(void)level;
	ck_assert_int_eq(bad, 0);
	s->nodes++;
	return s->node_ret;
}

static int stop_ext(void *ctx, const struct ordfs_extent *e)
{
	struct stop_ctx *s = ctx;
	(void)e;
	return ++s->exts == s->stop_after ? 7 : 0;
}

START_TEST(test_walk_stops_on_callback)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 4096);
	pool_alloc(&x, 20);
	for (uint32_t k = 0; k < 20; k++)
		ins_ok(&x, 2ull * k, x.pool + k, 1, 0);
	ck_assert_uint_eq(extent_depth(x.f), 1);

	struct stop_ctx s = { 0, 0, 3, 0 };
	struct extent_walk_ops ops = { stop_node, stop_ext, &s };
	ck_assert_int_eq(extent_walk(x.t.fs, x.f, &ops), 7);
	ck_assert_uint_eq(s.exts, 3);
	ck_assert_uint_eq(s.nodes, 1);

	s = (struct stop_ctx){ 0, 0, 0, 9 };
	ck_assert_int_eq(extent_walk(x.t.fs, x.f, &ops), 9);
	ck_assert_uint_eq(s.nodes, 1);
	ck_assert_uint_eq(s.exts, 0);

	struct extent_walk_ops only_ext = { NULL, stop_ext, &s };
	s = (struct stop_ctx){ 0, 0, 100, 0 };
	ck_assert_int_eq(extent_walk(x.t.fs, x.f, &only_ext), 0);
	ck_assert_uint_eq(s.exts, 20);
	efs_finish(&x);
}
END_TEST

/* Readers share the inode lock: concurrent lookups on a cold cache. */
struct reader {
	struct efs *x;
	uint32_t n;
	int failures;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	for (uint32_t j = 0; j < rd->n; j++) {
		struct ordfs_extent e;
		if (look(rd->x, 2ull * j, &e) != 1 || e.physical != rd->x->pool + j)
			rd->failures++;
		if (look(rd->x, 2ull * j + 1, &e) != 0)
			rd->failures++;
	}
	return NULL;
}

START_TEST(test_concurrent_lookups)
{
	struct efs x;
	efs_setup(&x, 16 << 20, 1024);
	const uint32_t n = 1500;
	pool_alloc(&x, n);
	uint32_t *order = malloc(n * sizeof(*order));
	for (uint32_t j = 0; j < n; j++)
		order[j] = j;
	shuffle(order, n, 77);
	for (uint32_t k = 0; k < n; k++)
		ins_ok(&x, 2ull * order[k], x.pool + order[k], 1, 0);
	free(order);
	ck_assert_uint_ge(extent_depth(x.f), 2);
	drop_cache(&x);

	pthread_t th[4];
	struct reader rd[4];
	for (int i = 0; i < 4; i++) {
		rd[i] = (struct reader){ &x, n, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(rd[i].failures, 0);
	}
	efs_finish(&x);
}
END_TEST

static Suite *extent_suite(void)
{
	Suite *s = suite_create("extent");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_empty_tree_is_hole);
	tcase_add_test(tc, test_insert_lookup_single);
	tcase_add_test(tc, test_merge_left_right_both);
	tcase_add_test(tc, test_many_random_inserts_deep_tree);
	tcase_add_test(tc, test_huge_logical_offsets);
	tcase_add_test(tc, test_merge_across_leaves_and_left_edge);
	tcase_add_test(tc, test_remove_shapes);
	tcase_add_test(tc, test_middle_split_grows_and_shrinks);
	tcase_add_test(tc, test_long_record_removed_in_chunks);
	tcase_add_test(tc, test_directory_blocks_freed_as_metadata);
	tcase_add_test(tc, test_corrupt_tree_block);
	tcase_add_test(tc, test_fuzzed_tree_never_crashes);
	tcase_add_test(tc, test_walk_stops_on_callback);
	tcase_add_test(tc, test_concurrent_lookups);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(extent_suite());
}
