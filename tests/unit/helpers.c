/*
 * helpers.c - fixtures shared by the unit tests (see helpers.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "check/check.h"
#include "mkfs/mkfs.h"

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "checker: [%d] %s\n", (int)code, msg);
}

void tfs_setup(struct test_fs *t, uint64_t size, uint32_t block_size,
	       uint32_t journal_blocks)
{
	memset(t, 0, sizeof(*t));
	ck_assert_int_eq(blockdev_mem_create(size, &t->mem), 0);
	ck_assert_int_eq(blockdev_record_create(t->mem, false, &t->rec), 0);

	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.block_size = block_size;
	p.journal_blocks = journal_blocks;
	struct ordfs_super sb;
	const char *why = "";
	int err = ordfs_mkfs_plan(&p, size, &sb, &why);
	ck_assert_msg(err == 0, "mkfs plan: %s", why);
	err = ordfs_mkfs_write(t->rec, &sb, &why);
	ck_assert_msg(err == 0, "mkfs write: %s (%d)", why, err);

	ordfs_options_default(&t->opts);
	t->opts.commit_interval_ms = 0; /* commits only when a test asks */
	tfs_mount(t);
}

void tfs_mount(struct test_fs *t)
{
	const char *why = "";
	int err = ordfs_mount(t->rec, &t->opts, &t->fs, &why);
	ck_assert_msg(err == 0, "mount: %s (%d)", why, err);
}

void tfs_unmount(struct test_fs *t)
{
	int err = ordfs_unmount(t->fs);
	t->fs = NULL;
	ck_assert_int_eq(err, 0);
}

int tfs_check_image(struct test_fs *t)
{
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	int err = ordfs_check(t->mem, &res);
	ck_assert_int_eq(err, 0);
	return (int)res.problems;
}

void tfs_free(struct test_fs *t)
{
	blockdev_destroy(t->rec);
	blockdev_destroy(t->mem);
	t->rec = t->mem = NULL;
}

void tfs_unmount_and_check(struct test_fs *t)
{
	if (t->fs)
		tfs_unmount(t);
	int problems = tfs_check_image(t);
	ck_assert_msg(problems == 0, "checker found %d problems", problems);
	tfs_free(t);
}

/* A crash: the image keeps exactly the bytes written so far.  We snapshot
 * them, let the abandoned filesystem shut down against the old device
 * (whatever it writes there is thrown away) and carry on with the
 * snapshot. */
void tfs_crash(struct test_fs *t)
{
	struct blockdev *snapshot;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t->mem), t->mem->size, &snapshot),
			 0);
	if (t->fs)
		(void)ordfs_unmount(t->fs);
	t->fs = NULL;
	blockdev_destroy(t->rec);
	blockdev_destroy(t->mem);
	t->mem = snapshot;
	ck_assert_int_eq(blockdev_record_create(t->mem, false, &t->rec), 0);
}

struct handle *tfs_start(struct test_fs *t, uint32_t credits)
{
	struct handle *h;
	ck_assert_int_eq(journal_start(t->fs->journal, credits, &h), 0);
	return h;
}

void tfs_stop(struct handle *h)
{
	ck_assert_int_eq(journal_stop(h), 0);
}

struct inode *tfs_root(struct test_fs *t)
{
	struct inode *root;
	ck_assert_int_eq(inode_get(t->fs, ORDFS_ROOT_INO, &root), 0);
	return root;
}

unsigned tfs_sweep_stride(void)
{
	const char *s = getenv("ORDFS_TEST_SWEEP_STRIDE");
	int n = s ? atoi(s) : 1;
	return n > 0 ? (unsigned)n : 1;
}

static const struct ordfs_cred tfs_root_cred = { 0, 0 };

struct inode *tfs_create_file(struct test_fs *t, const char *name)
{
	struct inode *root = tfs_root(t), *f;
	ck_assert_int_eq(ordfs_create(t->fs, root, name, 0644, &tfs_root_cred, &f), 0);
	inode_put(t->fs, root);
	return f;
}

struct inode *tfs_open_file(struct test_fs *t, const char *name)
{
	struct inode *root = tfs_root(t), *f;
	ck_assert_int_eq(ordfs_lookup(t->fs, root, name, &f), 0);
	inode_put(t->fs, root);
	return f;
}

void tfs_fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 31 + seed * 7) ^ (i >> 9) ^ 0x5a);
}
