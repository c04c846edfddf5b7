/*
 * test_copy_range.c - ordfs_copy_range (file/copy_range.c) on an in-memory
 * image: holes stay holes, unaligned ranges and EOF, the kernel's errors
 * and the file flags, data=journal and a file's j flag (the copy's data
 * goes through the log), and a crash after fsync.  Contents are checked
 * against a model in memory; every test ends with the checker.
 */
#include "suite_main.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "extent/extent.h"
#include "inode/iflags.h"
#include "inode/pages.h"

#define BS 4096u

/* Writes len pattern bytes at off into the file and the model. */
static void write_model(struct test_fs *t, struct inode *f, uint8_t *model, uint64_t off,
			size_t len, uint32_t seed)
{
	uint8_t *buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	tfs_fill_pattern(buf, len, seed);
	ck_assert_int_eq(ordfs_write(t->fs, f, buf, len, off), (ssize_t)len);
	memcpy(model + off, buf, len);
	free(buf);
}

/* The file is size bytes long and reads exactly as the model. */
static void expect_model(struct test_fs *t, struct inode *f, const uint8_t *model, size_t size)
{
	ck_assert_uint_eq(f->size, size);
	uint8_t *got = malloc(size + 1);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(ordfs_read(t->fs, f, got, size + 1, 0), (ssize_t)size);
	if (memcmp(got, model, size) != 0) {
		size_t i = 0;
		while (got[i] == model[i])
			i++;
		ck_abort_msg("byte %zu: got %u want %u", i, got[i], model[i]);
	}
	free(got);
}

/* Is block lblk of f a hole: no page, no written extent? */
static bool is_hole(struct test_fs *t, struct inode *f, uint64_t lblk)
{
	if (pages_find(f, lblk))
		return false;
	struct ordfs_extent ext;
	int found = extent_lookup(t->fs, f, lblk, &ext);
	ck_assert_int_ge(found, 0);
	return !found || (ext.flags & ORDFS_EXT_UNWRITTEN);
}

/* A source of 12 blocks + 100 bytes: blocks 0-1 and 10-12 data, 2-9 a
 * hole; blocks 0-1 written back (home on the image), the rest in pages. */
static struct inode *make_source(struct test_fs *t, uint8_t *model)
{
	struct inode *src = tfs_create_file(t, "src");
	write_model(t, src, model, 0, 2 * BS, 1);
	ck_assert_int_eq(ordfs_fsync(t->fs, src, false), 0);
	write_model(t, src, model, 10 * BS, 2 * BS + 100, 2);
	ck_assert(is_hole(t, src, 5) && !is_hole(t, src, 1) && !is_hole(t, src, 11));
	return src;
}

START_TEST(test_holes_stay_holes_and_copy_stops_at_eof)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	const size_t size = 12 * BS + 100;
	uint8_t *model = calloc(1, 16 * BS);
	struct inode *src = make_source(&t, model), *dst = tfs_create_file(&t, "dst");
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, 64 * BS), (ssize_t)size);
	expect_model(&t, dst, model, size);
	for (uint64_t b = 2; b < 10; b++)
		ck_assert_msg(is_hole(&t, dst, b), "block %llu of the copy is not a hole",
			      (unsigned long long)b);
	ck_assert(!is_hole(&t, dst, 0) && !is_hole(&t, dst, 12));
	/* From at or past EOF: nothing; ending past it: up to it. */
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, size, dst, 0, BS), 0);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, size + 5000, dst, 0, BS), 0);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, size - 10, dst, 20 * BS, BS), 10);
	ck_assert_uint_eq(dst->size, 20 * BS + 10);
	ck_assert(is_hole(&t, dst, 15)); /* the gap before it */
	uint8_t *want = calloc(1, 21 * BS);
	memcpy(want, model, size);
	memcpy(want + 20 * BS, model + size - 10, 10);
	expect_model(&t, dst, want, 20 * BS + 10);
	ck_assert_uint_eq(t.fs->copy_range_bytes, size + 10);
	free(want);
	free(model);
	inode_put(t.fs, src);
	inode_put(t.fs, dst);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Unaligned source and destination offsets (different in-block offsets),
 * over a destination with data: the source's hole is written as zeros
 * there, the rest of the destination stays. */
START_TEST(test_unaligned_copy_over_data)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	uint8_t *smodel = calloc(1, 16 * BS), *dmodel = calloc(1, 32 * BS);
	struct inode *src = make_source(&t, smodel), *dst = tfs_create_file(&t, "dst");
	write_model(&t, dst, dmodel, 0, 14 * BS, 9);
	ck_assert_int_eq(ordfs_sync(t.fs), 0); /* dst's data home */
	const uint64_t in = 1 * BS + 333, out = 777;
	const size_t len = 10 * BS + 50;
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, in, dst, out, len), (ssize_t)len);
	memcpy(dmodel + out, smodel + in, len);
	expect_model(&t, dst, dmodel, 14 * BS);
	/* Growing, from an offset past the destination's EOF. */
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 5, dst, 20 * BS + 1, 3 * BS),
			 (ssize_t)(3 * BS));
	memcpy(dmodel + 20 * BS + 1, smodel + 5, 3 * BS);
	expect_model(&t, dst, dmodel, 23 * BS + 1);
	free(smodel);
	free(dmodel);
	inode_put(t.fs, src);
	inode_put(t.fs, dst);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Disjoint ranges of one file copy; overlapping ones are -EINVAL and
 * change nothing. */
START_TEST(test_one_file)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	uint8_t *model = calloc(1, 16 * BS);
	struct inode *f = tfs_create_file(&t, "f");
	write_model(&t, f, model, 0, 4 * BS, 4);
	ck_assert_int_eq(ordfs_copy_range(t.fs, f, 0, f, BS, 2 * BS), -EINVAL);
	ck_assert_int_eq(ordfs_copy_range(t.fs, f, 2 * BS, f, BS + 1, BS), -EINVAL);
	expect_model(&t, f, model, 4 * BS);
	ck_assert_int_eq(ordfs_copy_range(t.fs, f, 10, f, 2 * BS + 10, 2 * BS),
			 (ssize_t)(2 * BS));
	memmove(model + 2 * BS + 10, model + 10, 2 * BS);
	expect_model(&t, f, model, 4 * BS + 10);
	free(model);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_errors_and_flags_change_nothing)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	uint8_t *model = calloc(1, 16 * BS), *dmodel = calloc(1, 16 * BS);
	struct inode *src = make_source(&t, model), *dst = tfs_create_file(&t, "dst");
	write_model(&t, dst, dmodel, 0, BS, 5);
	struct inode *root = tfs_root(&t);
	ck_assert_int_eq(ordfs_copy_range(t.fs, root, 0, dst, 0, BS), -EISDIR);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, root, 0, BS), -EISDIR);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, UINT64_MAX - 10, dst, 0, BS), -EOVERFLOW);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, (1ull << 62) - 10, BS), -EFBIG);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, 0), 0);
	ck_assert_int_eq(ordfs_set_flags(t.fs, dst, ORDFS_FL_IMMUTABLE, ORDFS_FL_IMMUTABLE, NULL),
			 0);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, BS), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(t.fs, dst, ORDFS_FL_APPEND,
					 ORDFS_FL_APPEND | ORDFS_FL_IMMUTABLE, NULL),
			 0);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, BS), -EPERM);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, BS, BS), -EPERM);
	ck_assert_int_eq(ordfs_set_flags(t.fs, dst, 0, ORDFS_FL_APPEND, NULL), 0);
	expect_model(&t, dst, dmodel, BS);
	ck_assert_uint_eq(t.fs->copy_range_bytes, 0);
	free(model);
	free(dmodel);
	inode_put(t.fs, root);
	inode_put(t.fs, src);
	inode_put(t.fs, dst);
	tfs_unmount_and_check(&t);
}
END_TEST

/* The copy's data goes through the log (data=journal, or j under
 * data=ordered), and after a crash the fsync'd copy replays whole. */
static void copy_logged_then_crash(bool data_journal)
{
	struct test_fs t;
	tfs_setup(&t, 32 << 20, BS, 1024);
	if (data_journal) {
		tfs_unmount(&t);
		t.opts.data_mode = JOURNAL_DATA_JOURNAL;
		tfs_mount(&t);
	}
	uint8_t *model = calloc(1, 16 * BS);
	struct inode *src = make_source(&t, model), *dst = tfs_create_file(&t, "dst");
	if (!data_journal)
		ck_assert_int_eq(ordfs_set_flags(t.fs, dst, ORDFS_FL_JOURNAL_DATA,
						 ORDFS_FL_JOURNAL_DATA, NULL),
				 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, src, false), 0);
	struct journal_stats before, after;
	journal_get_stats(t.fs->journal, &before);
	const size_t size = 12 * BS + 100;
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, size), (ssize_t)size);
	ck_assert_int_eq(ordfs_fsync(t.fs, dst, false), 0);
	journal_get_stats(t.fs->journal, &after);
	/* The 5 data blocks (0-1, 10-12) logged, the holes not written. */
	ck_assert_uint_ge(after.blocks_logged - before.blocks_logged, 5);
	inode_put(t.fs, src);
	inode_put(t.fs, dst);
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert_uint_ge(t.fs->recovery.blocks_replayed, 5);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "dst", &dst), 0);
	expect_model(&t, dst, model, size);
	for (uint64_t b = 2; b < 10; b++)
		ck_assert(is_hole(&t, dst, b));
	free(model);
	inode_put(t.fs, dst);
	tfs_unmount_and_check(&t);
}

START_TEST(test_data_journal_copy_survives_crash)
{
	copy_logged_then_crash(true);
}
END_TEST

START_TEST(test_journal_data_flag_copy_survives_crash)
{
	copy_logged_then_crash(false);
}
END_TEST

/* data=ordered: a large copy (past the dirty limit's chunks), fsync'd,
 * survives a crash. */
START_TEST(test_ordered_copy_survives_crash)
{
	struct test_fs t;
	tfs_setup(&t, 64 << 20, BS, 0);
	const size_t size = 600 * BS + 17;
	uint8_t *model = calloc(1, size);
	struct inode *src = tfs_create_file(&t, "src"), *dst = tfs_create_file(&t, "dst");
	write_model(&t, src, model, 0, size, 3);
	ck_assert_int_eq(ordfs_copy_range(t.fs, src, 0, dst, 0, size), (ssize_t)size);
	ck_assert_int_eq(ordfs_fsync(t.fs, dst, false), 0);
	inode_put(t.fs, src);
	inode_put(t.fs, dst);
	tfs_crash(&t);
	tfs_mount(&t);
	ck_assert_int_eq(ordfs_lookup_path(t.fs, "dst", &dst), 0);
	expect_model(&t, dst, model, size);
	free(model);
	inode_put(t.fs, dst);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *copy_range_suite(void)
{
	Suite *s = suite_create("copy_range");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_holes_stay_holes_and_copy_stops_at_eof);
	tcase_add_test(tc, test_unaligned_copy_over_data);
	tcase_add_test(tc, test_one_file);
	tcase_add_test(tc, test_errors_and_flags_change_nothing);
	tcase_add_test(tc, test_data_journal_copy_survives_crash);
	tcase_add_test(tc, test_journal_data_flag_copy_survives_crash);
	tcase_add_test(tc, test_ordered_copy_survives_crash);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(copy_range_suite());
}
