/*
 * test_namei.c - names beyond create/unlink: hard links, symlinks (fast and
 * long), device nodes, RENAME_NOREPLACE / RENAME_EXCHANGE, set-group-ID
 * inheritance, name length limits.  Every test ends with the checker.
 */
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "suite_main.h"
#include "helpers.h"

static const struct ordfs_cred cred = { 1000, 100 };

static struct inode *lookup(struct test_fs *t, struct inode *dir, const char *name)
{
	struct inode *i;
	ck_assert_int_eq(ordfs_lookup(t->fs, dir, name, &i), 0);
	return i;
}

/* A directory's link count, as an image may damage it, too low for the
 * subdirectory an rmdir or rename would take from it: EUCLEAN and nothing
 * changed, never a count of 0 that frees a directory in use (the hostile
 * harness took the root to 0 with an rmdir and a rename). */
START_TEST(test_subdir_link_too_low_is_euclean)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *a, *b, *c, *e;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "a", 0755, &cred, &a), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, a, "b", 0755, &cred, &b), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, a, "c", 0755, &cred, &c), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "e", 0755, &cred, &e), 0);
	ck_assert_uint_eq(a->d.links, 4);
	a->d.links = 2; /* what a damaged slot would have read as */
	ck_assert_int_eq(ordfs_rmdir(t.fs, a, "b"), -EUCLEAN);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "b", root, "b2", 0), -EUCLEAN);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "b", a, "c", 0), -EUCLEAN);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "b", root, "e", RENAME_EXCHANGE), -EUCLEAN);
	ck_assert_uint_eq(a->d.links, 2);
	struct inode *x = lookup(&t, a, "b");
	ck_assert_uint_eq(x->ino, b->ino);
	inode_put(t.fs, x);
	a->d.links = 4; /* as it is on disk: everything works again */
	ck_assert_int_eq(ordfs_rmdir(t.fs, a, "b"), 0);
	ck_assert_uint_eq(a->d.links, 3);
	inode_put(t.fs, a);
	inode_put(t.fs, b);
	inode_put(t.fs, c);
	inode_put(t.fs, e);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_hard_links)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f, *d;
	ck_assert_int_eq(ordfs_create(t.fs, root, "f", 0644, &cred, &f), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "d", 0755, &cred, &d), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, "abc", 3, 0), 3);
	ck_assert_int_eq(ordfs_link(t.fs, f, d, "g"), 0);
	ck_assert_uint_eq(f->d.links, 2);
	ck_assert_int_eq(ordfs_link(t.fs, f, d, "g"), -EEXIST);
	ck_assert_int_eq(ordfs_link(t.fs, d, root, "dlink"), -EPERM);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "f"), 0);
	ck_assert_uint_eq(f->d.links, 1);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	d = lookup(&t, root, "d");
	f = lookup(&t, d, "g");
	char buf[4];
	ck_assert_int_eq(ordfs_read(t.fs, f, buf, 4, 0), 3);
	ck_assert_mem_eq(buf, "abc", 3);
	ck_assert_uint_eq(f->d.links, 1);
	inode_put(t.fs, f);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_symlinks_fast_and_long)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 1024, 0);
	struct inode *root = tfs_root(&t), *s1, *s2;
	struct alloc_counts c0, c;
	ck_assert_int_eq(ordfs_sync(t.fs), 0);
	alloc_get_counts(t.fs->alloc, &c0);

	char longt[ORDFS_SYMLINK_MAX + 2];
	for (size_t i = 0; i < sizeof(longt); i++)
		longt[i] = (char)('a' + i % 26);
	longt[3000] = '\0';
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "fast", "target/of/a/link", &cred, &s1), 0);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "long", longt, &cred, &s2), 0);
	ck_assert(S_ISLNK(s2->d.mode));
	ck_assert_uint_eq(s2->d.blocks, 3); /* 3000 bytes in 1 KiB blocks */
	inode_put(t.fs, s1);
	inode_put(t.fs, s2);
	longt[3000] = 'x';
	longt[ORDFS_SYMLINK_MAX + 1] = '\0'; /* 4096 bytes: one too many */
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "toolong", longt, &cred, &s1), -ENAMETOOLONG);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "empty", "", &cred, &s1), -ENOENT);
	longt[3000] = '\0';
	inode_put(t.fs, root);

	tfs_crash(&t); /* nothing fsync'd: the creates may be lost, never torn */
	tfs_mount(&t);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_symlink(t.fs, root, "long2", longt, &cred, &s2), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);
	inode_put(t.fs, s2);
	inode_put(t.fs, root);
	tfs_crash(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	s2 = lookup(&t, root, "long2");
	char buf[ORDFS_SYMLINK_MAX + 1];
	ck_assert_int_eq(ordfs_readlink(t.fs, s2, buf, sizeof(buf)), 3000);
	ck_assert_mem_eq(buf, longt, 3000);
	/* A short buffer gets a truncated target, as readlink(2). */
	ck_assert_int_eq(ordfs_readlink(t.fs, s2, buf, 10), 10);
	ck_assert_mem_eq(buf, longt, 10);
	inode_put(t.fs, s2);
	ck_assert_int_eq(ordfs_unlink(t.fs, root, "long2"), 0);
	struct inode *tmp;
	if (ordfs_lookup(t.fs, root, "fast", &tmp) == 0) {
		ck_assert_int_eq(ordfs_readlink(t.fs, tmp, buf, sizeof(buf)), 16);
		ck_assert_mem_eq(buf, "target/of/a/link", 16);
		inode_put(t.fs, tmp);
		ck_assert_int_eq(ordfs_unlink(t.fs, root, "fast"), 0);
	}
	if (ordfs_lookup(t.fs, root, "long", &tmp) == 0) {
		inode_put(t.fs, tmp);
		ck_assert_int_eq(ordfs_unlink(t.fs, root, "long"), 0);
	}
	ck_assert_int_eq(journal_force_commit(t.fs->journal), 0);
	alloc_get_counts(t.fs->alloc, &c);
	ck_assert_uint_eq(c.free_blocks, c0.free_blocks);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_device_nodes)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *n;
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "null", S_IFCHR | 0666, makedev(1, 3), &cred, &n),
			 0);
	inode_put(t.fs, n);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "fifo", S_IFIFO | 0600, 0, &cred, &n), 0);
	inode_put(t.fs, n);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "sock", S_IFSOCK | 0600, 0, &cred, &n), 0);
	inode_put(t.fs, n);
	ck_assert_int_eq(ordfs_mknod(t.fs, root, "dir", S_IFDIR | 0600, 0, &cred, &n), -EINVAL);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	n = lookup(&t, root, "null");
	ck_assert(S_ISCHR(n->d.mode));
	ck_assert_uint_eq(n->d.rdev, makedev(1, 3));
	ck_assert_uint_eq(n->d.uid, 1000);
	inode_put(t.fs, n);
	n = lookup(&t, root, "fifo");
	ck_assert(S_ISFIFO(n->d.mode));
	inode_put(t.fs, n);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_rename_flags)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *a, *b, *f, *sub;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "a", 0755, &cred, &a), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "b", 0755, &cred, &b), 0);
	ck_assert_int_eq(ordfs_create(t.fs, a, "file", 0644, &cred, &f), 0);
	ck_assert_int_eq(ordfs_mkdir(t.fs, b, "sub", 0755, &cred, &sub), 0);

	ck_assert_int_eq(ordfs_rename(t.fs, a, "file", b, "sub", RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "file", b, "none", RENAME_EXCHANGE), -ENOENT);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "file", b, "x",
				      RENAME_EXCHANGE | RENAME_NOREPLACE), -EINVAL);
	/* Exchange a file in a with a directory in b. */
	ck_assert_int_eq(ordfs_rename(t.fs, a, "file", b, "sub", RENAME_EXCHANGE), 0);
	ck_assert_uint_eq(sub->d.parent, a->ino);
	ck_assert_uint_eq(a->d.links, 3);
	ck_assert_uint_eq(b->d.links, 2);
	struct inode *x = lookup(&t, a, "file");
	ck_assert_ptr_eq(x, sub);
	inode_put(t.fs, x);
	x = lookup(&t, b, "sub");
	ck_assert_ptr_eq(x, f);
	inode_put(t.fs, x);
	/* A directory cannot be exchanged into its own subtree. */
	ck_assert_int_eq(ordfs_rename(t.fs, root, "a", a, "file", RENAME_EXCHANGE), -EINVAL);
	ck_assert_int_eq(ordfs_rename(t.fs, a, "file", b, "new", RENAME_NOREPLACE), 0);
	inode_put(t.fs, a);
	inode_put(t.fs, b);
	inode_put(t.fs, f);
	inode_put(t.fs, sub);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_setgid_directory_and_name_limits)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *d, *f, *sub;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "shared", 02775, &cred, &d), 0);
	struct ordfs_setattr sa = { .valid = ORDFS_SET_GID, .gid = 500 };
	ck_assert_int_eq(ordfs_setattr(t.fs, d, &sa), 0);
	sa = (struct ordfs_setattr){ .valid = ORDFS_SET_MODE, .mode = 02775 };
	ck_assert_int_eq(ordfs_setattr(t.fs, d, &sa), 0);
	struct ordfs_cred other = { 2000, 200 };
	ck_assert_int_eq(ordfs_create(t.fs, d, "f", 0644, &other, &f), 0);
	ck_assert_uint_eq(f->d.gid, 500);
	ck_assert_int_eq(ordfs_mkdir(t.fs, d, "sub", 0755, &other, &sub), 0);
	ck_assert_uint_eq(sub->d.gid, 500);
	ck_assert(sub->d.mode & S_ISGID);
	inode_put(t.fs, f);
	inode_put(t.fs, sub);

	char name[300];
	memset(name, 'n', sizeof(name));
	name[255] = '\0';
	ck_assert_int_eq(ordfs_create(t.fs, d, name, 0644, &cred, &f), 0);
	inode_put(t.fs, f);
	f = lookup(&t, d, name);
	inode_put(t.fs, f);
	name[255] = 'n';
	name[256] = '\0';
	ck_assert_int_eq(ordfs_create(t.fs, d, name, 0644, &cred, &f), -ENAMETOOLONG);
	ck_assert_int_eq(ordfs_lookup(t.fs, d, name, &f), -ENAMETOOLONG);
	inode_put(t.fs, d);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

static Suite *namei_suite(void)
{
	Suite *s = suite_create("namei");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hard_links);
	tcase_add_test(tc, test_symlinks_fast_and_long);
	tcase_add_test(tc, test_device_nodes);
	tcase_add_test(tc, test_rename_flags);
	tcase_add_test(tc, test_setgid_directory_and_name_limits);
	tcase_add_test(tc, test_subdir_link_too_low_is_euclean);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(namei_suite());
}
