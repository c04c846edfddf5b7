/*
 * test_dir.c - directories (src/dir): name rules, the leaf and index payload
 * helpers on crafted hash collisions, and the B+tree on a real mounted
 * image: add/lookup/remove/replace, 10^5 entries with O(log n) lookups,
 * readdir cookies (order, resume, changes between calls), persistence,
 * freeing, ENOSPC, and corrupt blocks.
 *
 * Every entry the tests add points at one regular file "f" whose link count
 * the tests keep right, so tfs_unmount_and_check's checker can hold the
 * directory to the same rules fsck does.  Tests are single-threaded, so
 * they call the dir functions without taking dir->lock.
 */
#include "suite_main.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "dir/dir.h"
#include "dir/dir_internal.h"
#include "extent/extent.h"

static const struct ordfs_cred cred0 = { 0, 0 };

/* ---- fixture: a directory "d" and a file "f" all entries point at -------- */

struct dfix {
	struct test_fs t;
	struct ordfs *fs;
	struct inode *root, *d, *f;
};

static void dfix_get_inodes(struct dfix *x)
{
	x->fs = x->t.fs;
	x->root = tfs_root(&x->t);
	ck_assert_int_eq(ordfs_lookup(x->fs, x->root, "d", &x->d), 0);
	ck_assert_int_eq(ordfs_lookup(x->fs, x->root, "f", &x->f), 0);
}

static void dfix_setup(struct dfix *x, uint64_t size, uint32_t block_size)
{
	struct inode *d, *f;

	tfs_setup(&x->t, size, block_size, 0);
	struct inode *root = tfs_root(&x->t);
	ck_assert_int_eq(ordfs_mkdir(x->t.fs, root, "d", 0755, &cred0, &d), 0);
	ck_assert_int_eq(ordfs_create(x->t.fs, root, "f", 0644, &cred0, &f), 0);
	inode_put(x->t.fs, d);
	inode_put(x->t.fs, f);
	inode_put(x->t.fs, root);
	dfix_get_inodes(x);
}

static void dfix_put_inodes(struct dfix *x)
{
	inode_put(x->fs, x->f);
	inode_put(x->fs, x->d);
	inode_put(x->fs, x->root);
	x->f = x->d = x->root = NULL;
}

static void dfix_remount(struct dfix *x)
{
	dfix_put_inodes(x);
	tfs_unmount(&x->t);
	tfs_mount(&x->t);
	dfix_get_inodes(x);
}

static void dfix_finish(struct dfix *x)
{
	dfix_put_inodes(x);
	tfs_unmount_and_check(&x->t);
}

static void name_of(char *buf, size_t cap, uint32_t i)
{
	snprintf(buf, cap, "entry-%07u", i);
}

/* Inverse of name_of; UINT32_MAX for other names. */
static uint32_t index_of(const char *name, size_t len)
{
	if (len != 13 || memcmp(name, "entry-", 6) != 0)
		return UINT32_MAX;
	uint32_t v = 0;
	for (size_t i = 6; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return UINT32_MAX;
		v = v * 10 + (uint32_t)(name[i] - '0');
	}
	return v;
}

/* Adds name -> f in its own handle and keeps f's link count. */
static int add_link(struct dfix *x, const char *name)
{
	struct handle *h;
	int err = journal_start(x->fs->journal, dir_credits(x->fs, x->d) + INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	err = dir_add(x->fs, h, x->d, name, strlen(name), x->f->ino, DT_REG);
	if (!err) {
		x->f->d.links++;
		err = inode_write(x->fs, h, x->f, INODE_WRITE_DATASYNC);
	}
	int serr = journal_stop(h);
	return err ? err : serr;
}

static int remove_link(struct dfix *x, const char *name)
{
	uint32_t ino = 0;
	struct handle *h;
	int err = journal_start(x->fs->journal, dir_credits(x->fs, x->d) + INODE_WRITE_CREDITS, &h);
	if (err)
		return err;
	err = dir_remove(x->fs, h, x->d, name, strlen(name), &ino);
	if (!err) {
		x->f->d.links--;
		err = ino == x->f->ino ? inode_write(x->fs, h, x->f, INODE_WRITE_DATASYNC) : -EBADE;
	}
	int serr = journal_stop(h);
	return err ? err : serr;
}

static void add_indexed(struct dfix *x, uint32_t from, uint32_t to)
{
	char name[32];
	uint32_t failed = 0;
	int err = 0;
	for (uint32_t i = from; i < to; i++) {
		name_of(name, sizeof(name), i);
		int r = add_link(x, name);
		if (r) {
			failed++;
			err = r;
		}
	}
	ck_assert_msg(failed == 0, "%u adds failed, last with %d", failed, err);
}

static int lookup_name(struct dfix *x, const char *name, uint32_t *ino, uint8_t *dtype)
{
	return dir_lookup(x->fs, x->d, name, strlen(name), ino, dtype);
}

/* Height of d's tree: 0 when block 0 is a leaf. */
static uint32_t tree_levels(struct dfix *x)
{
	struct ordfs_extent e;
	struct buf *b;

	ck_assert_int_eq(extent_lookup(x->fs, x->d, 0, &e), 1);
	ck_assert_int_eq(bcache_read(x->fs->cache, e.physical, &b), 0);
	uint32_t levels = le_get16(b->data + 4) == ORDFS_BT_DIR_LEAF ? 0 : dindex_level(b->data);
	bcache_put(x->fs->cache, b);
	return levels;
}

static uint64_t dir_blocks(struct dfix *x)
{
	return x->d->d.size / x->fs->block_size;
}

/* ---- readdir collection ------------------------------------------------- */

struct listing {
	uint32_t *idx;
	uint64_t *cookie;
	uint32_t n, cap;
	uint32_t foreign; /* names not made by name_of */
	uint32_t bad_type; /* entries whose type is not DT_REG */
};

static void listing_free(struct listing *l)
{
	free(l->idx);
	free(l->cookie);
	memset(l, 0, sizeof(*l));
}

static int collect_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
			uint64_t next_cookie)
{
	struct listing *l = ctx;
	(void)ino;
	l->bad_type += dtype != DT_REG;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->idx = realloc(l->idx, l->cap * sizeof(*l->idx));
		l->cookie = realloc(l->cookie, l->cap * sizeof(*l->cookie));
		ck_assert(l->idx && l->cookie);
	}
	uint32_t i = index_of(name, len);
	if (i == UINT32_MAX)
		l->foreign++;
	l->idx[l->n] = i;
	l->cookie[l->n] = next_cookie;
	l->n++;
	return 0;
}

/* A full pass: every name once, cookies in (2, 2^63) and increasing. */
static void list_all(struct dfix *x, struct listing *l, uint32_t expect_n)
{
	memset(l, 0, sizeof(*l));
	ck_assert_int_eq(dir_readdir(x->fs, x->d, 0, collect_emit, l), 0);
	ck_assert_uint_eq(l->n, expect_n);
	ck_assert_uint_eq(l->foreign, 0);
	ck_assert_uint_eq(l->bad_type, 0);
	uint8_t *seen = calloc(expect_n + 1, 1);
	uint32_t unknown = 0, twice = 0, bad_cookie = 0, disorder = 0;
	ck_assert_ptr_nonnull(seen);
	/* Counted, then asserted once: Check's per-assert cost adds up. */
	for (uint32_t k = 0; k < l->n; k++) {
		if (l->idx[k] >= expect_n) {
			unknown++;
			continue;
		}
		twice += seen[l->idx[k]];
		seen[l->idx[k]] = 1;
		bad_cookie += l->cookie[k] <= 2 || l->cookie[k] >= (1ull << 63); /* 1, 2: . and .. */
		disorder += k > 0 && l->cookie[k] <= l->cookie[k - 1];
	}
	free(seen);
	ck_assert_uint_eq(unknown, 0);
	ck_assert_uint_eq(twice, 0);
	ck_assert_uint_eq(bad_cookie, 0);
	ck_assert_uint_eq(disorder, 0);
}

/* Resuming after entry k must give exactly entries k+1.. of the full pass. */
struct expect_ctx {
	const struct listing *all;
	uint32_t at, bad;
};

static int expect_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		       uint64_t next_cookie)
{
	struct expect_ctx *e = ctx;
	(void)ino;
	(void)dtype;
	if (e->at >= e->all->n || e->all->idx[e->at] != index_of(name, len) ||
	    e->all->cookie[e->at] != next_cookie)
		e->bad++;
	e->at++;
	return 0;
}

static void check_resume(struct dfix *x, const struct listing *all, uint32_t k)
{
	struct expect_ctx e = { all, k + 1, 0 };
	ck_assert_int_eq(dir_readdir(x->fs, x->d, all->cookie[k], expect_emit, &e), 0);
	ck_assert_uint_eq(e.bad, 0);
	ck_assert_uint_eq(e.at, all->n);
}

/* ---- names ---------------------------------------------------------------- */

START_TEST(test_check_name)
{
	char longname[300];
	memset(longname, 'x', sizeof(longname));

	ck_assert_int_eq(dir_check_name("", 0), -EINVAL);
	ck_assert_int_eq(dir_check_name("/", 1), -EINVAL);
	ck_assert_int_eq(dir_check_name("a/b", 3), -EINVAL);
	ck_assert_int_eq(dir_check_name(".", 1), -EINVAL);
	ck_assert_int_eq(dir_check_name("..", 2), -EINVAL);
	ck_assert_int_eq(dir_check_name("a\0b", 3), -EINVAL);
	ck_assert_int_eq(dir_check_name("...", 3), 0);
	ck_assert_int_eq(dir_check_name(".a", 2), 0);
	ck_assert_int_eq(dir_check_name("..a", 3), 0);
	ck_assert_int_eq(dir_check_name("a", 1), 0);
	ck_assert_int_eq(dir_check_name(longname, 255), 0);
	ck_assert_int_eq(dir_check_name(longname, 256), -ENAMETOOLONG);
	ck_assert_int_eq(dir_check_name(longname, 300), -ENAMETOOLONG);
}
END_TEST

/* ---- leaf payload helpers on crafted collisions ---------------------------- */

static void area_put(uint8_t *area, uint32_t *used, uint64_t hash, const char *name)
{
	struct dir_entry e = { hash, 7, DT_REG, (uint8_t)strlen(name), name };
	uint32_t off;
	ck_assert_int_eq(darea_find(area, *used, hash, name, strlen(name), &off), 0);
	darea_insert(area, *used, off, &e);
	*used += ordfs_dir_entry_size(e.namelen);
}

static void area_entry(const uint8_t *area, uint32_t used, uint32_t k, struct dir_entry *out)
{
	uint32_t pos = 0;
	for (uint32_t i = 0; i < k; i++) {
		ck_assert_uint_lt(pos, used);
		pos += dent_size(area + pos);
	}
	ck_assert_uint_lt(pos, used);
	dent_decode(area + pos, out);
}

START_TEST(test_leaf_equal_hashes)
{
	uint8_t area[4096];
	uint32_t used = 0, off;
	const uint64_t H = 0x1234567890abcd00ull;
	memset(area, 0xa5, sizeof(area));

	/* Equal hashes, inserted out of order, plus neighbours in and outside
	 * the bucket. */
	area_put(area, &used, H, "mango");
	area_put(area, &used, H, "apple");
	area_put(area, &used, H + 1, "zz");
	area_put(area, &used, H, "kiwi");
	area_put(area, &used, H - 0x100, "low");
	area_put(area, &used, H, "apple-longer");
	area_put(area, &used, H + 0x100, "high");
	ck_assert_uint_eq(darea_count(area, used), 7);
	ck_assert_ptr_null(darea_problem(area, used, 7, 100));

	static const char *const order[] = { "low",  "apple", "apple-longer", "kiwi",
					     "mango", "zz",    "high" };
	for (uint32_t k = 0; k < 7; k++) {
		struct dir_entry e;
		area_entry(area, used, k, &e);
		ck_assert_uint_eq(e.namelen, strlen(order[k]));
		ck_assert_mem_eq(e.name, order[k], e.namelen);
		ck_assert_int_eq(darea_find(area, used, e.hash, order[k], strlen(order[k]), &off),
				 1);
	}
	/* Same hash, absent name: not found, insertion point between neighbours. */
	ck_assert_int_eq(darea_find(area, used, H, "banana", 6, &off), 0);
	struct dir_entry at;
	dent_decode(area + off, &at);
	ck_assert_mem_eq(at.name, "kiwi", 4);
	/* Right name, wrong hash: not found. */
	ck_assert_int_eq(darea_find(area, used, H + 2, "kiwi", 4, &off), 0);

	/* Remove one of the equal-hash entries; the rest stay sorted. */
	ck_assert_int_eq(darea_find(area, used, H, "apple-longer", 12, &off), 1);
	used = darea_remove(area, used, off);
	ck_assert_uint_eq(darea_count(area, used), 6);
	ck_assert_ptr_null(darea_problem(area, used, 6, 100));
	ck_assert_int_eq(darea_find(area, used, H, "apple-longer", 12, &off), 0);
	ck_assert_int_eq(darea_find(area, used, H, "apple", 5, &off), 1);
}
END_TEST

START_TEST(test_leaf_split_keeps_buckets)
{
	uint8_t area[8192];
	uint32_t used = 0, cut;
	char name[32];

	/* 10 buckets of 6 colliding entries each (same full hash). */
	for (uint32_t b = 0; b < 10; b++) {
		for (uint32_t k = 0; k < 6; k++) {
			snprintf(name, sizeof(name), "n%u-%u", b, k);
			area_put(area, &used, (uint64_t)(b + 1) << 40, name);
		}
	}
	uint32_t cap = used * 6 / 10; /* over-full for one leaf */
	ck_assert_int_eq(darea_split_point(area, used, cap, &cut), 0);
	ck_assert_uint_le(cut, cap);
	ck_assert_uint_le(used - cut, cap);
	ck_assert_uint_gt(cut, 0);
	/* The cut falls between buckets. */
	uint32_t pos = 0, prev = 0;
	while (pos < cut) {
		prev = pos;
		pos += dent_size(area + pos);
	}
	ck_assert_uint_eq(pos, cut);
	struct dir_entry a, b;
	dent_decode(area + prev, &a);
	dent_decode(area + cut, &b);
	ck_assert_uint_ne(dir_bucket(a.hash), dir_bucket(b.hash));
	/* Balanced as well as bucket boundaries allow: 5 or 6 buckets left. */
	uint32_t left = darea_count(area, cut);
	ck_assert(left == 30 || left == 36 || left == 24);

	/* One bucket that fills everything cannot be split. */
	used = 0;
	for (uint32_t k = 0; k < 40; k++) {
		snprintf(name, sizeof(name), "same-%u", k);
		area_put(area, &used, 0x4200 + (k % 3), name); /* one bucket, 3 hashes */
	}
	ck_assert_int_eq(darea_split_point(area, used, used - 8, &cut), -ENOSPC);
}
END_TEST

START_TEST(test_leaf_problems)
{
	uint8_t blk[1024];
	uint8_t area[1024];
	uint32_t used = 0;

	memset(blk, 0, sizeof(blk));
	area_put(area, &used, 0x100, "one");
	area_put(area, &used, 0x200, "two");
	area_put(area, &used, 0x200, "three");
	dleaf_fill(blk, sizeof(blk), area, used);
	ck_assert_uint_eq(dleaf_count(blk), 3);
	ck_assert_ptr_null(dleaf_problem(blk, sizeof(blk), 100));
	uint64_t first, last;
	ck_assert(dleaf_hash_range(blk, &first, &last));
	ck_assert_uint_eq(first, 0x100);
	ck_assert_uint_eq(last, 0x200);

	uint8_t bad[1024];
	/* count wrong */
	memcpy(bad, blk, sizeof(bad));
	le_put16(bad + DIR_LEAF_COUNT_OFF, 4);
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* used beyond the block */
	memcpy(bad, blk, sizeof(bad));
	le_put16(bad + DIR_LEAF_USED_OFF, 1024);
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* used cuts an entry short */
	memcpy(bad, blk, sizeof(bad));
	le_put16(bad + DIR_LEAF_USED_OFF, (uint16_t)(used - 8));
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* a name length running past used */
	memcpy(bad, blk, sizeof(bad));
	bad[ORDFS_DIR_NODE_HDR + 13] = 255;
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* an empty name */
	memcpy(bad, blk, sizeof(bad));
	bad[ORDFS_DIR_NODE_HDR + 13] = 0;
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* inode number out of range */
	ck_assert_ptr_nonnull(dleaf_problem(blk, sizeof(blk), 6));
	memcpy(bad, blk, sizeof(bad));
	le_put32(bad + ORDFS_DIR_NODE_HDR + 8, 0);
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* out of order: the second entry's hash below the first's */
	uint32_t off2 = dent_size(dleaf_area(blk)), off3 = off2 + dent_size(dleaf_area(blk) + off2);
	memcpy(bad, blk, sizeof(bad));
	le_put64(dleaf_area(bad) + off2, 0x50);
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* a duplicate: the third entry ("two") rewritten as the second ("three") */
	struct dir_entry e2, e3;
	memcpy(bad, blk, sizeof(bad));
	dent_decode(dleaf_area(bad) + off2, &e2);
	dent_decode(dleaf_area(bad) + off3, &e3);
	ck_assert_mem_eq(e2.name, "three", 5);
	ck_assert_mem_eq(e3.name, "two", 3);
	ck_assert_uint_eq(dent_size(dleaf_area(bad) + off3), ordfs_dir_entry_size(5));
	dent_encode(dleaf_area(bad) + off3, &e2);
	ck_assert_ptr_nonnull(dleaf_problem(bad, sizeof(bad), 100));
	/* and the untouched leaf is still fine */
	ck_assert_ptr_null(dleaf_problem(blk, sizeof(blk), 100));
}
END_TEST

/* ---- index payload helpers ------------------------------------------------ */

START_TEST(test_index_helpers)
{
	uint8_t blk[1024], right[1024], scratch[1024 + 16];
	const uint32_t bs = sizeof(blk);
	uint32_t cap = dindex_capacity(bs);

	memset(blk, 0, bs);
	dindex_init(blk, bs, 1, 0, 1);
	dindex_insert(blk, 1, 0x300, 3);
	dindex_insert(blk, 1, 0x100, 2);
	ck_assert_uint_eq(dindex_count(blk), 3);
	ck_assert_ptr_null(dindex_problem(blk, bs, 4));
	ck_assert_uint_eq(dindex_search(blk, 0), 0);
	ck_assert_uint_eq(dindex_search(blk, 0xff), 0);
	ck_assert_uint_eq(dindex_search(blk, 0x100), 1);
	ck_assert_uint_eq(dindex_search(blk, 0x2ff), 1);
	ck_assert_uint_eq(dindex_search(blk, 0x300), 2);
	ck_assert_uint_eq(dindex_search(blk, UINT64_MAX), 2);
	ck_assert_uint_eq(dindex_child(blk, 1), 2);

	ck_assert_ptr_nonnull(dindex_problem(blk, bs, 3)); /* child 3 out of range */
	uint8_t bad[1024];
	memcpy(bad, blk, bs);
	le_put64(bad + ORDFS_DIR_NODE_HDR + 16, 0x180); /* not a bucket start */
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	memcpy(bad, blk, bs);
	le_put64(bad + ORDFS_DIR_NODE_HDR + 16, 0x300); /* equal keys */
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	memcpy(bad, blk, bs);
	le_put16(bad + DIR_INDEX_LEVEL_OFF, 0);
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	le_put16(bad + DIR_INDEX_LEVEL_OFF, DIR_MAX_LEVEL + 1);
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	memcpy(bad, blk, bs);
	le_put16(bad + DIR_INDEX_COUNT_OFF, 0);
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	le_put16(bad + DIR_INDEX_COUNT_OFF, (uint16_t)(cap + 1));
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));
	memcpy(bad, blk, bs);
	le_put64(bad + ORDFS_DIR_NODE_HDR + 8, 0); /* child 0 is the root */
	ck_assert_ptr_nonnull(dindex_problem(bad, bs, 4));

	/* Split a full node while inserting into its middle. */
	dindex_init(blk, bs, 2, 0, 1);
	for (uint32_t i = 1; i < cap; i++)
		dindex_insert(blk, i, (uint64_t)(2 * i) << 8, i + 1);
	ck_assert_uint_eq(dindex_count(blk), cap);
	memset(right, 0, bs);
	uint32_t pos = cap / 3;
	uint64_t key = ((uint64_t)(2 * pos - 1)) << 8; /* between pos-1 and pos */
	uint64_t rkey = dindex_split_insert(blk, right, bs, pos, key, 999, scratch);
	uint32_t nl = dindex_count(blk), nr = dindex_count(right);
	ck_assert_uint_eq(nl + nr, cap + 1);
	ck_assert_uint_ge(nl, cap / 2);
	ck_assert_uint_ge(nr, cap / 2);
	ck_assert_uint_eq(dindex_level(right), 2);
	ck_assert_uint_eq(rkey, dindex_key(right, 0));
	ck_assert_ptr_null(dindex_problem(blk, bs, 1000));
	ck_assert_ptr_null(dindex_problem(right, bs, 1000));
	ck_assert_uint_lt(dindex_key(blk, nl - 1), rkey);
	ck_assert_uint_eq(dindex_key(blk, pos), key);
	ck_assert_uint_eq(dindex_child(blk, pos), 999);
}
END_TEST

/* ---- the tree on a mounted filesystem -------------------------------------- */

START_TEST(test_add_lookup_remove_replace)
{
	struct dfix x;
	uint32_t ino;
	uint8_t dtype;
	char longname[257];

	dfix_setup(&x, 16 << 20, 4096);
	ck_assert_uint_eq(x.d->d.size, 0);
	ck_assert_int_eq(dir_is_empty(x.fs, x.d), 1);
	ck_assert_int_eq(lookup_name(&x, "a", &ino, NULL), -ENOENT);

	ck_assert_int_eq(add_link(&x, "a"), 0);
	ck_assert_uint_eq(x.d->d.size, x.fs->block_size);
	ck_assert_int_eq(dir_is_empty(x.fs, x.d), 0);
	ck_assert_int_eq(lookup_name(&x, "a", &ino, &dtype), 0);
	ck_assert_uint_eq(ino, x.f->ino);
	ck_assert_uint_eq(dtype, DT_REG);
	ck_assert_int_eq(add_link(&x, "a"), -EEXIST);
	ck_assert_int_eq(lookup_name(&x, "A", &ino, NULL), -ENOENT);
	ck_assert_int_eq(lookup_name(&x, "a ", &ino, NULL), -ENOENT);

	/* Bad names and targets change nothing. */
	memset(longname, 'n', sizeof(longname));
	longname[256] = '\0';
	ck_assert_int_eq(add_link(&x, longname), -ENAMETOOLONG);
	longname[255] = '\0';
	ck_assert_int_eq(add_link(&x, longname), 0);
	ck_assert_int_eq(lookup_name(&x, longname, &ino, NULL), 0);
	ck_assert_int_eq(add_link(&x, "."), -EINVAL);
	ck_assert_int_eq(add_link(&x, ".."), -EINVAL);
	ck_assert_int_eq(add_link(&x, "x/y"), -EINVAL);
	ck_assert_int_eq(lookup_name(&x, "", &ino, NULL), -EINVAL);
	struct handle *h = tfs_start(&x.t, dir_credits(x.fs, x.d));
	ck_assert_int_eq(dir_add(x.fs, h, x.d, "zero", 4, 0, DT_REG), -EINVAL);
	ck_assert_int_eq(dir_add(x.fs, h, x.d, "big", 3, x.fs->sb.inode_count + 1, DT_REG),
			 -EINVAL);
	ck_assert_int_eq(dir_replace(x.fs, h, x.d, "nope", 4, x.f->ino, DT_REG), -ENOENT);
	ck_assert_int_eq(dir_remove(x.fs, h, x.d, "nope", 4, NULL), -ENOENT);
	tfs_stop(h);

	/* Replace: "a" now names a second file g. */
	struct inode *g;
	ck_assert_int_eq(ordfs_create(x.fs, x.root, "g", 0644, &cred0, &g), 0);
	h = tfs_start(&x.t, dir_credits(x.fs, x.d) + 2 * INODE_WRITE_CREDITS);
	ck_assert_int_eq(dir_replace(x.fs, h, x.d, "a", 1, g->ino, DT_REG), 0);
	x.f->d.links--;
	g->d.links++;
	ck_assert_int_eq(inode_write(x.fs, h, x.f, INODE_WRITE_DATASYNC), 0);
	ck_assert_int_eq(inode_write(x.fs, h, g, INODE_WRITE_DATASYNC), 0);
	tfs_stop(h);
	ck_assert_int_eq(lookup_name(&x, "a", &ino, NULL), 0);
	ck_assert_uint_eq(ino, g->ino);

	/* Remove: ENOENT afterwards, and again. */
	h = tfs_start(&x.t, dir_credits(x.fs, x.d) + INODE_WRITE_CREDITS);
	ck_assert_int_eq(dir_remove(x.fs, h, x.d, "a", 1, &ino), 0);
	ck_assert_uint_eq(ino, g->ino);
	g->d.links--;
	ck_assert_int_eq(inode_write(x.fs, h, g, INODE_WRITE_DATASYNC), 0);
	tfs_stop(h);
	inode_put(x.fs, g);
	ck_assert_int_eq(lookup_name(&x, "a", &ino, NULL), -ENOENT);
	ck_assert_int_eq(remove_link(&x, "a"), -ENOENT);
	ck_assert_int_eq(dir_is_empty(x.fs, x.d), 0);
	ck_assert_int_eq(remove_link(&x, longname), 0);
	ck_assert_int_eq(dir_is_empty(x.fs, x.d), 1);
	/* An emptied directory keeps its block until it is freed. */
	ck_assert_uint_eq(x.d->d.size, x.fs->block_size);
	ck_assert_int_eq(add_link(&x, "again"), 0);
	ck_assert_int_eq(lookup_name(&x, "again", &ino, NULL), 0);

	/* Non-directories are refused. */
	ck_assert_int_eq(dir_lookup(x.fs, x.f, "a", 1, &ino, NULL), -ENOTDIR);
	dfix_finish(&x);
}
END_TEST

struct problem_log {
	uint32_t count;
	uint64_t first_lblk;
	uint32_t entries;
};

static void log_problem(void *ctx, uint64_t lblk, const char *what)
{
	struct problem_log *p = ctx;
	if (p->count++ == 0)
		p->first_lblk = lblk;
	(void)what;
}

static int count_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype)
{
	struct problem_log *p = ctx;
	(void)name;
	(void)len;
	(void)ino;
	(void)dtype;
	p->entries++;
	return 0;
}

static int verify_dir(struct dfix *x, struct problem_log *log)
{
	struct dir_verify_ops ops = { count_entry, log_problem, log };
	memset(log, 0, sizeof(*log));
	return dir_verify(x->fs, x->d, &ops);
}

/* Reads a single lookup costs with nothing cached. */
static uint64_t cold_lookup_reads(struct dfix *x, const char *name)
{
	struct blockdev_counts c;
	uint32_t ino;

	bcache_shrink(x->fs->cache);
	blockdev_record_reset_counts(x->t.rec);
	ck_assert_int_eq(lookup_name(x, name, &ino, NULL), 0);
	ck_assert_uint_eq(ino, x->f->ino);
	blockdev_record_counts(x->t.rec, &c);
	return c.reads;
}

START_TEST(test_many_entries)
{
	struct dfix x;
	struct listing all;
	struct problem_log log;
	char name[32];
	const uint32_t n = 100000;
	uint32_t ino;

	dfix_setup(&x, 128 << 20, 4096);
	for (uint32_t i = 0; i < n; i += 5000) {
		add_indexed(&x, i, i + 5000);
		ck_assert_int_eq(journal_force_commit(x.fs->journal), 0);
	}
	uint32_t levels = tree_levels(&x);
	ck_assert_uint_ge(levels, 1);
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	ck_assert_uint_eq(log.count, 0);
	ck_assert_uint_eq(log.entries, n);

	/* Every name is found, a few absent ones are not. */
	uint32_t wrong = 0;
	for (uint32_t i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		ino = 0;
		wrong += lookup_name(&x, name, &ino, NULL) != 0 || ino != x.f->ino;
	}
	for (uint32_t i = n; i < n + 100; i++) {
		name_of(name, sizeof(name), i);
		wrong += lookup_name(&x, name, &ino, NULL) != -ENOENT;
	}
	ck_assert_uint_eq(wrong, 0);

	/* O(log n): a lookup with nothing cached reads the path and the map. */
	ck_assert_int_eq(journal_flush_all(x.fs->journal), 0);
	uint64_t bound = levels + 1 + extent_depth(x.d) + 1;
	for (uint32_t i = 0; i < n; i += 9973) {
		name_of(name, sizeof(name), i);
		uint64_t reads = cold_lookup_reads(&x, name);
		ck_assert_uint_ge(reads, levels + 1);
		ck_assert_uint_le(reads, bound);
		ck_assert_uint_le(reads, 8);
	}

	/* readdir: all names once, cookie order; resuming gives the rest. */
	list_all(&x, &all, n);
	struct expect_ctx after_dots = { &all, 0, 0 }; /* 1, 2 are free for "." and ".." */
	ck_assert_int_eq(dir_readdir(x.fs, x.d, 2, expect_emit, &after_dots), 0);
	ck_assert_uint_eq(after_dots.bad, 0);
	ck_assert_uint_eq(after_dots.at, n);
	for (uint32_t k = 0; k < n; k += 997)
		check_resume(&x, &all, k);
	check_resume(&x, &all, n - 1);

	/* Persistence. */
	uint64_t size = x.d->d.size;
	dfix_remount(&x);
	ck_assert_uint_eq(x.d->d.size, size);
	for (uint32_t i = 0; i < n; i += 7) {
		name_of(name, sizeof(name), i);
		wrong += lookup_name(&x, name, &ino, NULL) != 0;
	}
	ck_assert_uint_eq(wrong, 0);
	struct listing again;
	list_all(&x, &again, n);
	ck_assert_mem_eq(again.cookie, all.cookie, n * sizeof(uint64_t));
	listing_free(&again);
	listing_free(&all);

	/* Remove everything (every other name first, to exercise lookups in
	 * half-empty leaves), then the directory is empty. */
	for (uint32_t pass = 0; pass < 2; pass++) {
		for (uint32_t i = pass; i < n; i += 2) {
			name_of(name, sizeof(name), i);
			wrong += remove_link(&x, name) != 0;
			if (i % 5000 == pass)
				wrong += journal_force_commit(x.fs->journal) != 0;
		}
		ck_assert_uint_eq(wrong, 0);
		ck_assert_int_eq(dir_is_empty(x.fs, x.d), pass == 1);
	}
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	ck_assert_uint_eq(log.entries, 0);

	/* Freeing returns every block the directory had. */
	struct alloc_counts before, after;
	ck_assert_int_eq(journal_force_commit(x.fs->journal), 0);
	alloc_get_counts(x.fs->alloc, &before);
	uint64_t charged = x.d->d.blocks;
	ck_assert_uint_ge(charged, dir_blocks(&x));
	struct handle *h = tfs_start(&x.t, dir_credits(x.fs, x.d) + extent_credits(x.fs, x.d, 64));
	ck_assert_int_eq(dir_free_blocks(x.fs, h, x.d), 0);
	tfs_stop(h);
	ck_assert_int_eq(journal_force_commit(x.fs->journal), 0);
	alloc_get_counts(x.fs->alloc, &after);
	ck_assert_uint_eq(x.d->d.size, 0);
	ck_assert_uint_eq(x.d->d.blocks, 0);
	/* Freed blocks are pending until their free commits [J5]; count both. */
	ck_assert_uint_eq((after.free_blocks + after.pending_free) -
				  (before.free_blocks + before.pending_free),
			  charged);
	ck_assert_int_eq(dir_is_empty(x.fs, x.d), 1);
	ck_assert_int_eq(lookup_name(&x, "entry-0000001", &ino, NULL), -ENOENT);
	dfix_finish(&x);
}
END_TEST

/* Long names in 1 KiB blocks: few entries per leaf, a tall tree. */
static void long_name(char *buf, size_t cap, uint32_t i)
{
	memset(buf, 'L', cap - 1);
	buf[cap - 1] = '\0';
	snprintf(buf, 16, "%08u-", i);
	buf[9] = '-'; /* snprintf's NUL replaced: the name stays cap - 1 long */
}

START_TEST(test_tall_tree)
{
	struct dfix x;
	struct problem_log log;
	char name[201];
	uint32_t ino;
	const uint32_t n = 10000;

	dfix_setup(&x, 32 << 20, 1024);
	uint32_t wrong = 0;
	for (uint32_t i = 0; i < n; i++) {
		long_name(name, sizeof(name), i);
		wrong += add_link(&x, name) != 0;
	}
	ck_assert_uint_eq(wrong, 0);
	uint32_t levels = tree_levels(&x);
	ck_assert_uint_ge(levels, 3);
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	ck_assert_uint_eq(log.entries, n);
	for (uint32_t i = 0; i < n; i++) {
		long_name(name, sizeof(name), i);
		wrong += lookup_name(&x, name, &ino, NULL) != 0;
	}
	ck_assert_uint_eq(wrong, 0);
	ck_assert_int_eq(journal_flush_all(x.fs->journal), 0);
	long_name(name, sizeof(name), n / 2);
	ck_assert_uint_le(cold_lookup_reads(&x, name), levels + 1 + extent_depth(x.d) + 1);

	for (uint32_t i = 0; i < n; i += 3) {
		long_name(name, sizeof(name), i);
		wrong += remove_link(&x, name) != 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		long_name(name, sizeof(name), i);
		wrong += lookup_name(&x, name, &ino, NULL) != (i % 3 ? 0 : -ENOENT);
	}
	ck_assert_uint_eq(wrong, 0);
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	ck_assert_uint_eq(log.entries, n - (n + 2) / 3);
	dfix_remount(&x);
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	dfix_finish(&x);
}
END_TEST

/* readdir in small chunks while names come and go between the calls. */
struct chunk_ctx {
	uint8_t *seen;
	uint32_t cap;
	uint32_t taken, limit;
	uint64_t last_cookie;
	uint32_t dups, disorder;
};

static int chunk_emit(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		      uint64_t next_cookie)
{
	struct chunk_ctx *c = ctx;
	(void)ino;
	(void)dtype;
	if (c->taken == c->limit)
		return 1; /* buffer full: this entry is not taken */
	uint32_t i = index_of(name, len);
	ck_assert_uint_lt(i, c->cap);
	if (c->seen[i])
		c->dups++;
	c->seen[i] = 1;
	if (next_cookie <= c->last_cookie)
		c->disorder++;
	c->last_cookie = next_cookie;
	c->taken++;
	return 0;
}

START_TEST(test_readdir_with_changes)
{
	struct dfix x;
	char name[32];
	const uint32_t n0 = 3000, added_max = 4000;

	dfix_setup(&x, 32 << 20, 4096);
	add_indexed(&x, 0, n0);
	struct chunk_ctx c = { .cap = n0 + added_max, .limit = 64 };
	c.seen = calloc(c.cap, 1);
	ck_assert_ptr_nonnull(c.seen);
	uint8_t *removed = calloc(n0, 1);
	ck_assert_ptr_nonnull(removed);

	uint32_t next_new = n0, next_victim = 0, calls = 0;
	int r;
	do {
		c.taken = 0;
		r = dir_readdir(x.fs, x.d, c.last_cookie, chunk_emit, &c);
		ck_assert_int_ge(r, 0);
		calls++;
		/* Between calls: add 20 names, remove 7 old ones (seen or not). */
		for (uint32_t k = 0; k < 20 && next_new < n0 + added_max; k++) {
			name_of(name, sizeof(name), next_new++);
			ck_assert_int_eq(add_link(&x, name), 0);
		}
		for (uint32_t k = 0; k < 7 && next_victim < n0; k++, next_victim += 11) {
			name_of(name, sizeof(name), next_victim);
			ck_assert_int_eq(remove_link(&x, name), 0);
			removed[next_victim] = 1;
		}
	} while (r == 1);
	ck_assert_uint_gt(calls, n0 / 64);
	ck_assert_uint_eq(c.dups, 0);
	ck_assert_uint_eq(c.disorder, 0);
	for (uint32_t i = 0; i < n0; i++)
		ck_assert_msg(removed[i] || c.seen[i], "name %u never listed", i);

	free(removed);
	free(c.seen);
	dfix_finish(&x);
}
END_TEST

/* Fill a small filesystem until ENOSPC: every add either happened or left
 * nothing behind. */
START_TEST(test_enospc)
{
	struct dfix x;
	struct problem_log log;
	char name[201];
	uint32_t ino, added = 0;
	int err = 0;

	dfix_setup(&x, 2 << 20, 1024);
	while (added < 100000) {
		long_name(name, sizeof(name), added);
		err = add_link(&x, name);
		if (err)
			break;
		added++;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_gt(added, 100);
	/* The failed name is absent, all others present, the tree sound. */
	ck_assert_int_eq(lookup_name(&x, name, &ino, NULL), -ENOENT);
	for (uint32_t i = 0; i < added; i++) {
		long_name(name, sizeof(name), i);
		ck_assert_int_eq(lookup_name(&x, name, &ino, NULL), 0);
	}
	ck_assert_int_eq(verify_dir(&x, &log), 0);
	ck_assert_uint_eq(log.entries, added);
	/* Removing makes room in leaves again: adds without new blocks work. */
	for (uint32_t i = 0; i < added; i += 2) {
		long_name(name, sizeof(name), i);
		ck_assert_int_eq(remove_link(&x, name), 0);
	}
	long_name(name, sizeof(name), 0);
	ck_assert_int_eq(add_link(&x, name), 0);
	dfix_finish(&x);
}
END_TEST

/* ---- corruption -------------------------------------------------------- */

/* Maps every logical block of d before unmounting, so the test can find
 * them in the image. */
static uint64_t *map_blocks(struct dfix *x, uint64_t *count)
{
	uint64_t n = dir_blocks(x);
	uint64_t *pblk = calloc(n, sizeof(*pblk));
	ck_assert_ptr_nonnull(pblk);
	for (uint64_t l = 0; l < n; l++) {
		struct ordfs_extent e;
		ck_assert_int_eq(extent_lookup(x->fs, x->d, l, &e), 1);
		pblk[l] = e.physical + (l - e.logical);
	}
	*count = n;
	return pblk;
}

static uint8_t *image_block(struct dfix *x, uint64_t pblk, uint32_t bs)
{
	return blockdev_mem_bytes(x->t.mem) + pblk * bs;
}

enum corruption {
	FLIP_NAME_BYTE,    /* checksum catches it */
	LEAF_COUNT,        /* valid checksum, count off by one */
	LEAF_USED_HUGE,    /* valid checksum, used past the block */
	INDEX_CHILD_RANGE, /* valid checksum, child beyond the directory */
	INDEX_KEY_ORDER,   /* valid checksum, keys out of order */
	CHAIN_CYCLE,       /* valid checksum, last leaf points back to the first */
	WRONG_OWNER,       /* valid checksum, owner is another inode */
};

struct corrupt_case {
	enum corruption what;
	uint32_t entries;
	bool lookups_fail; /* else only readdir and verify notice */
};

static void corrupt_image(struct dfix *x, const struct corrupt_case *cc, const uint64_t *pblk,
			  uint32_t bs, uint32_t csum_seed)
{
	uint8_t *root = image_block(x, pblk[0], bs);
	uint8_t *blk = root;

	switch (cc->what) {
	case FLIP_NAME_BYTE:
		root[ORDFS_DIR_NODE_HDR + 14] ^= 0x20;
		return; /* no checksum fix-up */
	case LEAF_COUNT:
		le_put16(root + DIR_LEAF_COUNT_OFF, (uint16_t)(dleaf_count(root) + 1));
		break;
	case LEAF_USED_HUGE:
		le_put16(root + DIR_LEAF_USED_OFF, 0xfff8);
		break;
	case INDEX_CHILD_RANGE:
		ck_assert_uint_eq(le_get16(root + 4), ORDFS_BT_DIR_INDEX);
		le_put64(root + ORDFS_DIR_NODE_HDR + 16 + 8, 1u << 20);
		break;
	case INDEX_KEY_ORDER:
		ck_assert_uint_ge(dindex_count(root), 3);
		le_put64(root + ORDFS_DIR_NODE_HDR + 16, dindex_key(root, 2));
		break;
	case CHAIN_CYCLE: {
		ck_assert_uint_eq(dindex_level(root), 1);
		uint64_t last = dindex_child(root, dindex_count(root) - 1);
		blk = image_block(x, pblk[last], bs);
		dleaf_set_next(blk, (uint32_t)dindex_child(root, 0));
		break;
	}
	case WRONG_OWNER:
		le_put32(root + 12, ordfs_block_owner(root) + 1);
		break;
	}
	ordfs_block_csum_set(blk, bs, csum_seed);
}

static int stop_never(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		      uint64_t next_cookie)
{
	(void)name;
	(void)len;
	(void)ino;
	(void)dtype;
	(void)next_cookie;
	(*(uint32_t *)ctx)++;
	return 0;
}

static void run_corruption(const struct corrupt_case *cc)
{
	struct dfix x;
	struct problem_log log;
	char name[32];
	uint32_t ino, emitted = 0;
	uint64_t nblocks;

	dfix_setup(&x, 16 << 20, 4096);
	add_indexed(&x, 0, cc->entries);
	uint64_t *pblk = map_blocks(&x, &nblocks);
	uint32_t bs = x.fs->block_size, seed = x.fs->csum_seed;
	dfix_put_inodes(&x);
	tfs_unmount(&x.t);

	corrupt_image(&x, cc, pblk, bs, seed);
	tfs_mount(&x.t);
	dfix_get_inodes(&x);

	uint32_t failures = 0;
	for (uint32_t i = 0; i < cc->entries; i++) {
		name_of(name, sizeof(name), i);
		int r = lookup_name(&x, name, &ino, NULL);
		ck_assert(r == 0 || r == -EUCLEAN);
		failures += r == -EUCLEAN;
	}
	if (cc->lookups_fail)
		ck_assert_uint_gt(failures, 0);
	else
		ck_assert_uint_eq(failures, 0);
	ck_assert_int_eq(dir_readdir(x.fs, x.d, 0, stop_never, &emitted), -EUCLEAN);
	ck_assert_int_eq(verify_dir(&x, &log), -EUCLEAN);
	ck_assert_uint_gt(log.count, 0);
	if (cc->what != CHAIN_CYCLE)
		ck_assert_uint_eq(log.first_lblk, 0);

	/* A change through a corrupt path is refused and changes nothing. */
	if (cc->lookups_fail) {
		uint64_t size = x.d->d.size;
		ck_assert_int_eq(add_link(&x, "entry-9999999"), -EUCLEAN);
		ck_assert_uint_eq(x.d->d.size, size);
	}
	dfix_put_inodes(&x);
	tfs_unmount(&x.t);
	ck_assert_int_gt(tfs_check_image(&x.t), 0);
	tfs_free(&x.t);
	free(pblk);
}

static const struct corrupt_case corrupt_cases[] = {
	{ FLIP_NAME_BYTE, 20, true },      { LEAF_COUNT, 20, true },
	{ LEAF_USED_HUGE, 20, true },      { WRONG_OWNER, 20, true },
	{ INDEX_CHILD_RANGE, 2000, true }, { INDEX_KEY_ORDER, 2000, true },
	{ CHAIN_CYCLE, 2000, false },
};

START_TEST(test_corruption)
{
	run_corruption(&corrupt_cases[_i]);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *dir_suite(void)
{
	Suite *s = suite_create("dir");
	TCase *tc = tcase_create("payload");
	tcase_add_test(tc, test_check_name);
	tcase_add_test(tc, test_leaf_equal_hashes);
	tcase_add_test(tc, test_leaf_split_keeps_buckets);
	tcase_add_test(tc, test_leaf_problems);
	tcase_add_test(tc, test_index_helpers);
	suite_add_tcase(s, tc);

	tc = tcase_create("tree");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_add_lookup_remove_replace);
	tcase_add_test(tc, test_many_entries);
	tcase_add_test(tc, test_tall_tree);
	tcase_add_test(tc, test_readdir_with_changes);
	tcase_add_test(tc, test_enospc);
	tcase_add_loop_test(tc, test_corruption, 0,
			    (int)(sizeof(corrupt_cases) / sizeof(corrupt_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(dir_suite());
}
