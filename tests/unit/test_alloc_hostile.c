/*
 * test_alloc_hostile.c - the allocator on an image that changes under the
 * mount (an NBD export someone else runs, a shared image file): a bitmap
 * block read from the device after the mount is verified as at the mount
 * (checksum, a group bitmap block's own bit), so a block bitmap rewritten
 * underneath never makes the allocator hand out metadata or blocks in use
 * (issue 36, "trust nothing at allocation").  The bytes change on the
 * in-memory device under a live library mount; the bitmap block is not in
 * the buffer cache then (bcache_shrink), as after an eviction.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "helpers.h"
#include "ops.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

/* 1 KiB blocks: 8000 blocks a group.  A 4 MiB filesystem grown by hand to
 * three groups past the area (tfs_add_groups), as in test_alloc. */
#define PER 8000u
#define COUNT (3u * PER + 500u)

/* Rewrites bitmap block blockno on the device: change() alters its bytes,
 * then the checksum is set again unless keep_bad. */
static void rewrite_bitmap(struct test_fs *t, uint64_t blockno, void (*change)(uint8_t *),
			   bool keep_bad)
{
	uint32_t bs = t->fs->block_size;
	uint8_t *b = malloc(bs);
	ck_assert_int_eq(blockdev_read(t->mem, b, bs, blockno * bs), 0);
	change(b);
	if (!keep_bad)
		ordfs_block_csum_set(b, bs, t->fs->csum_seed);
	ck_assert_int_eq(blockdev_write(t->mem, b, bs, blockno * bs), 0);
	free(b);
}

static void clear_own_bit(uint8_t *b)
{
	b[ORDFS_BLOCK_HDR_SIZE] &= (uint8_t)~1u;
}

static void clear_all_bits(uint8_t *b)
{
	/* every block of the group marked free (1 KiB: 1000 payload bytes) */
	memset(b + ORDFS_BLOCK_HDR_SIZE, 0, 1000);
}

/* Loads group 3's chunk (and nothing stays claimed): with a limit of one
 * loaded chunk, every other group's chunk is dropped. */
static void load_only_group3(struct test_fs *t)
{
	uint64_t s;
	uint32_t n;
	ck_assert_int_eq(alloc_claim_blocks(t->fs->alloc, 3 * PER + 1, 1, 0, &s, &n), 0);
	ck_assert_uint_eq(s, 3 * PER + 1);
	alloc_unclaim_blocks(t->fs->alloc, s, n, 0);
}

/* No claim may hold a group bitmap block or block `used`. */
static void claim_everything_around(struct test_fs *t, uint64_t goal, uint64_t used)
{
	struct alloc *a = t->fs->alloc;
	for (int i = 0; i < 8; i++) {
		uint64_t s;
		uint32_t n;
		ck_assert_int_eq(alloc_claim_blocks(a, goal, 64, 0, &s, &n), 0);
		ck_assert_msg(!ordfs_range_has_group_bitmap(&t->fs->sb, s, n),
			      "claim %llu+%u holds a group bitmap block", (unsigned long long)s, n);
		ck_assert_msg(used < s || used >= s + n, "claim %llu+%u holds block %llu in use",
			      (unsigned long long)s, n, (unsigned long long)used);
		alloc_unclaim_blocks(a, s, n, 0);
	}
}

/* A group bitmap block's own bit cleared (checksum valid) after the mount
 * counted it: before, the chunk was loaded with a structure check only,
 * and the first claim in group 2 was the group's own bitmap block. */
START_TEST(test_group_own_bit_cleared_under_the_mount)
{
	struct test_fs t;
	tfs_setup_groups(&t, 4u << 20, 1024, COUNT);
	struct alloc *a = t.fs->alloc;
	alloc_set_map_limit(a, 1);
	load_only_group3(&t);
	bcache_shrink(t.fs->cache);
	rewrite_bitmap(&t, 2 * PER, clear_own_bit, false);
	claim_everything_around(&t, 2 * PER, 2 * PER);
	/* Nothing changed on disk: the checker sees only the damage. */
	tfs_unmount(&t);
	ck_assert_int_ne(tfs_check_image(&t), 0);
	tfs_free(&t);
}
END_TEST

/* A group's bitmap rewritten with a bad checksum (bits of blocks in use
 * cleared) after the mount counted it: before, its bits were believed. */
START_TEST(test_bitmap_block_with_bad_checksum_under_the_mount)
{
	struct test_fs t;
	tfs_setup_groups(&t, 4u << 20, 1024, COUNT);
	struct alloc *a = t.fs->alloc;
	/* Blocks in use in group 1, the first the claim will meet. */
	struct handle *h = tfs_start(&t, alloc_credits(a, 100));
	uint64_t s;
	uint32_t n;
	ck_assert_int_eq(alloc_blocks(a, h, PER + 1, 100, 0, &s, &n), 0);
	ck_assert_uint_eq(s, PER + 1);
	tfs_stop(h);
	ck_assert_int_eq(journal_flush_all(t.fs->journal), 0); /* home, on the device */
	alloc_set_map_limit(a, 1);
	load_only_group3(&t); /* group 1's chunk dropped */
	bcache_shrink(t.fs->cache);
	rewrite_bitmap(&t, PER, clear_all_bits, true);
	claim_everything_around(&t, PER + 1, PER + 1);
	tfs_unmount(&t);
	ck_assert_int_ne(tfs_check_image(&t), 0);
	tfs_free(&t);
}
END_TEST

/* The other way: on a healthy filesystem the check of cached metadata
 * (known_used.h) never refuses a block.  Directories, extent-tree blocks
 * and xattr blocks are made (cached), freed with their copies still
 * cached, and their blocks reused for new data and new metadata, rounds
 * over, with a map of one loaded chunk; not one block may be refused. */
START_TEST(test_freed_metadata_still_cached_is_reused)
{
	static const struct ordfs_cred cred = { 0, 0 };
	struct test_fs t;
	tfs_setup(&t, 4u << 20, 1024, 0); /* small: the rotor wraps, freed blocks are reused */
	struct ordfs *fs = t.fs;
	struct inode *root = tfs_root(&t);
	uint8_t buf[1024];
	char name[32];
	for (int round = 0; round < 16; round++) {
		for (int d = 0; d < 6; d++) {
			struct inode *dir, *f;
			snprintf(name, sizeof(name), "d%d", d);
			ck_assert_int_eq(ordfs_mkdir(fs, root, name, 0755, &cred, &dir), 0);
			for (int i = 0; i < 40; i++) { /* several directory blocks */
				snprintf(name, sizeof(name), "a-rather-long-file-name-%03d", i);
				ck_assert_int_eq(ordfs_create(fs, dir, name, 0644, &cred, &f), 0);
				if (i % 8 == 0) /* an xattr block */
					ck_assert_int_eq(ordfs_setxattr(fs, f, "user.k", "v", 1, 0), 0);
				/* every other block: an extent tree past the root's */
				for (int k = 0; i == 0 && k < 40; k++) {
					tfs_fill_pattern(buf, sizeof(buf), (uint32_t)(round * 100 + k));
					ck_assert_int_eq(ordfs_write(fs, f, buf, sizeof(buf),
								     (uint64_t)k * 2 * sizeof(buf)),
							 (ssize_t)sizeof(buf));
					ck_assert_int_eq(ordfs_fsync(fs, f, false), 0);
				}
				inode_put(fs, f);
			}
			inode_put(fs, dir);
		}
		ck_assert_int_eq(ordfs_sync(fs), 0);
		for (int d = 0; d < 6; d++) {
			struct inode *dir;
			snprintf(name, sizeof(name), "d%d", d);
			ck_assert_int_eq(ordfs_lookup(fs, root, name, &dir), 0);
			for (int i = 0; i < 40; i++) {
				snprintf(name, sizeof(name), "a-rather-long-file-name-%03d", i);
				ck_assert_int_eq(ordfs_unlink(fs, dir, name), 0);
			}
			inode_put(fs, dir);
			snprintf(name, sizeof(name), "d%d", d);
			ck_assert_int_eq(ordfs_rmdir(fs, root, name), 0);
		}
		ck_assert_int_eq(ordfs_sync(fs), 0); /* the frees commit: reusable */
		alloc_set_map_limit(fs->alloc, 1);
	}
	struct alloc_counts c;
	alloc_get_counts(fs->alloc, &c);
	ck_assert_uint_eq(c.refused_in_use, 0);
	inode_put(fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* Finding 2 with the inode not cached (test_mnt_alloc meets the cached
 * case first): its bit cleared on the image, the slot in use.  The create
 * that is offered the number fails with EUCLEAN and leaves the bit set;
 * the next gets another number; the file is untouched, and the image is
 * consistent again (the bit's repair committed with the failed create). */
START_TEST(test_inode_marked_free_not_cached)
{
	static const struct ordfs_cred cred = { 0, 0 };
	struct test_fs t;
	tfs_setup(&t, 16u << 20, 4096, 0);
	struct inode *f = tfs_create_file(&t, "x");
	uint32_t ino = f->ino;
	uint8_t buf[4096];
	tfs_fill_pattern(buf, sizeof(buf), 7);
	ck_assert_int_eq(ordfs_write(t.fs, f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	inode_put(t.fs, f);
	uint64_t ibitmap = t.fs->sb.inode_bitmap_start;
	uint32_t seed = t.fs->csum_seed;
	tfs_unmount(&t);
	ck_assert_int_eq(tfs_check_image(&t), 0);
	uint32_t bs = 4096;
	uint8_t *b = malloc(bs);
	ck_assert_int_eq(blockdev_read(t.mem, b, bs, ibitmap * bs), 0);
	ck_assert(ordfs_bitmap_bit(b, ino - 1));
	ordfs_bitmap_put(b, ino - 1, false);
	ordfs_block_csum_set(b, bs, seed);
	ck_assert_int_eq(blockdev_write(t.mem, b, bs, ibitmap * bs), 0);
	free(b);
	tfs_mount(&t);

	struct inode *root = tfs_root(&t), *y = NULL;
	ck_assert_int_eq(ordfs_create(t.fs, root, "y", 0644, &cred, &y), -EUCLEAN);
	ck_assert_int_eq(ordfs_create(t.fs, root, "y", 0644, &cred, &y), 0);
	ck_assert_uint_ne(y->ino, ino);
	inode_put(t.fs, y);
	inode_put(t.fs, root);
	f = tfs_open_file(&t, "x");
	ck_assert_uint_eq(f->ino, ino);
	ck_assert(S_ISREG(f->d.mode));
	uint8_t got[4096];
	ck_assert_int_eq(ordfs_read(t.fs, f, got, sizeof(got), 0), (ssize_t)sizeof(got));
	tfs_fill_pattern(buf, sizeof(buf), 7);
	ck_assert(memcmp(got, buf, sizeof(buf)) == 0);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *alloc_hostile_suite(void)
{
	Suite *s = suite_create("alloc_hostile");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_group_own_bit_cleared_under_the_mount);
	tcase_add_test(tc, test_bitmap_block_with_bad_checksum_under_the_mount);
	tcase_add_test(tc, test_freed_metadata_still_cached_is_reused);
	tcase_add_test(tc, test_inode_marked_free_not_cached);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(alloc_hostile_suite());
}
