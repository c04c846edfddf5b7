/*
 * test_grow.c - growing an unmounted filesystem (super/grow.c): the
 * geometry (what grows, what is refused), the offline grow on a memory
 * device (checker clean at the new size, the new blocks allocatable), and
 * a cut at every write of the grow, with the writes before it kept or with
 * the unflushed ones lost as in a power cut (checker clean, after replay,
 * at the old or the new size, with every inode kept).
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "check/check.h"
#include "extent/extent.h"
#include "super/grow.h"
#include "super/super.h"

static const struct ordfs_cred root_cred = { 0, 0 };

#define OLD_SIZE (8u << 20)  /* 2048 blocks of 4 KiB: one bitmap block */
#define NEW_SIZE (24u << 20) /* 6144 blocks, within that bitmap block */

/* A grow's sizes: within the bitmap area's block (4 KiB blocks), or past
 * it, into two new groups (1 KiB blocks, 8000 blocks a group: 4096 blocks
 * grow to 20480, groups 1 and 2 added). */
struct grow_case {
	uint32_t bs;
	uint64_t old_size, new_size;
};
static const struct grow_case within = { 4096, OLD_SIZE, NEW_SIZE };
static const struct grow_case past = { 1024, 4u << 20, 20u << 20 };

/* A clean old_size image with a few files, copied into a new_size device. */
static uint8_t *make_image_of(const struct grow_case *gc)
{
	struct test_fs t;
	tfs_setup(&t, gc->old_size, gc->bs, 0);
	struct inode *root = tfs_root(&t);
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		struct inode *ip;
		ck_assert_int_eq(ordfs_create(t.fs, root, name, 0644, &root_cred, &ip), 0);
		char data[9000];
		memset(data, 'a' + i, sizeof(data));
		ck_assert_int_eq(ordfs_write(t.fs, ip, data, sizeof(data), 0), (int)sizeof(data));
		inode_put(t.fs, ip);
	}
	inode_put(t.fs, root);
	tfs_unmount(&t);
	uint8_t *img = calloc(1, gc->new_size);
	ck_assert_ptr_nonnull(img);
	memcpy(img, blockdev_mem_bytes(t.mem), gc->old_size);
	tfs_free(&t);
	return img;
}

static uint8_t *make_image(void)
{
	return make_image_of(&within);
}

START_TEST(test_geometry_grows_within_the_bitmap)
{
	uint8_t *img = make_image();
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &bd), 0);
	struct ordfs_super sb, grown;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	ck_assert_uint_eq(sb.block_count, OLD_SIZE / 4096);
	ck_assert_uint_eq(ordfs_grow_max_blocks(&sb), 1ull << 48);
	ck_assert_int_eq(ordfs_grow_geometry(&sb, NEW_SIZE / 4096, &grown, &why), 0);
	ck_assert_uint_eq(grown.block_count, NEW_SIZE / 4096);
	ck_assert_uint_eq(grown.free_blocks, sb.free_blocks + (NEW_SIZE - OLD_SIZE) / 4096);
	ck_assert_uint_eq(grown.data_start, sb.data_start);
	ck_assert_uint_eq(grown.inode_count, sb.inode_count);
	ck_assert(!(grown.feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS));
	/* refused: smaller, equal, past the format */
	ck_assert_int_eq(ordfs_grow_geometry(&sb, sb.block_count - 1, &grown, &why), -EINVAL);
	ck_assert_int_eq(ordfs_grow_geometry(&sb, sb.block_count, &grown, &why), -EINVAL);
	ck_assert_int_eq(ordfs_grow_geometry(&sb, (1ull << 48) + 1, &grown, &why), -EFBIG);
	/* to the area's last bit: no group */
	uint64_t per = (4096u - 24) * 8;
	ck_assert_int_eq(ordfs_grow_geometry(&sb, per, &grown, &why), 0);
	ck_assert(!(grown.feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS));
	/* past it: groups with the feature, their bitmap blocks not free */
	ck_assert_int_eq(ordfs_grow_geometry(&sb, 3 * per + 10, &grown, &why), 0);
	ck_assert(grown.feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS);
	ck_assert_uint_eq(grown.block_count, 3 * per + 10);
	ck_assert_uint_eq(grown.free_blocks, sb.free_blocks + (3 * per + 10 - sb.block_count) - 3);
	uint64_t first, end;
	ordfs_grow_new_groups(&sb, &grown, &first, &end);
	ck_assert_uint_eq(first, 1);
	ck_assert_uint_eq(end, 4);
	/* a last group of one block (its bitmap block) is left out */
	ck_assert_int_eq(ordfs_grow_geometry(&sb, 2 * per + 1, &grown, &why), 0);
	ck_assert_uint_eq(grown.block_count, 2 * per);
	ck_assert_uint_eq(ordfs_block_groups(&grown), 2);
	blockdev_destroy(bd);
	free(img);
}
END_TEST

static void offline_grow_is_clean_and_usable(const struct grow_case *gc)
{
	uint8_t *img = make_image_of(gc);
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(img, gc->new_size, &bd), 0);
	struct ordfs_super sb, grown, after;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	struct check_result before = tfs_check_dev(bd);
	ck_assert_int_eq(ordfs_grow_geometry(&sb, gc->new_size / gc->bs, &grown, &why), 0);
	ck_assert_int_eq(ordfs_grow_offline(bd, &sb, &grown), 0);
	ck_assert_int_eq(ordfs_read_super(bd, false, &after, &why), 0);
	ck_assert_uint_eq(after.block_count, gc->new_size / gc->bs);
	ck_assert(after.state & ORDFS_STATE_CLEAN);
	ck_assert_int_eq(ordfs_read_super(bd, true, &after, &why), 0); /* the new backup */
	ck_assert_uint_eq(after.block_count, gc->new_size / gc->bs);
	struct check_result res = tfs_check_dev(bd);
	ck_assert_uint_eq(res.problems, 0);
	ck_assert_uint_eq(res.inodes_used, before.inodes_used);
	/* the same blocks in use, and the new groups' bitmap blocks */
	uint64_t first, end;
	ordfs_grow_new_groups(&sb, &grown, &first, &end);
	ck_assert_uint_eq(res.blocks_used, before.blocks_used + (end - first));
	ck_assert_uint_eq(!!(after.feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS),
			  end > first);

	/* Mounted, the new blocks are free: allocating every free block ends
	 * at the new last data block. */
	struct ordfs *fs;
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	ck_assert_int_eq(ordfs_mount(bd, &opts, &fs, &why), 0);
	struct alloc_counts counts;
	alloc_get_counts(fs->alloc, &counts);
	ck_assert_uint_eq(counts.free_blocks,
			  gc->new_size / gc->bs - before.blocks_used - (end - first));
	/* nearly all of it in one file: more than the old size could hold */
	uint64_t len = (counts.data_blocks - 16) * (uint64_t)gc->bs;
	ck_assert_uint_gt(len, gc->old_size);
	struct inode *root = NULL, *ip;
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert_int_eq(ordfs_create(fs, root, "big", 0644, &root_cred, &ip), 0);
	char *buf = malloc(1 << 20);
	memset(buf, 'z', 1 << 20);
	for (uint64_t off = 0; off < len; off += 1 << 20) {
		size_t n = len - off < (1u << 20) ? (size_t)(len - off) : (1u << 20);
		ck_assert_int_eq(ordfs_write(fs, ip, buf, n, off), (ssize_t)n);
	}
	free(buf);
	ck_assert_int_eq(ordfs_fsync(fs, ip, false), 0);
	/* and its last blocks lie in the last group */
	struct ordfs_extent e;
	uint64_t last = len / gc->bs - 1;
	ck_assert_int_eq(extent_lookup(fs, ip, last, &e), 1);
	uint32_t per = ordfs_bits_per_bitmap_block(gc->bs);
	ck_assert_uint_ge(e.physical + (last - e.logical), (ordfs_block_groups(&after) - 1) * per);
	inode_put(fs, ip);
	inode_put(fs, root);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	ck_assert_uint_eq(tfs_check_dev(bd).problems, 0);
	blockdev_destroy(bd);
	free(img);
}

START_TEST(test_offline_grow_is_clean_and_usable)
{
	offline_grow_is_clean_and_usable(&within);
}
END_TEST

START_TEST(test_offline_grow_past_the_bitmap)
{
	offline_grow_is_clean_and_usable(&past);
}
END_TEST

/* A cut at every write of the grow: the writes from the nth on fail (and
 * write nothing); with power_cut, the writes since the last flush are lost
 * too, as a power cut loses a disk cache.  The image left must check clean
 * at the old or the new size, with the same inodes and blocks in use. */
static void cut_at_every_write(const struct grow_case *gc, bool power_cut)
{
	uint8_t *img = make_image_of(gc);
	unsigned cuts = 0, old_seen = 0, new_seen = 0;
	for (uint64_t nth = 1;; nth++) {
		struct blockdev *mem, *rec;
		ck_assert_int_eq(blockdev_mem_from(img, gc->new_size, &mem), 0);
		struct ordfs_super sb, grown, after;
		const char *why;
		ck_assert_int_eq(ordfs_read_super(mem, false, &sb, &why), 0);
		struct check_result before = tfs_check_dev(mem);
		ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
		blockdev_record_drop_unflushed(rec, power_cut);
		struct blockdev_fault f = { .nth = nth, .err = -EIO, .persistent = true };
		blockdev_record_fault(rec, BD_EV_WRITE, &f);
		ck_assert_int_eq(ordfs_grow_geometry(&sb, gc->new_size / gc->bs, &grown, &why), 0);
		uint64_t first_group, end_group;
		ordfs_grow_new_groups(&sb, &grown, &first_group, &end_group);
		int err = ordfs_grow_offline(rec, &sb, &grown);
		bool fired = blockdev_record_faults_fired(rec) > 0;
		if (power_cut)
			blockdev_record_power_cut(rec);
		blockdev_destroy(rec);
		/* as fsck.ordfs: replay the journal, then check */
		ck_assert_int_eq(ordfs_read_super(mem, false, &after, &why), 0);
		int need = journal_needs_recovery(mem, &after);
		ck_assert_int_ge(need, 0);
		if (need > 0) {
			struct journal_recovery_info info;
			ck_assert_int_eq(journal_recover(mem, &after, 0, &info), 0);
			int rr = ordfs_read_super(mem, false, &after, &why);
			ck_assert_msg(rr == 0, "after replay: %s", why);
		}
		ck_assert(after.block_count == sb.block_count ||
			  after.block_count == grown.block_count);
		if (after.block_count == grown.block_count)
			new_seen++;
		else
			old_seen++;
		struct check_result res = tfs_check_dev(mem);
		ck_assert_msg(res.problems == 0, "cut at write %llu: %u problems",
			      (unsigned long long)nth, res.problems);
		ck_assert_uint_eq(res.inodes_used, before.inodes_used);
		/* the same blocks, and at the new size the new groups' bitmaps */
		ck_assert_uint_eq(res.blocks_used,
				  before.blocks_used + (after.block_count == grown.block_count
								? end_group - first_group
								: 0));
		/* and it mounts, at that size */
		struct ordfs *fs;
		struct ordfs_options opts;
		ordfs_options_default(&opts);
		ck_assert_int_eq(ordfs_mount(mem, &opts, &fs, &why), 0);
		ck_assert_uint_eq(fs->sb.block_count, after.block_count);
		ck_assert_int_eq(ordfs_unmount(fs), 0);
		ck_assert_uint_eq(tfs_check_dev(mem).problems, 0);
		blockdev_destroy(mem);
		if (!fired) {
			ck_assert_int_eq(err, 0);
			break;
		}
		ck_assert_int_ne(err, 0);
		cuts++;
	}
	fprintf(stderr, "grow cut (%s) at %u writes: %u states at the old size, %u at the new\n",
		power_cut ? "power cut" : "writes failing", cuts, old_seen, new_seen);
	ck_assert_uint_ge(cuts, 5);
	ck_assert_uint_gt(old_seen, 0);
	ck_assert_uint_gt(new_seen, 1);
	free(img);
}

START_TEST(test_grow_cut_at_every_write)
{
	cut_at_every_write(&within, false);
}
END_TEST

START_TEST(test_grow_power_cut_at_every_write)
{
	cut_at_every_write(&within, true);
}
END_TEST

START_TEST(test_grow_past_the_bitmap_cut_at_every_write)
{
	cut_at_every_write(&past, false);
}
END_TEST

START_TEST(test_grow_past_the_bitmap_power_cut_at_every_write)
{
	cut_at_every_write(&past, true);
}
END_TEST

/* Groups past the block bitmap area (INCOMPAT_GROUP_BITMAPS), as a grow
 * past the area's slack will leave them, made by hand (tfs_add_groups):
 * 1 KiB blocks, 8000 a group, a 4 MiB filesystem grown to three groups
 * past its one-block area, the last 500 blocks long. */
#define GROUPS_PER 8000u
#define GROUPS_COUNT (3u * GROUPS_PER + 500u)

/* The image mounts; a file takes every block delayed data may have (the
 * groups past the area included, their bitmap blocks skipped), metadata
 * allocations take the rest up to the last data block; the checker is
 * clean before, full, and after everything is freed. */
START_TEST(test_grouped_image_fills_and_frees)
{
	struct test_fs t;
	tfs_setup_groups(&t, 4u << 20, 1024, GROUPS_COUNT);
	tfs_unmount(&t);
	struct check_result before = tfs_check_dev(t.mem);
	ck_assert_uint_eq(before.problems, 0);
	/* A grow of it within its last group adds no group bitmap block. */
	struct ordfs_super sb, grown;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(t.mem, false, &sb, &why), 0);
	ck_assert_int_eq(ordfs_grow_geometry(&sb, GROUPS_COUNT + 100, &grown, &why), 0);
	ck_assert_uint_eq(grown.free_blocks, sb.free_blocks + 100);
	uint64_t first, end;
	ordfs_grow_new_groups(&sb, &grown, &first, &end);
	ck_assert_uint_eq(first, end);
	tfs_mount(&t);
	struct ordfs *fs = t.fs;
	ck_assert_uint_eq(fs->sb.block_count, GROUPS_COUNT);
	ck_assert_uint_eq(ordfs_block_groups(&fs->sb), 4);
	ck_assert_uint_eq(fs->sb.block_bitmap_blocks, 1);
	struct alloc_counts c0, c;
	alloc_get_counts(fs->alloc, &c0);
	/* every block but those in use, the group bitmap blocks among them */
	ck_assert_uint_eq(c0.free_blocks, GROUPS_COUNT - before.blocks_used);

	/* One file, all delayed data may take (a few blocks for its tree). */
	uint64_t nblocks = c0.data_blocks - 16;
	struct inode *f = tfs_create_file(&t, "big");
	uint8_t *buf = malloc(1 << 20), *back = malloc(1 << 20);
	for (uint64_t off = 0; off < nblocks * 1024; off += 1 << 20) {
		size_t n = nblocks * 1024 - off < (1u << 20) ? (size_t)(nblocks * 1024 - off)
							      : (1u << 20);
		tfs_fill_pattern(buf, n, (uint32_t)(off >> 20));
		ck_assert_int_eq(ordfs_write(fs, f, buf, n, off), (ssize_t)n);
	}
	ck_assert_int_eq(ordfs_fsync(fs, f, false), 0);
	/* Its last blocks lie in a group past the area (the metadata reserve
	 * is what is left, at the end). */
	struct ordfs_extent e;
	ck_assert_int_eq(extent_lookup(fs, f, nblocks - 1, &e), 1);
	ck_assert_uint_ge(e.physical + (nblocks - 1 - e.logical), 2 * GROUPS_PER);

	/* Metadata may take the reserve: up to the last data block. */
	enum { MAX_RUNS = 32 };
	uint64_t starts[MAX_RUNS];
	uint32_t lens[MAX_RUNS];
	int runs = 0;
	for (;;) {
		ck_assert_int_lt(runs, MAX_RUNS);
		struct handle *h = tfs_start(&t, alloc_credits(fs->alloc, 4096));
		int err = alloc_blocks(fs->alloc, h, 0, 4096, 0, &starts[runs], &lens[runs]);
		tfs_stop(h);
		if (err == -ENOSPC)
			break;
		ck_assert_int_eq(err, 0);
		ck_assert(!ordfs_range_has_group_bitmap(&fs->sb, starts[runs], lens[runs]));
		runs++;
	}
	ck_assert(alloc_block_in_use(fs->alloc, GROUPS_COUNT - 2));
	alloc_get_counts(fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, 0);
	for (int i = 0; i < runs; i++) { /* no file owns them */
		struct handle *h = tfs_start(&t, alloc_credits(fs->alloc, lens[i]));
		ck_assert_int_eq(alloc_free_blocks(fs->alloc, h, starts[i], lens[i], 0), 0);
		tfs_stop(h);
	}
	inode_put(fs, f);
	tfs_unmount(&t);
	/* Full, and clean. */
	struct check_result full = tfs_check_dev(t.mem);
	ck_assert_uint_eq(full.problems, 0);
	ck_assert_uint_ge(full.blocks_used, before.blocks_used + nblocks);

	/* Read back after a mount, then freed. */
	tfs_mount(&t);
	fs = t.fs;
	f = tfs_open_file(&t, "big");
	for (uint64_t off = 0; off < nblocks * 1024; off += 1 << 20) {
		size_t n = nblocks * 1024 - off < (1u << 20) ? (size_t)(nblocks * 1024 - off)
							      : (1u << 20);
		tfs_fill_pattern(buf, n, (uint32_t)(off >> 20));
		ck_assert_int_eq(ordfs_read(fs, f, back, n, off), (ssize_t)n);
		ck_assert_msg(memcmp(buf, back, n) == 0, "data differs at %llu",
			      (unsigned long long)off);
	}
	inode_put(fs, f);
	struct inode *root = tfs_root(&t);
	ck_assert_int_eq(ordfs_unlink(fs, root, "big"), 0);
	inode_put(fs, root);
	ck_assert_int_eq(journal_force_commit(fs->journal), 0);
	alloc_get_counts(fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	tfs_unmount(&t);
	struct check_result after = tfs_check_dev(t.mem);
	ck_assert_uint_eq(after.problems, 0);
	ck_assert_uint_eq(after.blocks_used, before.blocks_used);
	free(buf);
	free(back);
	tfs_free(&t);
}
END_TEST

static Suite *grow_suite(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");
	tcase_add_test(tc, test_geometry_grows_within_the_bitmap);
	tcase_add_test(tc, test_offline_grow_is_clean_and_usable);
	tcase_add_test(tc, test_grow_cut_at_every_write);
	tcase_add_test(tc, test_grow_power_cut_at_every_write);
	tcase_add_test(tc, test_offline_grow_past_the_bitmap);
	tcase_add_test(tc, test_grow_past_the_bitmap_cut_at_every_write);
	tcase_add_test(tc, test_grow_past_the_bitmap_power_cut_at_every_write);
	tcase_add_test(tc, test_grouped_image_fills_and_frees);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(grow_suite());
}
