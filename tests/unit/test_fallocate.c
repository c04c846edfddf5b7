/*
 * test_fallocate.c - fallocate (preallocation, punch hole, zero range),
 * writes into unwritten extents and SEEK_DATA / SEEK_HOLE, on an in-memory
 * image.  File contents are checked against a model kept in memory; every
 * test ends with the checker (unwritten extents past EOF included).
 */
#include "suite_main.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "file/file.h"
#include "inode/pages.h"
#include "orphan/orphan.h"
#include "writeback/writeback.h"
#include "extent/extent.h"

#define BS 4096u

static const struct ordfs_cred root_cred = { 0, 0 };

/* Writes len pattern bytes at off into the file and into the model. */
static void write_model(struct test_fs *t, struct inode *f, uint8_t *model, uint64_t off,
			size_t len, uint32_t seed)
{
	uint8_t *buf = malloc(len);
	tfs_fill_pattern(buf, len, seed);
	ck_assert_int_eq(ordfs_write(t->fs, f, buf, len, off), (ssize_t)len);
	memcpy(model + off, buf, len);
	free(buf);
}

/* The file reads exactly as the model, and size bytes long. */
static void expect_model(struct test_fs *t, struct inode *f, const uint8_t *model, size_t size)
{
	ck_assert_uint_eq(f->size, size);
	uint8_t *got = malloc(size + 1);
	ck_assert_int_eq(ordfs_read(t->fs, f, got, size + 1, 0), (ssize_t)size);
	if (memcmp(got, model, size) != 0) { /* one assertion: Check logs each */
		size_t i = 0;
		while (got[i] == model[i])
			i++;
		ck_abort_msg("byte %zu: got %u want %u", i, got[i], model[i]);
	}
	free(got);
}

static void expect_zeros(struct test_fs *t, struct inode *f, uint64_t off, size_t len)
{
	uint8_t *got = malloc(len);
	memset(got, 0xee, len);
	ck_assert_int_eq(ordfs_read(t->fs, f, got, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != 0)
			ck_abort_msg("byte %llu not zero", (unsigned long long)(off + i));
	free(got);
}

static uint64_t free_blocks(struct test_fs *t)
{
	ck_assert_int_eq(journal_force_commit(t->fs->journal), 0); /* pending frees [J5] */
	struct alloc_counts c;
	alloc_get_counts(t->fs->alloc, &c);
	return c.free_blocks;
}

/* What data may still take: free blocks minus the metadata reserve. */
static uint64_t data_blocks(struct test_fs *t)
{
	ck_assert_int_eq(journal_force_commit(t->fs->journal), 0);
	struct alloc_counts c;
	alloc_get_counts(t->fs->alloc, &c);
	return c.data_blocks;
}

struct ext_count {
	unsigned written, unwritten;
	uint64_t unwritten_blocks;
};

static int count_cb(void *ctx, const struct ordfs_extent *e)
{
	struct ext_count *c = ctx;
	if (e->flags & ORDFS_EXT_UNWRITTEN) {
		c->unwritten++;
		c->unwritten_blocks += e->len;
	} else {
		c->written++;
	}
	return 0;
}

static struct ext_count count_extents(struct test_fs *t, struct inode *f)
{
	struct ext_count c = { 0, 0, 0 };
	struct extent_walk_ops ops = { NULL, count_cb, &c };
	ck_assert_int_eq(extent_walk(t->fs, f, &ops), 0);
	return c;
}

/* ---- preallocation -------------------------------------------------------- */

START_TEST(test_prealloc_extends_size)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	struct inode *f = tfs_create_file(&t, "pre");
	uint64_t free0 = free_blocks(&t);

	uint64_t len = 10 * BS + 100; /* 11 blocks */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, len), 0);
	ck_assert_uint_eq(f->size, len);
	ck_assert_uint_eq(f->d.size, len);
	ck_assert_uint_eq(f->d.blocks, 11);
	ck_assert_uint_eq(free_blocks(&t), free0 - 11);
	struct stat st;
	ordfs_getattr(t.fs, f, &st);
	ck_assert_int_eq(st.st_size, (off_t)len);
	ck_assert_int_eq(st.st_blocks, 11 * (BS / 512));
	expect_zeros(&t, f, 0, len);
	struct ext_count c = count_extents(&t, f);
	ck_assert_uint_eq(c.unwritten, 1);
	ck_assert_uint_eq(c.written, 0);

	/* Again over the same range: nothing new. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, len), 0);
	ck_assert_uint_eq(f->d.blocks, 11);

	/* KEEP_SIZE: blocks past EOF, size unchanged. */
	struct inode *g = tfs_create_file(&t, "keep");
	ck_assert_int_eq(ordfs_fallocate(t.fs, g, FALLOC_FL_KEEP_SIZE, BS, 8 * BS), 0);
	ck_assert_uint_eq(g->size, 0);
	ck_assert_uint_eq(g->d.blocks, 8);
	ck_assert_uint_eq(free_blocks(&t), free0 - 19);
	uint8_t b[16];
	ck_assert_int_eq(ordfs_read(t.fs, g, b, sizeof(b), 0), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, g);

	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "pre");
	g = tfs_open_file(&t, "keep");
	ck_assert_uint_eq(f->size, len);
	ck_assert_uint_eq(f->d.blocks, 11);
	ck_assert_uint_eq(g->size, 0);
	ck_assert_uint_eq(g->d.blocks, 8);
	expect_zeros(&t, f, 0, len);
	ck_assert_uint_eq(free_blocks(&t), free0 - 19);

	/* Extending past the preallocation keeps it; a truncate drops it. */
	ck_assert_int_eq(ordfs_truncate(t.fs, g, 3 * BS), 0);
	expect_zeros(&t, g, 0, 3 * BS);
	ck_assert_uint_eq(g->d.blocks, 8);
	ck_assert_int_eq(ordfs_truncate(t.fs, g, BS), 0);
	ck_assert_uint_eq(g->d.blocks, 0);
	inode_put(t.fs, f);
	inode_put(t.fs, g);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A delayed page in the range keeps its reservation and is allocated by
 * writeback; the holes around it are preallocated. */
START_TEST(test_prealloc_around_delayed_pages)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	static uint8_t model[16 * BS];
	struct inode *f = tfs_create_file(&t, "mixed");
	write_model(&t, f, model, 3 * BS + 10, 100, 1); /* delayed page in block 3 */
	ck_assert_uint_eq(pages_delayed_blocks(f), 1);
	uint64_t free0 = free_blocks(&t); /* the reservation is already counted */

	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, 16 * BS), 0);
	ck_assert_uint_eq(f->size, 16 * BS);
	ck_assert_uint_eq(pages_delayed_blocks(f), 1);
	ck_assert_uint_eq(f->d.blocks, 15);
	ck_assert_uint_eq(free_blocks(&t), free0 - 15);
	expect_model(&t, f, model, 16 * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, 16);
	ck_assert_uint_eq(f->d.size, 16 * BS);
	expect_model(&t, f, model, 16 * BS);
	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "mixed");
	expect_model(&t, f, model, 16 * BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- writes into unwritten extents ------------------------------------------ */

START_TEST(test_write_into_prealloc)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 64 };
	static uint8_t model[NB * BS];
	memset(model, 0, sizeof(model));
	struct inode *f = tfs_create_file(&t, "w");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, NB * BS), 0);
	uint64_t free0 = free_blocks(&t);

	write_model(&t, f, model, 0, 4 * BS, 1);             /* whole blocks 0..3 */
	write_model(&t, f, model, 10 * BS + 100, 50, 2);     /* inside block 10 */
	write_model(&t, f, model, 20 * BS - 7, 20, 3);       /* across blocks 19|20 */
	write_model(&t, f, model, 30 * BS, 3 * BS + 1, 4);   /* 30..32 whole, 33 partial */
	write_model(&t, f, model, NB * BS - 10, 10, 5);      /* the last bytes */
	expect_model(&t, f, model, NB * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	expect_model(&t, f, model, NB * BS);
	/* No new data blocks; nine records moved the root into one tree block. */
	ck_assert_uint_eq(extent_depth(f), 1);
	ck_assert_uint_eq(f->d.blocks, NB + 1);
	ck_assert_uint_eq(free_blocks(&t), free0 - 1);
	struct ext_count c = count_extents(&t, f);
	ck_assert_uint_ge(c.written, 5);
	ck_assert_uint_eq(c.unwritten_blocks, NB - 4 - 1 - 2 - 4 - 1);
	inode_put(t.fs, f);

	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "w");
	expect_model(&t, f, model, NB * BS);

	/* Writing the rest in order merges everything into one written extent. */
	for (unsigned b = 0; b < NB; b++) {
		uint8_t one[BS];
		ck_assert_int_eq(ordfs_read(t.fs, f, one, BS, (uint64_t)b * BS), BS);
		ck_assert_int_eq(ordfs_write(t.fs, f, one, BS, (uint64_t)b * BS), BS);
		ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	}
	c = count_extents(&t, f);
	ck_assert_uint_eq(c.written, 1);
	ck_assert_uint_eq(c.unwritten, 0);
	expect_model(&t, f, model, NB * BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Preallocated past EOF (KEEP_SIZE), then appended into: d.size moves with
 * the conversion, and the fsync'd data survives a crash exactly. */
START_TEST(test_write_into_prealloc_crash)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 32 };
	static uint8_t model[NB * BS];
	memset(model, 0, sizeof(model));
	struct inode *f = tfs_create_file(&t, "log");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 0, NB * BS), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	uint64_t size = 0;
	for (uint32_t i = 0; i < 40; i++) { /* appends of odd sizes */
		size_t n = 700 + i * 37;
		write_model(&t, f, model, size, n, 10 + i);
		size += n;
		if (i % 5 == 4)
			ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	}
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	uint64_t synced = size;
	ck_assert_uint_eq(f->d.size, synced);
	write_model(&t, f, model, size, 5000, 99); /* never synced */
	ck_assert_uint_eq(f->d.blocks, NB);
	inode_put(t.fs, f);

	tfs_crash(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "log");
	ck_assert(f->size == synced || f->size == synced + 5000);
	expect_model(&t, f, model, f->size);
	ck_assert_uint_eq(f->d.blocks, NB);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Many splits: every third block of a long unwritten extent written, on
 * 1 KiB blocks so the tree grows levels; then zero ranges across the
 * records, seeks over them, and a remount. */
START_TEST(test_unwritten_deep_tree)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, 1024, 0);
	enum { NB = 3000, B = 1024 };
	uint8_t *model = calloc(NB, B);
	struct inode *f = tfs_create_file(&t, "deep");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, (uint64_t)NB * B), 0);
	for (unsigned b = 0; b < NB; b += 3) {
		write_model(&t, f, model, (uint64_t)b * B + 1, B - 2, b);
		if (b % 300 == 0)
			ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	}
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_ge(extent_depth(f), 2);
	struct ext_count c = count_extents(&t, f);
	ck_assert_uint_eq(c.written, NB / 3);
	expect_model(&t, f, model, (size_t)NB * B);

	/* data at 0, 3, 6, ...: holes (unwritten) at 1, 2, 4, 5, ... */
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_HOLE), B);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, B, SEEK_DATA), 3 * B);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 1500ull * B + 5, SEEK_DATA), 1500ull * B + 5);

	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, 100ull * B + 7, 1000ull * B),
			 0);
	memset(model + 100 * B + 7, 0, 1000 * B);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, 2000ull * B, 500ull * B), 0);
	memset(model + 2000 * B, 0, 500 * B);
	expect_model(&t, f, model, (size_t)NB * B);
	ck_assert_uint_gt(f->d.blocks, NB); /* data blocks + tree blocks */
	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "deep");
	expect_model(&t, f, model, (size_t)NB * B);
	c = count_extents(&t, f);
	ck_assert_uint_eq(c.written, 1000 - 333 - 167); /* multiples of 3 zeroed */
	inode_put(t.fs, f);
	free(model);
	tfs_unmount_and_check(&t);
}
END_TEST

/* extent_set_flags with the smallest budget: a split per call, the caller
 * loops, and each call leaves a valid tree. */
START_TEST(test_set_flags_small_budget)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	struct inode *f = tfs_create_file(&t, "budget");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, 100 * BS), 0);
	ordfs_rwlock_wrlock(&f->lock);
	int more, calls = 0;
	do {
		struct handle *h = tfs_start(&t, extent_credits(t.fs, f, 2));
		more = extent_set_flags(t.fs, h, f, 10, 50, 0, 2);
		tfs_stop(h);
		ck_assert_int_ge(more, 0);
		calls++;
	} while (more == 1);
	ordfs_rwlock_unlock(&f->lock);
	ck_assert_int_eq(calls, 3); /* split at 10, split at 60, flags */
	struct ext_count c = count_extents(&t, f);
	ck_assert_uint_eq(c.written, 1);
	ck_assert_uint_eq(c.unwritten, 2);
	ck_assert_uint_eq(c.unwritten_blocks, 50);
	/* Back to unwritten: the three records merge into one. */
	ordfs_rwlock_wrlock(&f->lock);
	struct handle *h = tfs_start(&t, extent_credits(t.fs, f, 5));
	ck_assert_int_eq(extent_set_flags(t.fs, h, f, 0, 1000, ORDFS_EXT_UNWRITTEN, 5), 0);
	tfs_stop(h);
	ordfs_rwlock_unlock(&f->lock);
	c = count_extents(&t, f);
	ck_assert_uint_eq(c.unwritten, 1);
	ck_assert_uint_eq(c.written, 0);
	expect_zeros(&t, f, 0, 100 * BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- punch hole --------------------------------------------------------------- */

START_TEST(test_punch_hole_middle)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 20 };
	static uint8_t model[NB * BS];
	struct inode *f = tfs_create_file(&t, "p");
	write_model(&t, f, model, 0, NB * BS, 7);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, NB);
	uint64_t free0 = free_blocks(&t);

	uint64_t off = 3 * BS + 100, len = 7 * BS + 100; /* blocks 4..9 whole */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 off, len),
			 0);
	memset(model + off, 0, len);
	ck_assert_uint_eq(f->size, NB * BS);
	ck_assert_uint_eq(f->d.blocks, NB - 6);
	ck_assert_uint_eq(free_blocks(&t), free0 + 6);
	expect_model(&t, f, model, NB * BS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_HOLE), 4 * BS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 4 * BS, SEEK_DATA), 10 * BS);

	/* Within one block, and a range of whole blocks. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 15 * BS + 1, 10),
			 0);
	memset(model + 15 * BS + 1, 0, 10);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 0, BS),
			 0);
	memset(model, 0, BS);
	ck_assert_uint_eq(f->d.blocks, NB - 7);
	expect_model(&t, f, model, NB * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);

	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "p");
	expect_model(&t, f, model, NB * BS);
	ck_assert_uint_eq(f->d.blocks, NB - 7);
	ck_assert_uint_eq(free_blocks(&t), free0 + 7);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_punch_past_eof)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	static uint8_t model[4 * BS];
	struct inode *f = tfs_create_file(&t, "tail");
	write_model(&t, f, model, 0, 2 * BS + 500, 3);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 0, 16 * BS), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, 16);
	uint64_t free0 = free_blocks(&t);

	/* From inside the last block to far past EOF: the tail of the last
	 * block is zeroed, the preallocation past EOF freed, the size kept. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 2 * BS + 100, 1ull << 40),
			 0);
	memset(model + 2 * BS + 100, 0, 400);
	ck_assert_uint_eq(f->size, 2 * BS + 500);
	ck_assert_uint_eq(f->d.blocks, 3);
	ck_assert_uint_eq(free_blocks(&t), free0 + 13);
	expect_model(&t, f, model, 2 * BS + 500);
	/* Entirely past EOF, over nothing: a no-op. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 1ull << 41, BS),
			 0);
	ck_assert_uint_eq(f->d.blocks, 3);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "tail");
	expect_model(&t, f, model, 2 * BS + 500);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Punching delayed pages drops them and their reservations. */
START_TEST(test_punch_delayed)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 10 };
	static uint8_t model[NB * BS];
	struct inode *f = tfs_create_file(&t, "delayed");
	uint64_t free0 = free_blocks(&t);
	write_model(&t, f, model, 0, NB * BS, 5);
	ck_assert_uint_eq(pages_delayed_blocks(f), NB);
	ck_assert_uint_eq(free_blocks(&t), free0 - NB);

	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 2 * BS + 10, 6 * BS - 10),
			 0);
	memset(model + 2 * BS + 10, 0, 6 * BS - 10);
	ck_assert_uint_eq(pages_delayed_blocks(f), 5); /* 0, 1, 2, 8, 9 */
	ck_assert_uint_eq(free_blocks(&t), free0 - 5);
	ck_assert_uint_eq(f->d.blocks, 0);
	expect_model(&t, f, model, NB * BS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_HOLE), 3 * BS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 3 * BS, SEEK_DATA), 8 * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, 5);
	ck_assert_uint_eq(free_blocks(&t), free0 - 5);
	inode_put(t.fs, f);
	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "delayed");
	expect_model(&t, f, model, NB * BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- zero range ---------------------------------------------------------------- */

START_TEST(test_zero_range)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 16 };
	static uint8_t model[(NB + 8) * BS];
	struct inode *f = tfs_create_file(&t, "z");
	write_model(&t, f, model, 0, NB * BS, 9);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	write_model(&t, f, model, 5 * BS, 2 * BS, 10); /* dirty pages over written blocks */
	uint64_t free0 = free_blocks(&t);

	uint64_t off = BS + 10, len = 7 * BS - 5; /* blocks 2..7 whole */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, off, len), 0);
	memset(model + off, 0, len);
	ck_assert_uint_eq(f->size, NB * BS);
	ck_assert_uint_eq(f->d.blocks, NB); /* still allocated */
	ck_assert_uint_eq(free_blocks(&t), free0);
	expect_model(&t, f, model, NB * BS);
	struct ext_count c = count_extents(&t, f);
	ck_assert_uint_eq(c.unwritten_blocks, 6);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_HOLE), 2 * BS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 2 * BS, SEEK_DATA), 8 * BS);

	/* Past EOF: the size grows, the new blocks are preallocated. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, NB * BS - 100, 4 * BS),
			 0);
	memset(model + NB * BS - 100, 0, 4 * BS);
	ck_assert_uint_eq(f->size, (NB + 4) * BS - 100);
	ck_assert_uint_eq(f->d.blocks, NB + 4);
	/* KEEP_SIZE: the size stays. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					 (NB + 4) * BS, 4 * BS),
			 0);
	ck_assert_uint_eq(f->size, (NB + 4) * BS - 100);
	ck_assert_uint_eq(f->d.blocks, NB + 8);
	expect_model(&t, f, model, (NB + 4) * BS - 100);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);

	tfs_unmount(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "z");
	expect_model(&t, f, model, (NB + 4) * BS - 100);
	inode_put(t.fs, f);
	tfs_crash(&t); /* the zeroing is durable through a crash, too */
	tfs_mount(&t);
	f = tfs_open_file(&t, "z");
	expect_model(&t, f, model, (NB + 4) * BS - 100);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Zeroing delayed pages drops them; the blocks become preallocated. */
START_TEST(test_zero_range_delayed)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	enum { NB = 8 };
	static uint8_t model[NB * BS];
	struct inode *f = tfs_create_file(&t, "zd");
	uint64_t free0 = free_blocks(&t);
	write_model(&t, f, model, 0, NB * BS, 12);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, 2 * BS, 4 * BS), 0);
	memset(model + 2 * BS, 0, 4 * BS);
	ck_assert_uint_eq(pages_delayed_blocks(f), 4);
	ck_assert_uint_eq(f->d.blocks, 4);
	ck_assert_uint_eq(free_blocks(&t), free0 - NB);
	expect_model(&t, f, model, NB * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, NB);
	inode_put(t.fs, f);
	tfs_crash(&t);
	tfs_mount(&t);
	f = tfs_open_file(&t, "zd");
	expect_model(&t, f, model, NB * BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- SEEK_DATA / SEEK_HOLE -------------------------------------------------------- */

START_TEST(test_seek_data_hole)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	struct inode *f = tfs_create_file(&t, "sparse");
	uint64_t G = 1ull << 30;
	uint8_t buf[2 * BS];
	tfs_fill_pattern(buf, sizeof(buf), 1);

	ck_assert_int_eq(ordfs_write(t.fs, f, buf, BS + 10, 0), BS + 10);       /* written */
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, G, 4 * BS), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, buf, 100, G + 2 * BS + 5), 100);  /* into unwritten */
	ck_assert_int_eq(ordfs_write(t.fs, f, buf, BS, 5 * G), BS);            /* delayed */
	ck_assert_int_eq(ordfs_write(t.fs, f, buf, 2 * BS, 6 * G + 100), 2 * BS);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);                       /* 6 G written */
	ck_assert_int_eq(ordfs_write(t.fs, f, buf, BS, 5 * G), BS);            /* delayed again */
	ck_assert_int_eq(ordfs_truncate(t.fs, f, 7 * G), 0);
	ck_assert_uint_eq(f->size, 7 * G);

	struct {
		uint64_t off;
		int whence;
		off_t want;
	} cases[] = {
		{ 0, SEEK_DATA, 0 },
		{ 5, SEEK_DATA, 5 },
		{ 0, SEEK_HOLE, 2 * BS },        /* blocks 0 and 1 hold data */
		{ BS + 20, SEEK_HOLE, 2 * BS }, /* block granular: all of block 1 */
		{ 2 * BS, SEEK_HOLE, 2 * BS },
		{ 2 * BS, SEEK_DATA, (off_t)(G + 2 * BS) }, /* unwritten skipped */
		{ G, SEEK_DATA, (off_t)(G + 2 * BS) },
		{ G + 2 * BS + 1, SEEK_HOLE, (off_t)(G + 3 * BS) },
		{ G + 3 * BS, SEEK_DATA, (off_t)(5 * G) },
		{ 5 * G, SEEK_HOLE, (off_t)(5 * G + BS) },
		{ 5 * G + BS, SEEK_DATA, (off_t)(6 * G) },
		{ 6 * G, SEEK_HOLE, (off_t)(6 * G + 3 * BS) }, /* 6 G..+100+2 BS */
		{ 6 * G + 3 * BS, SEEK_DATA, -ENXIO },
		{ 6 * G + 3 * BS, SEEK_HOLE, (off_t)(6 * G + 3 * BS) },
		{ 7 * G - 1, SEEK_HOLE, (off_t)(7 * G - 1) },
		{ 7 * G, SEEK_HOLE, -ENXIO },
		{ 7 * G, SEEK_DATA, -ENXIO },
		{ 1ull << 63, SEEK_DATA, -ENXIO },
		{ 0, SEEK_SET, -EINVAL },
	};
	for (unsigned pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			off_t got = ordfs_seek_data_hole(t.fs, f, cases[i].off, cases[i].whence);
			ck_assert_msg(got == cases[i].want, "pass %u case %zu: got %lld want %lld",
				      pass, i, (long long)got, (long long)cases[i].want);
		}
		ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0); /* pages gone, same answers */
	}
	inode_put(t.fs, f);

	/* A file that is all hole, and one that is all data. */
	struct inode *h = tfs_create_file(&t, "hole");
	ck_assert_int_eq(ordfs_truncate(t.fs, h, 3 * G), 0);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, h, 0, SEEK_DATA), -ENXIO);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, h, 0, SEEK_HOLE), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, h, 0, 0, 3 * G + 5), -ENOSPC); /* 64 MiB image */
	ck_assert_uint_eq(h->size, 3 * G);
	ck_assert_uint_eq(h->d.blocks, 0);
	inode_put(t.fs, h);
	struct inode *d = tfs_create_file(&t, "data");
	ck_assert_int_eq(ordfs_write(t.fs, d, buf, 100, 0), 100);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, d, 10, SEEK_HOLE), 100);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, d, 10, SEEK_DATA), 10);
	inode_put(t.fs, d);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- ENOSPC and errors ---------------------------------------------------------------- */

START_TEST(test_fallocate_enospc)
{
	struct test_fs t;
	tfs_setup(&t, 4 << 20, BS, 0);
	struct inode *f = tfs_create_file(&t, "big");
	uint64_t free0 = data_blocks(&t), meta0 = free_blocks(&t) - free0;

	/* More than the image: refused, nothing changed. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, (free0 + 1) * BS), -ENOSPC);
	ck_assert_uint_eq(f->size, 0);
	ck_assert_uint_eq(f->d.blocks, 0);
	ck_assert_uint_eq(data_blocks(&t), free0);

	/* Half, then more than the rest: the second is refused. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, free0 / 2 * BS), 0);
	ck_assert_uint_eq(data_blocks(&t), free0 - free0 / 2);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, free0 / 2 * BS, (free0 / 2 + 2) * BS),
			 -ENOSPC);
	ck_assert_uint_eq(f->size, free0 / 2 * BS);

	/* Writes into the preallocation need no space. */
	struct inode *g = tfs_create_file(&t, "filler");
	uint8_t buf[65536];
	tfs_fill_pattern(buf, sizeof(buf), 4);
	uint64_t off = 0;
	ssize_t n;
	while ((n = ordfs_write(t.fs, g, buf, sizeof(buf), off)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, -ENOSPC);
	ck_assert_int_eq(ordfs_fsync(t.fs, g, false), 0);
	ck_assert_uint_eq(data_blocks(&t), 0);
	ck_assert_uint_le(free_blocks(&t), meta0); /* the reserve is left to metadata */
	for (uint64_t p = 0; p + sizeof(buf) <= f->size; p += sizeof(buf))
		ck_assert_int_eq(ordfs_write(t.fs, f, buf, sizeof(buf), p), (ssize_t)sizeof(buf));
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, g, FALLOC_FL_KEEP_SIZE, off, 16 * BS), -ENOSPC);
	/* A punch frees space for the next preallocation. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
					 32 * BS),
			 0);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, g, FALLOC_FL_KEEP_SIZE, off, 16 * BS), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, g);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_fallocate_invalid)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	struct inode *root = tfs_root(&t), *f = tfs_create_file(&t, "f"), *fifo, *link, *dev;
	const int K = FALLOC_FL_KEEP_SIZE, P = FALLOC_FL_PUNCH_HOLE, Z = FALLOC_FL_ZERO_RANGE;
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 1ull << 63, BS), -EINVAL);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, P, 0, BS), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, P | Z | K, 0, BS), -EOPNOTSUPP);
	/* Collapse and insert of an empty file: nothing before EOF
	 * (test_shift_range has their rules). */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_COLLAPSE_RANGE, 0, BS), -EINVAL);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_INSERT_RANGE, 0, BS), -EINVAL);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_UNSHARE_RANGE, 0, BS), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_NO_HIDE_STALE, 0, BS), -EOPNOTSUPP);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 1ull << 62, 1), -EFBIG);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, K, (1ull << 62) - BS, 2 * BS), -EFBIG);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, P | K, INT64_MAX, INT64_MAX), -EFBIG);
	ck_assert_int_eq(ordfs_fallocate(t.fs, root, 0, 0, BS), -EISDIR);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "fifo", S_IFIFO | 0644, 0, &root_cred, &fifo), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, fifo, 0, 0, BS), -ESPIPE);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "dev", S_IFCHR | 0644, 0x0103, &root_cred, &dev),
			 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, dev, 0, 0, BS), -ENODEV);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "l", "f", &root_cred, &link), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, link, 0, 0, BS), -ENODEV);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, root, 0, SEEK_DATA), -EINVAL);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_END), -EINVAL);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_HOLE), -ENXIO); /* empty */
	/* The edge that is allowed: up to 2^62 bytes exactly. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, K, (1ull << 62) - BS, BS), 0);
	ck_assert_uint_eq(f->d.blocks, 1);
	ck_assert_uint_eq(f->size, 0);
	/* Times move; set-user-ID stays (the kernel clears it, with a setattr,
	 * only for callers without CAP_FSETID: test_mnt_posix checks that). */
	struct ordfs_setattr sa = { .valid = ORDFS_SET_MODE, .mode = 04755 };
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	f->d.mtime.sec = 1;
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, BS), 0);
	ck_assert_uint_eq(f->d.mode & 07777, 04755);
	ck_assert_uint_gt(f->d.mtime.sec, 1);
	inode_put(t.fs, f);
	inode_put(t.fs, fifo);
	inode_put(t.fs, dev);
	inode_put(t.fs, link);
	inode_put(t.fs, root);

	/* Read-only. */
	tfs_unmount(&t);
	t.opts.readonly = true;
	tfs_mount(&t);
	f = tfs_open_file(&t, "f");
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, BS), -EROFS);
	ck_assert_int_eq(ordfs_seek_data_hole(t.fs, f, 0, SEEK_DATA), -ENXIO);
	ck_assert_uint_eq(f->size, BS);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Blocks preallocated past EOF (KEEP_SIZE) go with the file: at unlink
 * (size 0, nothing to shrink) and at a truncate to the same size. */
START_TEST(test_preallocated_past_eof_freed)
{
	static const struct ordfs_cred owner = { 0, 0 };
	struct test_fs t;
	tfs_setup(&t, 32 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	struct alloc_counts c0, c;
	ck_assert_int_eq(ordfs_sync(t.fs), 0);
	alloc_get_counts(t.fs->alloc, &c0);
	ck_assert_int_eq(ordfs_create(t.fs, root, "pre", 0644, &owner, &f), 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 0, 64 * 4096), 0);
	ck_assert_uint_eq(f->size, 0);
	ck_assert_uint_eq(f->d.blocks, 64);
	ck_assert_int_eq(ordfs_truncate(t.fs, f, 0), 0); /* same size */
	ck_assert_uint_eq(f->d.blocks, 0);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 4096, 32 * 4096), 0);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "pre"), 0);
	inode_put(t.fs, f);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *fallocate_suite(void)
{
	Suite *s = suite_create("fallocate");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_prealloc_extends_size);
	tcase_add_test(tc, test_prealloc_around_delayed_pages);
	tcase_add_test(tc, test_write_into_prealloc);
	tcase_add_test(tc, test_write_into_prealloc_crash);
	tcase_add_test(tc, test_unwritten_deep_tree);
	tcase_add_test(tc, test_set_flags_small_budget);
	tcase_add_test(tc, test_punch_hole_middle);
	tcase_add_test(tc, test_punch_past_eof);
	tcase_add_test(tc, test_punch_delayed);
	tcase_add_test(tc, test_zero_range);
	tcase_add_test(tc, test_zero_range_delayed);
	tcase_add_test(tc, test_seek_data_hole);
	tcase_add_test(tc, test_fallocate_enospc);
	tcase_add_test(tc, test_fallocate_invalid);
	tcase_add_test(tc, test_preallocated_past_eof_freed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(fallocate_suite());
}
