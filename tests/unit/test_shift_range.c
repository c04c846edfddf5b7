/*
 * test_shift_range.c - FALLOC_FL_COLLAPSE_RANGE and FALLOC_FL_INSERT_RANGE
 * on an in-memory image: the extent-level shift (extent_shift,
 * extent_split_at) on a tree of depth > 1 with holes and unwritten
 * extents, compared record by record with the map before it; the
 * operations through ops.h compared byte for byte with a model under
 * random writes, preallocation, punches and delayed pages, in data=ordered,
 * data=journal and with the j flag; every refusal with its errno and the
 * file unchanged; the journal bound; and a power cut at every write of a
 * collapse and of an insert: the file afterwards is the old one or the new
 * one, never a mix.  Every test ends with the checker.
 */
#include "suite_main.h"
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "extent/extent.h"
#include "inode/iflags.h"
#include "inode/pages.h"

#define COLLAPSE FALLOC_FL_COLLAPSE_RANGE
#define INSERT FALLOC_FL_INSERT_RANGE

static const struct ordfs_cred root_cred = { 0, 0 };

/* The model of a file: its bytes and its size (cap bytes of room). */
struct model {
	uint8_t *b;
	uint64_t size, cap;
};

static void model_init(struct model *m, uint64_t cap)
{
	m->b = calloc(1, cap);
	m->size = 0;
	m->cap = cap;
}

static void write_model(struct test_fs *t, struct inode *f, struct model *m, uint64_t off,
			size_t len, uint32_t seed)
{
	ck_assert_uint_le(off + len, m->cap);
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 131 + seed * 17) ^ (i >> 7) ^ 0xa5);
	ck_assert_int_eq(ordfs_write(t->fs, f, buf, len, off), (ssize_t)len);
	memcpy(m->b + off, buf, len);
	if (off + len > m->size)
		m->size = off + len;
	free(buf);
}

static void model_collapse(struct model *m, uint64_t off, uint64_t len)
{
	memmove(m->b + off, m->b + off + len, m->size - off - len);
	memset(m->b + m->size - len, 0, len);
	m->size -= len;
}

static void model_insert(struct model *m, uint64_t off, uint64_t len)
{
	ck_assert_uint_le(m->size + len, m->cap);
	memmove(m->b + off + len, m->b + off, m->size - off);
	memset(m->b + off, 0, len);
	m->size += len;
}

static bool file_matches(struct test_fs *t, struct inode *f, const struct model *m)
{
	if (f->size != m->size)
		return false;
	uint8_t *got = malloc(m->size + 1);
	bool same = ordfs_read(t->fs, f, got, m->size + 1, 0) == (ssize_t)m->size &&
		    memcmp(got, m->b, m->size) == 0;
	free(got);
	return same;
}

static void expect_model(struct test_fs *t, struct inode *f, const struct model *m)
{
	ck_assert_uint_eq(f->size, m->size);
	uint8_t *got = malloc(m->size + 1);
	ck_assert_int_eq(ordfs_read(t->fs, f, got, m->size + 1, 0), (ssize_t)m->size);
	if (memcmp(got, m->b, m->size) != 0) { /* one assertion: Check logs each */
		size_t i = 0;
		while (got[i] == m->b[i])
			i++;
		ck_abort_msg("byte %zu: got %u want %u", i, got[i], m->b[i]);
	}
	free(got);
}

/* ---- the extent map as a list ------------------------------------------------ */

struct map {
	struct ordfs_extent *e;
	size_t n, cap;
};

static int map_cb(void *ctx, const struct ordfs_extent *e)
{
	struct map *m = ctx;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
	}
	m->e[m->n++] = *e;
	return 0;
}

static struct map map_of(struct test_fs *t, struct inode *f)
{
	struct map m = { 0 };
	struct extent_walk_ops ops = { NULL, map_cb, &m };
	ck_assert_int_eq(extent_walk(t->fs, f, &ops), 0);
	return m;
}

/* got is want with every record at or after start moved by delta. */
static void expect_shifted(const struct map *want, const struct map *got, uint64_t start,
			   int64_t delta)
{
	ck_assert_uint_eq(got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		struct ordfs_extent w = want->e[i];
		if (w.logical >= start)
			w.logical += (uint64_t)delta;
		ck_assert_uint_eq(got->e[i].logical, w.logical);
		ck_assert_uint_eq(got->e[i].physical, w.physical);
		ck_assert_uint_eq(got->e[i].len, w.len);
		ck_assert_uint_eq(got->e[i].flags, w.flags);
	}
}

/* A file of 1 KiB blocks: runs of 3 written blocks with 2-block gaps, every
 * fifth gap preallocated (unwritten): a tree of depth >= 2. */
static struct inode *make_fragmented(struct test_fs *t, const char *name, struct model *m,
				     unsigned runs)
{
	const uint32_t B = t->fs->block_size;
	struct inode *f = tfs_create_file(t, name);
	for (unsigned r = 0; r < runs; r++) {
		uint64_t b = (uint64_t)r * 5;
		write_model(t, f, m, b * B, 3 * B, r);
		if (r % 5 == 4)
			ck_assert_int_eq(ordfs_fallocate(t->fs, f, FALLOC_FL_KEEP_SIZE,
							 (b + 3) * B, 2 * B),
					 0);
		if (r % 64 == 63)
			ck_assert_int_eq(ordfs_fsync(t->fs, f, false), 0);
	}
	ck_assert_int_eq(ordfs_fsync(t->fs, f, false), 0);
	return f;
}

/* One handle for a shift (and a split before it) at start. */
static struct handle *shift_handle(struct test_fs *t, struct inode *f, uint64_t start)
{
	uint32_t credits;
	ck_assert_int_eq(extent_shift_credits(t->fs, f, start, &credits), 0);
	return tfs_start(t, credits + extent_credits(t->fs, f, 2));
}

/* ---- extent level ------------------------------------------------------------ */

START_TEST(test_shift_extent_map)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 1024, 0);
	struct model m;
	model_init(&m, 8 << 20);
	struct inode *f = make_fragmented(&t, "frag", &m, 600);
	ck_assert_uint_ge(extent_depth(f), 2);
	struct map before = map_of(&t, f);
	uint64_t blocks = f->d.blocks;

	/* Right by 7 from the middle of a record: cut, then move. */
	uint64_t start = 1500 * 5 / 5 + 1; /* block 1501: inside run 300 */
	ck_assert_uint_eq(start % 5, 1);
	ordfs_rwlock_wrlock(&f->lock);
	struct handle *h = shift_handle(&t, f, start);
	ck_assert_int_eq(extent_shift(t.fs, h, f, start, 7), -EINVAL); /* crosses start */
	ck_assert_int_eq(extent_split_at(t.fs, h, f, start), 0);
	ck_assert_int_eq(extent_shift(t.fs, h, f, start, 7), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	struct map split = map_of(&t, f), got = split;
	ck_assert_uint_eq(split.n, before.n + 1);
	/* The split record, then every later one moved by 7, flags kept. */
	size_t k = 0;
	while (before.e[k].logical + before.e[k].len <= start)
		k++;
	ck_assert_uint_eq(got.e[k].logical, 1500);
	ck_assert_uint_eq(got.e[k].len, 1);
	ck_assert_uint_eq(got.e[k + 1].logical, start + 7);
	ck_assert_uint_eq(got.e[k + 1].physical, before.e[k].physical + 1);
	ck_assert_uint_eq(got.e[k + 1].len, 2);
	for (size_t i = k + 1; i < before.n; i++) {
		ck_assert_uint_eq(got.e[i + 1].logical, before.e[i].logical + 7);
		ck_assert_uint_eq(got.e[i + 1].physical, before.e[i].physical);
		ck_assert_uint_eq(got.e[i + 1].flags, before.e[i].flags);
	}
	for (size_t i = 0; i < k; i++)
		ck_assert_mem_eq(&got.e[i], &before.e[i], sizeof(before.e[i]));
	ck_assert_uint_eq(f->d.blocks, blocks + (f->d.blocks - blocks)); /* no data moved */

	/* Left over blocks that are mapped: refused, nothing changed. */
	ordfs_rwlock_wrlock(&f->lock);
	h = shift_handle(&t, f, 2000);
	ck_assert_int_eq(extent_shift(t.fs, h, f, 2000, -3), -EINVAL);
	ck_assert_int_eq(extent_shift(t.fs, h, f, 2, -3), -EINVAL); /* before block 0 */
	/* Back to where they were: [start, start + 7) is a hole. */
	ck_assert_int_eq(extent_shift(t.fs, h, f, start + 7, -7), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	got = map_of(&t, f);
	expect_shifted(&split, &got, start + 7, -7);

	/* Left by 2 from every gap in turn would need a hole of 2: the
	 * unwritten gaps are mapped (refused), the others move. */
	ordfs_rwlock_wrlock(&f->lock);
	h = shift_handle(&t, f, 25);
	ck_assert_int_eq(extent_shift(t.fs, h, f, 25, -2), -EINVAL); /* gap 23-24 unwritten */
	ck_assert_int_eq(extent_shift(t.fs, h, f, 5, -2), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	struct map left = map_of(&t, f);
	expect_shifted(&got, &left, 5, -2);
	ck_assert_uint_eq(left.e[1].logical, 3); /* right after the first run */

	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "frag");
	struct map again = map_of(&t, f);
	expect_shifted(&left, &again, 0, 0);
	inode_put(t.fs, f);
	free(before.e);
	free(split.e);
	free(got.e);
	free(left.e);
	free(again.e);
	free(m.b);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- through ops.h, against a model ----------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random writes, preallocation, punches, collapses and inserts, some with
 * pages still delayed, each checked against the model. */
static void random_ops(struct test_fs *t, struct inode *f, struct model *m, uint64_t seed,
		       unsigned nops)
{
	const uint32_t B = t->fs->block_size;
	const uint64_t max = m->cap / 2;
	unsigned shifts = 0;
	for (unsigned i = 0; i < nops; i++) {
		uint64_t r = rnd(&seed) % 10;
		uint64_t off = rnd(&seed) % max, len = 1 + rnd(&seed) % (64 * B);
		if (r < 4 || m->size < 2 * B) {
			if (off + len > max)
				len = max - off;
			if (len > 0)
				write_model(t, f, m, off, len, (uint32_t)i);
		} else if (r == 4) {
			if (off + len > max)
				len = max - off;
			if (len > 0)
				ck_assert_int_eq(ordfs_fallocate(t->fs, f, FALLOC_FL_KEEP_SIZE, off, len),
						 0);
		} else if (r == 5) {
			ck_assert_int_eq(ordfs_fallocate(t->fs, f,
							 FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
							 off, len),
					 0);
			if (off < m->size)
				memset(m->b + off, 0, (off + len < m->size ? off + len : m->size) - off);
		} else if (r < 8) {
			uint64_t blocks = (m->size - 1) / B; /* blocks wholly before the last */
			uint64_t a = rnd(&seed) % blocks, n = 1 + rnd(&seed) % (blocks - a);
			if ((a + n) * B >= m->size)
				n = blocks - a;
			if (n == 0)
				continue;
			ck_assert_int_eq(ordfs_fallocate(t->fs, f, COLLAPSE, a * B, n * B), 0);
			model_collapse(m, a * B, n * B);
			shifts++;
		} else {
			uint64_t a = rnd(&seed) % ((m->size - 1) / B + 1), n = 1 + rnd(&seed) % 48;
			if (m->size + n * B > max)
				continue;
			ck_assert_int_eq(ordfs_fallocate(t->fs, f, INSERT, a * B, n * B), 0);
			model_insert(m, a * B, n * B);
			shifts++;
		}
		if (r >= 6)
			expect_model(t, f, m);
		if (i % 50 == 49)
			ck_assert_int_eq(ordfs_fsync(t->fs, f, i % 100 == 99), 0);
	}
	ck_assert_uint_gt(shifts, nops / 5);
	expect_model(t, f, m);
}

static void random_case(enum journal_data_mode mode, bool j_flag, uint64_t seed)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 1024, 0);
	if (mode != JOURNAL_DATA_ORDERED) {
		tfs_unmount(&t);
		t.opts.data_mode = mode;
		tfs_mount(&t);
	}
	struct model m;
	model_init(&m, 4 << 20);
	struct inode *f = tfs_create_file(&t, "r");
	if (j_flag)
		ck_assert_int_eq(ordfs_set_flags(t.fs, f, ORDFS_FL_JOURNAL_DATA, ~0u, NULL), 0);
	random_ops(&t, f, &m, seed, 400);
	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "r");
	expect_model(&t, f, &m);
	inode_put(t.fs, f);
	free(m.b);
	tfs_unmount_and_check(&t);
}

START_TEST(test_shift_random_ordered)
{
	random_case(JOURNAL_DATA_ORDERED, false, 0x9e3779b97f4a7c15ull + (uint64_t)_i);
}
END_TEST

START_TEST(test_shift_random_journal)
{
	random_case(JOURNAL_DATA_JOURNAL, false, 0x2545f4914f6cdd1dull);
}
END_TEST

START_TEST(test_shift_random_j_flag)
{
	random_case(JOURNAL_DATA_ORDERED, true, 0x5851f42d4c957f2dull);
}
END_TEST

/* Delayed pages on both sides of the range: written back first, then
 * shifted with the blocks they became; the size on disk follows. */
START_TEST(test_shift_delayed_pages)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct model m;
	model_init(&m, 1 << 20);
	struct inode *f = tfs_create_file(&t, "d");
	write_model(&t, f, &m, 0, 40 * 4096 + 100, 1);
	ck_assert_uint_gt(pages_count(f), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 8 * 4096, 4 * 4096), 0);
	model_collapse(&m, 8 * 4096, 4 * 4096);
	ck_assert_uint_eq(pages_count(f), 0);
	ck_assert_uint_eq(f->d.size, m.size);
	expect_model(&t, f, &m);
	write_model(&t, f, &m, 3 * 4096 + 5, 9000, 2); /* dirty again */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 4 * 4096, 6 * 4096), 0);
	model_insert(&m, 4 * 4096, 6 * 4096);
	ck_assert_uint_eq(f->d.size, m.size);
	expect_model(&t, f, &m);
	/* The inserted range is a hole. */
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 4 * 4096, SEEK_HOLE), 4 * 4096);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 4 * 4096, SEEK_DATA), 10 * 4096);
	inode_put(t.fs, f);
	free(m.b);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- refusals ---------------------------------------------------------------- */

struct snapshot {
	struct model m;
	uint64_t blocks;
	struct map map;
};

static void snap(struct test_fs *t, struct inode *f, const struct model *m, struct snapshot *s)
{
	s->m = *m;
	s->blocks = f->d.blocks;
	s->map = map_of(t, f);
}

static void expect_unchanged(struct test_fs *t, struct inode *f, const struct snapshot *s)
{
	expect_model(t, f, &s->m);
	ck_assert_uint_eq(f->d.blocks, s->blocks);
	struct map now = map_of(t, f);
	expect_shifted(&s->map, &now, 0, 0);
	free(now.e);
}

START_TEST(test_shift_refusals)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	const uint64_t B = 4096;
	struct model m;
	model_init(&m, 1 << 20);
	struct inode *root = tfs_root(&t), *f = tfs_create_file(&t, "f"), *fifo, *dev;
	write_model(&t, f, &m, 0, 10 * B + 123, 3);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	struct snapshot s;
	snap(&t, f, &m, &s);
	const int K = FALLOC_FL_KEEP_SIZE, P = FALLOC_FL_PUNCH_HOLE, Z = FALLOC_FL_ZERO_RANGE;
	static const struct {
		int mode;
		uint64_t off, len;
		int err;
	} cases[] = {
		{ COLLAPSE, B, 0, -EINVAL },                 /* len 0 */
		{ COLLAPSE | K, B, B, -EOPNOTSUPP },         /* combined (Linux 6.11+) */
		{ INSERT | K, B, B, -EOPNOTSUPP },
		{ COLLAPSE | INSERT, B, B, -EOPNOTSUPP },
		{ COLLAPSE | P | K, B, B, -EOPNOTSUPP },
		{ INSERT | Z, B, B, -EOPNOTSUPP },
		{ COLLAPSE, 1, B, -EINVAL },                 /* not aligned */
		{ COLLAPSE, B, B + 1, -EINVAL },
		{ INSERT, 512, B, -EINVAL },
		{ INSERT, B, 100, -EINVAL },
		{ COLLAPSE, 5 * B, 6 * B, -EINVAL },         /* reaches past EOF */
		{ COLLAPSE, 10 * B, B, -EINVAL },            /* the last block */
		{ COLLAPSE, 0, 11 * B, -EINVAL },            /* the whole file */
		{ COLLAPSE, 20 * B, B, -EINVAL },            /* past EOF */
		{ INSERT, 11 * B, B, -EINVAL },              /* at EOF */
		{ INSERT, 40 * B, B, -EINVAL },              /* past EOF */
		{ INSERT, 0, (1ull << 62) - 8 * B, -EFBIG }, /* the new size too big */
		{ INSERT, B, 1ull << 62, -EFBIG },           /* off + len too big (vfs) */
		{ COLLAPSE, INT64_MAX - B + 1, B, -EFBIG },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = ordfs_fallocate(t.fs, f, cases[i].mode, cases[i].off, cases[i].len);
		if (got != cases[i].err)
			ck_abort_msg("case %zu: got %d want %d", i, got, cases[i].err);
		expect_unchanged(&t, f, &s);
	}
	/* With delayed pages: refused before they are written back. */
	write_model(&t, f, &m, 2 * B, 100, 4);
	uint64_t pages = pages_count(f);
	ck_assert_uint_gt(pages, 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, B, 3), -EINVAL);
	ck_assert_uint_eq(pages_count(f), pages);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	free(s.map.e);
	snap(&t, f, &m, &s);

	/* Not regular files. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, root, COLLAPSE, 0, B), -EISDIR);
	ck_assert_int_eq(ordfs_fallocate(t.fs, root, INSERT, 0, B), -EISDIR);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "fifo", S_IFIFO | 0644, 0, &root_cred, &fifo), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, fifo, INSERT, 0, B), -ESPIPE);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "dev", S_IFCHR | 0644, 0x0103, &root_cred, &dev),
			 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, dev, COLLAPSE, 0, B), -ENODEV);

	/* Immutable and append-only. */
	ck_assert_int_eq(ordfs_set_flags(t.fs, f, ORDFS_FL_APPEND, ~0u, NULL), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 0, B), -EPERM);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 0, B), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(t.fs, f, ORDFS_FL_IMMUTABLE, ~0u, NULL), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 0, B), -EPERM);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 0, B), -EPERM);
	expect_unchanged(&t, f, &s);
	ck_assert_int_eq(ordfs_set_flags(t.fs, f, 0, ~0u, NULL), 0);

	/* The allowed edges: the block before the last, and insert at the
	 * last block. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 9 * B, B), 0);
	model_collapse(&m, 9 * B, B);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 9 * B, B), 0);
	model_insert(&m, 9 * B, B);
	expect_model(&t, f, &m);
	inode_put(t.fs, f);
	inode_put(t.fs, fifo);
	inode_put(t.fs, dev);
	inode_put(t.fs, root);

	/* Read-only. */
	tfs_unmount(&t);
	t.opts.readonly = true;
	tfs_mount(&t);
	f = tfs_open_file(&t, "f");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 0, B), -EROFS);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 0, B), -EROFS);
	expect_model(&t, f, &m);
	inode_put(t.fs, f);
	free(s.map.e);
	free(m.b);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A shift that one handle cannot hold is refused before anything changes
 * (a 64-block journal: a handle of at most 56 blocks), and one that fits
 * still works. */
START_TEST(test_shift_journal_bound)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 1024, 64);
	struct model m;
	model_init(&m, 16 << 20);
	struct inode *f = make_fragmented(&t, "big", &m, 2600);
	struct snapshot s;
	snap(&t, f, &m, &s);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, 0, 5 * 1024), -ENOSPC);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, 0, 5 * 1024), -ENOSPC);
	expect_unchanged(&t, f, &s);
	uint64_t near_end = (uint64_t)2590 * 5 * 1024;
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, COLLAPSE, near_end, 5 * 1024), 0);
	model_collapse(&m, near_end, 5 * 1024);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, INSERT, near_end, 2 * 1024), 0);
	model_insert(&m, near_end, 2 * 1024);
	expect_model(&t, f, &m);
	inode_put(t.fs, f);
	free(s.map.e);
	free(m.b);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- crashes ------------------------------------------------------------------ */

/* A power cut at the nth write from the start of a collapse or an insert
 * (the device breaks there: that write and all later ones are lost, and so
 * is every write since the last good flush), then recovery: the file is
 * exactly its old shape or its new one, and the new one if the fsync after
 * the operation returned 0.  The writes are the commit's and then the
 * checkpoint's (every block home); n goes up until the operation, its
 * fsync and the checkpoint run without reaching the fault. */
static void crash_sweep(int mode, uint64_t off, uint64_t len)
{
	unsigned stride = tfs_sweep_stride();
	for (uint64_t n = 1;; n += stride) {
		struct test_fs t;
		tfs_setup(&t, 64 << 20, 1024, 0);
		struct model before, after;
		model_init(&before, 4 << 20);
		struct inode *f = make_fragmented(&t, "c", &before, 400);
		ck_assert_int_eq(ordfs_sync(t.fs), 0);
		after.b = malloc(before.cap);
		memcpy(after.b, before.b, before.cap);
		after.size = before.size;
		after.cap = before.cap;
		if (mode == COLLAPSE)
			model_collapse(&after, off, len);
		else
			model_insert(&after, off, len);

		blockdev_record_drop_unflushed(t.rec, true);
		struct blockdev_fault fault = { n, -EIO, true };
		blockdev_record_fault(t.rec, BD_EV_WRITE, &fault);
		int err = ordfs_fallocate(t.fs, f, mode, off, len);
		int serr = err ? err : ordfs_fsync(t.fs, f, false);
		if (serr == 0) /* and the checkpoint's writes home */
			(void)journal_flush_all(t.fs->journal);
		bool fired = blockdev_record_faults_fired(t.rec) > 0;
		inode_put(t.fs, f);
		blockdev_record_power_cut(t.rec);
		blockdev_record_heal(t.rec);
		tfs_crash(&t);

		tfs_mount(&t);
		f = tfs_open_file(&t, "c");
		bool old_shape = file_matches(&t, f, &before);
		bool new_shape = file_matches(&t, f, &after);
		if (!old_shape && !new_shape)
			ck_abort_msg("cut at write %llu: neither shape (size %llu)",
				     (unsigned long long)n, (unsigned long long)f->size);
		if (serr == 0)
			ck_assert_msg(new_shape, "cut at write %llu: fsync'd, old shape",
				      (unsigned long long)n);
		inode_put(t.fs, f);
		free(before.b);
		free(after.b);
		tfs_unmount_and_check(&t);
		if (!fired) {
			/* the sweep reached every write of the operation */
			ck_assert_uint_gt(n, 3);
			fprintf(stderr, "crash sweep: %llu cut points\n", (unsigned long long)n - 1);
			break;
		}
	}
}

START_TEST(test_collapse_crash_sweep)
{
	crash_sweep(COLLAPSE, 100 * 1024, 703 * 1024);
}
END_TEST

START_TEST(test_insert_crash_sweep)
{
	crash_sweep(INSERT, 101 * 1024, 57 * 1024);
}
END_TEST

static Suite *shift_suite(void)
{
	Suite *s = suite_create("shift_range");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_shift_extent_map);
	tcase_add_loop_test(tc, test_shift_random_ordered, 0, 3);
	tcase_add_test(tc, test_shift_random_journal);
	tcase_add_test(tc, test_shift_random_j_flag);
	tcase_add_test(tc, test_shift_delayed_pages);
	tcase_add_test(tc, test_shift_refusals);
	tcase_add_test(tc, test_shift_journal_bound);
	tcase_add_test(tc, test_collapse_crash_sweep);
	tcase_add_test(tc, test_insert_crash_sweep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(shift_suite());
}
