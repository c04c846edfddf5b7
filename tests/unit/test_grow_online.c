/*
 * test_grow_online.c - growing a mounted filesystem (mount/grow_online.c):
 * the new space usable to its last block while files stay open and
 * writers run, the checker clean at the new size; the refusals (smaller,
 * equal, past the device, read-only) changing nothing; and a power cut at
 * every write of a workload with an online grow in its middle, after
 * which the image checks clean at the old or the new size with every
 * fsync'd byte intact.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "check/check.h"
#include "super/grow.h"
#include "super/super.h"

/* A grow's sizes: within the bitmap area's block (4 KiB blocks: 2048
 * blocks grow to 6144), or past it into two new groups (1 KiB blocks, 8000
 * a group: 6144 blocks grow to 20480, groups 1 and 2 added). */
struct grow_case {
	uint32_t bs;
	uint64_t old_size, new_size;
};
static const struct grow_case within = { 4096, 8u << 20, 24u << 20 };
static const struct grow_case past = { 1024, 6u << 20, 20u << 20 };
#define OLD_SIZE (gc->old_size)
#define NEW_SIZE (gc->new_size)
#define OLD_BLOCKS (gc->old_size / gc->bs)
#define NEW_BLOCKS (gc->new_size / gc->bs)

static const struct ordfs_cred root_cred = { 0, 0 };

/* A clean old_size filesystem at the start of a new_size device. */
static uint8_t *make_image(const struct grow_case *gc)
{
	struct test_fs t;
	tfs_setup(&t, OLD_SIZE, gc->bs, 0);
	tfs_unmount(&t);
	uint8_t *img = calloc(1, NEW_SIZE);
	ck_assert_ptr_nonnull(img);
	memcpy(img, blockdev_mem_bytes(t.mem), OLD_SIZE);
	tfs_free(&t);
	return img;
}

static struct ordfs *mount_dev(struct blockdev *bd, bool readonly)
{
	struct ordfs *fs;
	struct ordfs_options opts;
	const char *why;
	ordfs_options_default(&opts);
	opts.readonly = readonly;
	ck_assert_int_eq(ordfs_mount(bd, &opts, &fs, &why), 0);
	return fs;
}

static struct inode *create(struct ordfs *fs, const char *name)
{
	struct inode *root, *ip;
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert_int_eq(ordfs_create(fs, root, name, 0644, &root_cred, &ip), 0);
	inode_put(fs, root);
	return ip;
}

/* Writes len bytes of pattern seed at 0, in 1 MiB pieces. */
static int write_pattern(struct ordfs *fs, struct inode *ip, uint64_t len, uint32_t seed)
{
	uint8_t *buf = malloc(1 << 20);
	ck_assert_ptr_nonnull(buf);
	int err = 0;
	for (uint64_t off = 0; off < len && !err; off += 1 << 20) {
		size_t n = len - off < (1u << 20) ? (size_t)(len - off) : (1u << 20);
		tfs_fill_pattern(buf, n, seed + (uint32_t)(off >> 20));
		ssize_t got = ordfs_write(fs, ip, buf, n, off);
		if (got != (ssize_t)n)
			err = got < 0 ? (int)got : -EIO;
	}
	free(buf);
	return err;
}

static void assert_pattern(struct ordfs *fs, struct inode *ip, uint64_t len, uint32_t seed)
{
	uint8_t *want = malloc(1 << 20), *got = malloc(1 << 20);
	for (uint64_t off = 0; off < len; off += 1 << 20) {
		size_t n = len - off < (1u << 20) ? (size_t)(len - off) : (1u << 20);
		tfs_fill_pattern(want, n, seed + (uint32_t)(off >> 20));
		ck_assert_int_eq(ordfs_read(fs, ip, got, n, off), (ssize_t)n);
		ck_assert_msg(memcmp(want, got, n) == 0, "data differs at %llu",
			      (unsigned long long)off);
	}
	free(want);
	free(got);
}

static void online_grow_is_clean_and_usable(const struct grow_case *gc)
{
	uint8_t *img = make_image(gc);
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &bd), 0);
	struct ordfs *fs = mount_dev(bd, false);
	/* A file open across the grow, with data not yet written back. */
	struct inode *early = create(fs, "early");
	ck_assert_int_eq(write_pattern(fs, early, 3u << 20, 7), 0);
	struct ordfs_statfs st;
	ordfs_statfs(fs, &st);
	ck_assert_uint_eq(st.blocks, OLD_BLOCKS);
	uint64_t free_before = st.blocks_free;

	uint64_t old_count;
	const char *why;
	ck_assert_int_eq(ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why), 0);
	ck_assert_uint_eq(old_count, OLD_BLOCKS);
	ordfs_statfs(fs, &st);
	ck_assert_uint_eq(st.blocks, NEW_BLOCKS);
	/* every added block and the old backup superblock's are free, but
	 * for new groups' bitmap blocks */
	uint32_t per = ordfs_bits_per_bitmap_block(gc->bs);
	uint64_t area = (OLD_BLOCKS + per - 1) / per; /* as mkfs made it */
	uint64_t new_groups = (NEW_BLOCKS + per - 1) / per - area;
	ck_assert_uint_eq(new_groups, gc == &past ? 2 : 0);
	ck_assert_uint_eq(st.blocks_free, free_before + (NEW_BLOCKS - OLD_BLOCKS) - new_groups);

	/* The allocator hands out the last data block ... */
	uint64_t start;
	uint32_t got;
	ck_assert_int_eq(alloc_claim_blocks(fs->alloc, NEW_BLOCKS - 2, 1, 0, &start, &got), 0);
	ck_assert_uint_eq(start, NEW_BLOCKS - 2);
	alloc_unclaim_blocks(fs->alloc, start, got, 0);
	/* ... and the new space holds a file larger than the old filesystem. */
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	uint64_t len = (c.data_blocks - 16) * (uint64_t)gc->bs;
	ck_assert_uint_gt(len, OLD_SIZE);
	struct inode *big = create(fs, "big");
	ck_assert_int_eq(write_pattern(fs, big, len, 100), 0);
	ck_assert_int_eq(ordfs_fsync(fs, big, false), 0);
	ck_assert_int_eq(ordfs_fsync(fs, early, false), 0);
	assert_pattern(fs, early, 3u << 20, 7);
	assert_pattern(fs, big, len, 100);
	inode_put(fs, big);
	inode_put(fs, early);
	ck_assert_int_eq(ordfs_unmount(fs), 0);

	struct check_result res = tfs_check_dev(bd);
	ck_assert_uint_eq(res.problems, 0);
	struct ordfs_super sb;
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	ck_assert_uint_eq(sb.block_count, NEW_BLOCKS);
	ck_assert_int_eq(ordfs_read_super(bd, true, &sb, &why), 0); /* the new backup */
	ck_assert_uint_eq(sb.block_count, NEW_BLOCKS);
	/* and the file survives a mount at the new size */
	fs = mount_dev(bd, true);
	struct inode *root, *ip;
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert_int_eq(ordfs_lookup(fs, root, "big", &ip), 0);
	assert_pattern(fs, ip, len, 100);
	inode_put(fs, ip);
	inode_put(fs, root);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	blockdev_destroy(bd);
	free(img);
}

START_TEST(test_online_grow_is_clean_and_usable)
{
	online_grow_is_clean_and_usable(&within);
}
END_TEST

START_TEST(test_online_grow_past_the_bitmap)
{
	online_grow_is_clean_and_usable(&past);
}
END_TEST

START_TEST(test_online_grow_refusals_change_nothing)
{
	const struct grow_case *gc = &within;
	uint8_t *img = make_image(gc);
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &bd), 0);
	struct ordfs *fs = mount_dev(bd, false);
	uint64_t old_count;
	const char *why;
	const uint64_t refused[] = { OLD_BLOCKS - 1, OLD_BLOCKS, NEW_BLOCKS + 1,
				     (1ull << 48) + 1 };
	/* (the same size is nothing to do: 0, with nothing changed either) */
	static const int errs[] = { -EINVAL, 0, -EINVAL, -EFBIG };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		why = NULL;
		ck_assert_int_eq(ordfs_grow_online(fs, refused[i], &old_count, &why), errs[i]);
		ck_assert(errs[i] == 0 || why != NULL);
		ck_assert_uint_eq(fs_block_count(fs), OLD_BLOCKS);
	}
	struct ordfs_statfs st;
	ordfs_statfs(fs, &st);
	ck_assert_uint_eq(st.blocks, OLD_BLOCKS);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	/* past the old filesystem nothing was written */
	const uint8_t *bytes = blockdev_mem_bytes(bd);
	size_t written = NEW_SIZE;
	for (size_t i = OLD_SIZE; i < NEW_SIZE && written == NEW_SIZE; i++)
		if (bytes[i])
			written = i;
	ck_assert_msg(written == NEW_SIZE, "byte %zu written", written);

	/* read-only: refused with the reason */
	fs = mount_dev(bd, true);
	ck_assert_int_eq(ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why), -EROFS);
	ck_assert_ptr_nonnull(why);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	ck_assert_uint_eq(tfs_check_dev(bd).problems, 0);
	blockdev_destroy(bd);
	free(img);
}
END_TEST

/* Writers creating and writing files while the grow runs (ThreadSanitizer
 * checks the readers of the block count and the allocator's growth). */
struct writer {
	struct ordfs *fs;
	int id;
	uint64_t file_bytes;
	int files;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	for (int i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof(name), "w%d-%d", w->id, i);
		struct inode *ip = create(w->fs, name);
		if (write_pattern(w->fs, ip, w->file_bytes, (uint32_t)(w->id * 1000 + i)) == 0 &&
		    ordfs_fsync(w->fs, ip, false) == 0)
			w->files++;
		inode_put(w->fs, ip);
	}
	return NULL;
}

static void online_grow_with_writers(const struct grow_case *gc)
{
	uint8_t *img = make_image(gc);
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &bd), 0);
	struct ordfs *fs = mount_dev(bd, false);
	struct writer w[2] = { { fs, 0, NEW_SIZE / 160, 0 }, { fs, 1, NEW_SIZE / 160, 0 } };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	uint64_t old_count;
	const char *why;
	ck_assert_int_eq(ordfs_grow_online(fs, NEW_BLOCKS / 2, &old_count, &why), 0);
	ck_assert_int_eq(ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why), 0);
	ck_assert_uint_eq(old_count, NEW_BLOCKS / 2);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* 80 files of half the new size do not fit the old size: all fit now */
	ck_assert_int_eq(w[0].files + w[1].files, 80);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	ck_assert_uint_eq(tfs_check_dev(bd).problems, 0);
	blockdev_destroy(bd);
	free(img);
}

START_TEST(test_online_grow_with_writers)
{
	online_grow_with_writers(&within);
}
END_TEST

START_TEST(test_online_grow_past_the_bitmap_with_writers)
{
	online_grow_with_writers(&past);
}
END_TEST

/* The workload cut at its nth write: an fsync'd file, the grow, a file in
 * the new space fsync'd.  Returns whether the cut fired. */
static bool run_cut(const struct grow_case *gc, const uint8_t *img, uint64_t nth,
		    uint64_t *grown_ok)
{
	struct blockdev *mem, *rec;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	blockdev_record_drop_unflushed(rec, true);
	struct blockdev_fault f = { .nth = nth, .err = -EIO, .persistent = true };
	blockdev_record_fault(rec, BD_EV_WRITE, &f);

	struct ordfs *fs;
	struct ordfs_options opts;
	const char *why;
	ordfs_options_default(&opts);
	if (ordfs_mount(rec, &opts, &fs, &why) != 0) {
		ck_assert_uint_gt(blockdev_record_faults_fired(rec), 0);
		blockdev_destroy(rec);
		blockdev_destroy(mem);
		return true; /* the cut fell in the mount's own writes */
	}
	struct inode *a = create(fs, "a");
	bool a_synced = write_pattern(fs, a, 1u << 20, 1) == 0 && ordfs_fsync(fs, a, false) == 0;
	inode_put(fs, a);
	uint64_t old_count;
	bool grew = ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why) == 0;
	bool b_synced = false;
	uint64_t b_len = 12u << 20; /* more than the old size holds */
	if (grew) {
		struct inode *b = create(fs, "b");
		b_synced = write_pattern(fs, b, b_len, 2) == 0 && ordfs_fsync(fs, b, false) == 0;
		inode_put(fs, b);
	}
	int unmounted = ordfs_unmount(fs); /* fails if the cut came before its end */
	bool fired = blockdev_record_faults_fired(rec) > 0;
	ck_assert(fired || unmounted == 0);
	blockdev_record_power_cut(rec);
	blockdev_destroy(rec);

	/* as fsck.ordfs: replay, check; then mount and read */
	struct ordfs_super after;
	ck_assert_int_eq(ordfs_read_super(mem, false, &after, &why), 0);
	int need = journal_needs_recovery(mem, &after);
	ck_assert_int_ge(need, 0);
	if (need > 0) {
		struct journal_recovery_info info;
		ck_assert_int_eq(journal_recover(mem, &after, 0, &info), 0);
		ck_assert_int_eq(ordfs_read_super(mem, false, &after, &why), 0);
	}
	ck_assert(after.block_count == OLD_BLOCKS || after.block_count == NEW_BLOCKS);
	ck_assert_msg(!grew || after.block_count == NEW_BLOCKS,
		      "cut at write %llu: the grow returned but the old size came back",
		      (unsigned long long)nth);
	*grown_ok += after.block_count == NEW_BLOCKS;
	struct check_result res = tfs_check_dev(mem);
	ck_assert_msg(res.problems == 0, "cut at write %llu: %u problems",
		      (unsigned long long)nth, res.problems);
	fs = mount_dev(mem, true);
	struct inode *root, *ip;
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	if (a_synced) {
		ck_assert_int_eq(ordfs_lookup(fs, root, "a", &ip), 0);
		assert_pattern(fs, ip, 1u << 20, 1);
		inode_put(fs, ip);
	}
	if (b_synced) {
		ck_assert_int_eq(ordfs_lookup(fs, root, "b", &ip), 0);
		assert_pattern(fs, ip, b_len, 2);
		inode_put(fs, ip);
	}
	inode_put(fs, root);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
	blockdev_destroy(mem);
	return fired;
}

static void power_cut_at_every_write(const struct grow_case *gc)
{
	uint8_t *img = make_image(gc);
	uint64_t cuts = 0, grown = 0;
	unsigned stride = tfs_sweep_stride();
	for (uint64_t nth = 1; run_cut(gc, img, nth, &grown); nth += stride)
		cuts++;
	fprintf(stderr, "online grow: %llu power cuts, %llu states at the new size\n",
		(unsigned long long)cuts, (unsigned long long)grown);
	ck_assert_uint_ge(cuts * stride, 10); /* TSan runs every stride-th cut */
	ck_assert_uint_gt(grown, 0);
	ck_assert_uint_lt(grown, cuts);
	free(img);
}

START_TEST(test_online_grow_power_cut_at_every_write)
{
	power_cut_at_every_write(&within);
}
END_TEST

START_TEST(test_online_grow_past_the_bitmap_power_cut_at_every_write)
{
	power_cut_at_every_write(&past);
}
END_TEST

/* One write or one flush of the grow fails (a transient error), at each
 * position in turn; then resize.ordfs is run again.  The retry finishes
 * the grow (also one that committed and could not checkpoint or give the
 * allocator its space), or the journal stopped and the retry is refused;
 * either way the image unmounts and checks clean at the old or the new
 * size, and a grow that said success is at the new size. */
static bool fail_once_then_retry(const struct grow_case *gc, const uint8_t *img, bool flush,
				 uint64_t nth, unsigned *finished)
{
	struct blockdev *mem, *rec;
	ck_assert_int_eq(blockdev_mem_from(img, NEW_SIZE, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
	struct ordfs *fs = mount_dev(rec, false);
	struct inode *a = create(fs, "a");
	ck_assert_int_eq(write_pattern(fs, a, 256u << 10, 3), 0);
	ck_assert_int_eq(ordfs_fsync(fs, a, false), 0);
	inode_put(fs, a);
	if (flush)
		blockdev_record_fail_flush(rec, nth, -EIO);
	else
		blockdev_record_fail_write(rec, nth, -EIO);
	uint64_t old_count;
	const char *why;
	int first = ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why);
	bool fired = blockdev_record_faults_fired(rec) > 0;
	blockdev_record_heal(rec);
	int retry = ordfs_grow_online(fs, NEW_BLOCKS, &old_count, &why);
	if (first == 0 || retry == 0) {
		/* said success: the filesystem and its allocator are grown */
		ck_assert_uint_eq(fs_block_count(fs), NEW_BLOCKS);
		ck_assert_uint_eq(alloc_block_count(fs->alloc), NEW_BLOCKS);
		struct inode *b = create(fs, "b");
		ck_assert_int_eq(write_pattern(fs, b, OLD_SIZE, 4), 0); /* past the old size */
		ck_assert_int_eq(ordfs_fsync(fs, b, false), 0);
		inode_put(fs, b);
		(*finished)++;
	} else {
		ck_assert_int_eq(retry, -EROFS); /* the journal stopped on the error */
	}
	(void)ordfs_unmount(fs);
	blockdev_destroy(rec);
	struct ordfs_super after;
	ck_assert_int_eq(ordfs_read_super(mem, false, &after, &why), 0);
	int need = journal_needs_recovery(mem, &after);
	if (need > 0) {
		struct journal_recovery_info info;
		ck_assert_int_eq(journal_recover(mem, &after, 0, &info), 0);
		ck_assert_int_eq(ordfs_read_super(mem, false, &after, &why), 0);
	}
	ck_assert(after.block_count == OLD_BLOCKS || after.block_count == NEW_BLOCKS);
	ck_assert(!(first == 0 || retry == 0) || after.block_count == NEW_BLOCKS);
	ck_assert_msg(tfs_check_dev(mem).problems == 0, "%s %llu failing: not clean",
		      flush ? "flush" : "write", (unsigned long long)nth);
	blockdev_destroy(mem);
	return fired;
}

static void failure_then_retry(const struct grow_case *gc)
{
	uint8_t *img = make_image(gc);
	unsigned cases = 0, finished = 0;
	for (int flush = 0; flush < 2; flush++)
		for (uint64_t nth = 1; fail_once_then_retry(gc, img, flush, nth, &finished); nth++)
			cases++;
	fprintf(stderr, "online grow: %u single failures, %u grows finished by the retry\n",
		cases, finished);
	ck_assert_uint_ge(cases, 6);
	ck_assert_uint_gt(finished, 0);
	free(img);
}

START_TEST(test_online_grow_failure_then_retry)
{
	failure_then_retry(&past);
}
END_TEST

static Suite *grow_online_suite(void)
{
	Suite *s = suite_create("grow_online");
	TCase *tc = tcase_create("grow_online");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_online_grow_is_clean_and_usable);
	tcase_add_test(tc, test_online_grow_refusals_change_nothing);
	tcase_add_test(tc, test_online_grow_with_writers);
	tcase_add_test(tc, test_online_grow_power_cut_at_every_write);
	tcase_add_test(tc, test_online_grow_past_the_bitmap);
	tcase_add_test(tc, test_online_grow_past_the_bitmap_with_writers);
	tcase_add_test(tc, test_online_grow_past_the_bitmap_power_cut_at_every_write);
	tcase_add_test(tc, test_online_grow_failure_then_retry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(grow_online_suite());
}
