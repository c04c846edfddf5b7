/*
 * test_errors.c - errors= applies wherever the library finds an error, not
 * only in the FUSE glue: eviction that meets a damaged structure, and a
 * journal that stops on an error of its own rules.
 *
 * Each test checks the superblock's ERROR state (in memory and on the
 * image), that the failed work is kept for the next mount or fsck, and
 * what later operations get.
 */
#include "suite_main.h"
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "format/endian_le.h"
#include "file/file.h"
#include "orphan/orphan.h"

#define BS 4096u

static const struct ordfs_cred root_cred = { 0, 0 };

static struct ordfs_super super_on_image(struct test_fs *t)
{
	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(t->mem, false, &sb, &why), 0);
	return sb;
}

/* An unlinked file whose extent-tree block turns out damaged when its last
 * reference goes: the eviction's error is logged and recorded (errors=
 * continue), the inode stays on the orphan list, and the filesystem goes
 * on. */
START_TEST(test_eviction_error_recorded)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &root_cred, &f), 0);
	uint8_t block[BS];
	memset(block, 0x44, sizeof(block));
	for (unsigned i = 0; i <= ORDFS_INODE_ROOT_EXTENTS; i++) {
		ck_assert_int_eq(ordfs_write(t.fs, f, block, BS, (uint64_t)i * 2 * BS), (ssize_t)BS);
		ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	}
	/* The root now indexes one leaf block. */
	ck_assert_uint_eq(le_get16(f->d.data + 6), 1);
	uint64_t leaf = le_get64(f->d.data + ORDFS_EXTENT_NODE_HDR + 8);
	uint32_t ino = f->ino;

	ck_assert_int_eq(ordfs_unlink(t.fs, root, "f"), 0);
	ck_assert_uint_eq(orphan_head(t.fs), ino);
	struct buf *b;
	ck_assert_int_eq(bcache_read(t.fs->cache, leaf, &b), 0);
	b->data[0] ^= 0xff; /* the block's magic, in memory only */
	bcache_put(t.fs->cache, b);

	inode_put(t.fs, f); /* the last reference: eviction meets the damage */
	ck_assert(t.fs->sb.state & ORDFS_STATE_ERROR);
	ck_assert_uint_eq(t.fs->sb.last_error_code, EUCLEAN);
	ck_assert_uint_eq(orphan_head(t.fs), ino);
	ck_assert_int_eq(ordfs_writable(t.fs), 0); /* errors=continue */
	struct inode *g;
	ck_assert_int_eq(ordfs_create(t.fs, root, "g", 0644, &root_cred, &g), 0);
	inode_put(t.fs, g);
	inode_put(t.fs, root);

	tfs_unmount(&t);
	struct ordfs_super sb = super_on_image(&t);
	ck_assert(sb.state & ORDFS_STATE_ERROR);
	ck_assert_uint_eq(sb.orphan_head, ino);
	tfs_free(&t);
}
END_TEST

/* The journal stops on an error it found itself: errors= decides, and the
 * error is recorded on the image even though the journal has stopped. */
static void internal_abort_case(uint32_t errors)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	tfs_unmount(&t);
	t.opts.errors = errors;
	t.opts.flush_error = FLUSH_ERROR_REPORT; /* would retry a device error */
	tfs_mount(&t);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "before", 0644, &root_cred, &f), 0);
	inode_put(t.fs, f);

	journal_abort_internal(t.fs->journal, -EUCLEAN);
	ck_assert_int_eq(ordfs_writable(t.fs), -EROFS);
	ck_assert_int_eq(ordfs_create(t.fs, root, "after", 0644, &root_cred, &f), -EROFS);
	struct ordfs_super sb = super_on_image(&t);
	ck_assert(sb.state & ORDFS_STATE_ERROR);
	ck_assert_uint_eq(sb.last_error_code, EUCLEAN);
	inode_put(t.fs, root);
	ck_assert_int_ne(ordfs_unmount(t.fs), 0);
	t.fs = NULL;
	tfs_free(&t);
}

START_TEST(test_internal_abort_continue)
{
	internal_abort_case(ORDFS_ERRORS_CONTINUE);
}
END_TEST

START_TEST(test_internal_abort_remount_ro)
{
	internal_abort_case(ORDFS_ERRORS_RO);
}
END_TEST

static Suite *errors_suite(void)
{
	Suite *s = suite_create("errors");
	TCase *tc = tcase_create("errors");
	tcase_add_test(tc, test_eviction_error_recorded);
	tcase_add_test(tc, test_internal_abort_continue);
	tcase_add_test(tc, test_internal_abort_remount_ro);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(errors_suite());
}
