/*
 * test_enospc.c - ENOSPC only when the space is really gone: every
 * allocating path tries again after a forced commit (enospc.c).
 *
 * Each test fills the image, removes a file whose blocks then wait for the
 * next commit [J5] (tests run with no periodic commit), checks that they
 * do wait (pending_free > 0), and asks for space again through one path:
 * fallocate, a delayed-allocation write, directory growth (create and
 * link), an attribute block, and writeback that needs an extent-tree block.
 * Without the retry each of these fails with ENOSPC.  Last, a filesystem
 * that is really full still answers ENOSPC.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "file/file.h"

#define BS 4096u

static const struct ordfs_cred root_cred = { 0, 0 };

static struct inode *make_file(struct test_fs *t, struct inode *dir, const char *name)
{
	struct inode *f;
	ck_assert_int_eq(ordfs_create(t->fs, dir, name, 0644, &root_cred, &f), 0);
	return f;
}

static struct alloc_counts counts(struct test_fs *t)
{
	struct alloc_counts c;
	alloc_get_counts(t->fs->alloc, &c);
	return c;
}

/* Takes every block data may have with file "big" (fallocate), then the
 * rest with attribute blocks on files in directory "xd" and directory
 * blocks of "xd", and commits, so nothing is pending.  Returns the number of data blocks
 * "big" holds. */
static uint64_t fill_image(struct test_fs *t, struct inode *root)
{
	ck_assert_int_eq(journal_force_commit(t->fs->journal), 0);
	uint64_t data = counts(t).data_blocks;
	struct inode *big = make_file(t, root, "big");
	ck_assert_int_eq(ordfs_fallocate(t->fs, big, 0, 0, data * BS), 0);
	inode_put(t->fs, big);

	struct inode *xd;
	ck_assert_int_eq(ordfs_mkdir(t->fs, root, "xd", 0755, &root_cred, &xd), 0);
	char value[512];
	memset(value, 'v', sizeof(value));
	int err = 0;
	for (unsigned n = 0; !err; n++) {
		char name[32];
		snprintf(name, sizeof(name), "x%u", n);
		struct inode *x;
		err = ordfs_create(t->fs, xd, name, 0644, &root_cred, &x);
		if (err)
			break;
		snprintf(value, sizeof(value), "%u", n); /* no two blocks alike */
		err = ordfs_setxattr(t->fs, x, "user.fill", value, sizeof(value), 0);
		inode_put(t->fs, x);
		ck_assert_uint_lt(n, 100000);
	}
	ck_assert_int_eq(err, -ENOSPC);
	/* Attribute blocks come out of what data may have; the metadata
	 * reserve is taken by directory blocks: long names (links, so no
	 * inode is used up first) until none fits, in as many directories as
	 * it takes (each has a size limit). */
	struct inode *target = make_file(t, xd, "target");
	for (unsigned d = 0; counts(t).free_blocks > 0; d++) {
		char name[256];
		snprintf(name, sizeof(name), "fill%u", d);
		struct inode *fd;
		err = ordfs_mkdir(t->fs, xd, name, 0755, &root_cred, &fd);
		if (err == -ENOSPC)
			break;
		ck_assert_int_eq(err, 0);
		for (unsigned n = 0; !err; n++) {
			snprintf(name, sizeof(name), "%0200u", n);
			err = ordfs_link(t->fs, target, fd, name);
			ck_assert_uint_lt(n, 100000);
		}
		ck_assert_int_eq(err, -ENOSPC);
		inode_put(t->fs, fd);
	}
	inode_put(t->fs, target);
	inode_put(t->fs, xd);
	ck_assert_int_eq(journal_force_commit(t->fs->journal), 0);
	struct alloc_counts c = counts(t);
	ck_assert_uint_eq(c.pending_free, 0);
	ck_assert_uint_eq(c.data_blocks, 0);
	ck_assert_msg(c.free_blocks == 0, "%llu blocks, %u inodes free", (unsigned long long)c.free_blocks, c.free_inodes);
	return data;
}

/* Removes "big": its blocks are freed by a transaction that has not
 * committed, so the allocator cannot hand them out yet. */
static void remove_big(struct test_fs *t, struct inode *root, uint64_t data)
{
	ck_assert_int_eq(ordfs_unlink(t->fs, root, "big"), 0);
	struct alloc_counts c = counts(t);
	ck_assert_uint_ge(c.pending_free, data);
	ck_assert_uint_eq(c.data_blocks, 0);
}

/* A fresh image with file "f", filled (fill_image), then "big" removed:
 * the state every test below starts from, but for its own setup. */
static uint64_t setup_full_then_unlink(struct test_fs *t, struct inode **root, struct inode **f)
{
	tfs_setup(t, 16 << 20, BS, 0);
	*root = tfs_root(t);
	*f = make_file(t, *root, "f");
	uint64_t data = fill_image(t, *root);
	remove_big(t, *root, data);
	return data;
}

static void finish(struct test_fs *t, struct inode *root, struct inode *f)
{
	inode_put(t->fs, f);
	inode_put(t->fs, root);
	tfs_unmount_and_check(t);
}

START_TEST(test_fallocate_after_unlink)
{
	struct test_fs t;
	struct inode *root, *f;
	uint64_t data = setup_full_then_unlink(&t, &root, &f);
	/* Half: the metadata reserve, used up by fill_image, comes first. */
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, data / 2 * BS), 0);
	ck_assert_uint_eq(f->size, data / 2 * BS);
	finish(&t, root, f);
}
END_TEST

START_TEST(test_write_after_unlink)
{
	struct test_fs t;
	struct inode *root, *f;
	uint64_t data = setup_full_then_unlink(&t, &root, &f);
	/* Delayed allocation reserves at write(): the first block already
	 * needs the freed space. */
	static uint8_t buf[16 * BS];
	memset(buf, 0x5a, sizeof(buf));
	uint64_t want = data / 2 * BS, off = 0;
	while (off < want) {
		size_t len = want - off < sizeof(buf) ? (size_t)(want - off) : sizeof(buf);
		ck_assert_int_eq(ordfs_write(t.fs, f, buf, len, off), (ssize_t)len);
		off += len;
	}
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	finish(&t, root, f);
}
END_TEST

/* Adds n names to d (creates, or links of target), each needing the
 * allocation to succeed; asserts that d grew. */
static void add_names(struct test_fs *t, struct inode *d, const char *prefix, unsigned n,
		      struct inode *target)
{
	uint64_t blocks0 = d->d.blocks;
	for (unsigned i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s-long-name-to-fill-blocks-%u", prefix, i);
		if (target) {
			ck_assert_int_eq(ordfs_link(t->fs, target, d, name), 0);
		} else {
			struct inode *f = make_file(t, d, name);
			inode_put(t->fs, f);
		}
	}
	ck_assert_uint_gt(d->d.blocks, blocks0);
}

START_TEST(test_directory_growth_after_unlink)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	struct inode *root = tfs_root(&t), *d, *target = make_file(&t, root, "target");
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &root_cred, &d), 0);
	uint64_t data = fill_image(&t, root);
	remove_big(&t, root, data);
	/* Enough names that "d" needs more blocks: creates, then links. */
	add_names(&t, d, "created", 300, NULL);
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	/* Take the space again, then grow by links. */
	struct inode *big2 = make_file(&t, root, "big2");
	ck_assert_int_eq(ordfs_fallocate(t.fs, big2, 0, 0, counts(&t).data_blocks * BS), 0);
	inode_put(t.fs, big2);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "big2"), 0);
	ck_assert_uint_gt(counts(&t).pending_free, 0);
	add_names(&t, d, "linked", 300, target);
	inode_put(t.fs, target);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_xattr_block_after_unlink)
{
	struct test_fs t;
	struct inode *root, *f;
	setup_full_then_unlink(&t, &root, &f);
	char value[1000];
	memset(value, 'q', sizeof(value));
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.after", value, sizeof(value), 0), 0);
	ck_assert_uint_ne(f->d.xattr_block, 0);
	finish(&t, root, f);
}
END_TEST

START_TEST(test_writeback_tree_block_after_unlink)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	/* As many extents as the inode holds, each written back... */
	uint8_t block[BS];
	memset(block, 0x33, sizeof(block));
	for (unsigned i = 0; i < ORDFS_INODE_ROOT_EXTENTS; i++) {
		ck_assert_int_eq(ordfs_write(t.fs, f, block, BS, (uint64_t)i * 2 * BS), (ssize_t)BS);
		ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	}
	ck_assert_uint_eq(f->d.blocks, ORDFS_INODE_ROOT_EXTENTS);
	/* ...and one more block, delayed: its extent needs a tree block. */
	uint64_t far = (uint64_t)ORDFS_INODE_ROOT_EXTENTS * 2 * BS;
	ck_assert_int_eq(ordfs_write(t.fs, f, block, BS, far), (ssize_t)BS);
	uint64_t data = fill_image(&t, root);
	remove_big(&t, root, data);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	ck_assert_uint_eq(f->d.blocks, ORDFS_INODE_ROOT_EXTENTS + 2); /* + the tree block */
	finish(&t, root, f);
}
END_TEST

/* Really full: nothing pending, so ENOSPC at once, without a commit. */
START_TEST(test_really_full_still_enospc)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, BS, 0);
	struct inode *root = tfs_root(&t), *f = make_file(&t, root, "f");
	fill_image(&t, root);
	struct journal_stats before, after;
	journal_get_stats(t.fs->journal, &before);
	ck_assert_int_eq(ordfs_fallocate(t.fs, f, 0, 0, BS), -ENOSPC);
	ck_assert_int_eq(ordfs_write(t.fs, f, "x", 1, 0), -ENOSPC);
	char value[600];
	memset(value, 'z', sizeof(value));
	ck_assert_int_eq(ordfs_setxattr(t.fs, f, "user.z", value, sizeof(value), 0), -ENOSPC);
	journal_get_stats(t.fs->journal, &after);
	ck_assert_uint_eq(after.commits, before.commits);
	finish(&t, root, f);
}
END_TEST

static Suite *enospc_suite(void)
{
	Suite *s = suite_create("enospc");
	TCase *tc = tcase_create("retry");
	tcase_add_test(tc, test_fallocate_after_unlink);
	tcase_add_test(tc, test_write_after_unlink);
	tcase_add_test(tc, test_directory_growth_after_unlink);
	tcase_add_test(tc, test_xattr_block_after_unlink);
	tcase_add_test(tc, test_writeback_tree_block_after_unlink);
	tcase_add_test(tc, test_really_full_still_enospc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(enospc_suite());
}
