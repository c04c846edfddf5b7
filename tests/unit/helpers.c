/*
 * helpers.c - fixtures shared by the unit tests (see helpers.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "check/check.h"
#include "mkfs/mkfs.h"
#include "super/super.h"

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "checker: [%d] %s\n", (int)code, msg);
}

/* mkfs of fs_size bytes on a new memory device of dev_size bytes. */
static void setup_unmounted(struct test_fs *t, uint64_t dev_size, uint64_t fs_size,
			    uint32_t block_size, uint32_t journal_blocks)
{
	memset(t, 0, sizeof(*t));
	ck_assert_int_eq(blockdev_mem_create(dev_size, &t->mem), 0);
	ck_assert_int_eq(blockdev_record_create(t->mem, false, &t->rec), 0);

	struct mkfs_params p;
	memset(&p, 0, sizeof(p));
	p.size_bytes = fs_size;
	p.block_size = block_size;
	p.journal_blocks = journal_blocks;
	struct ordfs_super sb;
	const char *why = "";
	int err = ordfs_mkfs_plan(&p, dev_size, &sb, &why);
	ck_assert_msg(err == 0, "mkfs plan: %s", why);
	err = ordfs_mkfs_write(t->rec, &sb, &why);
	ck_assert_msg(err == 0, "mkfs write: %s (%d)", why, err);

	ordfs_options_default(&t->opts);
	t->opts.commit_interval_ms = 0; /* commits only when a test asks */
}

void tfs_setup(struct test_fs *t, uint64_t size, uint32_t block_size,
	       uint32_t journal_blocks)
{
	setup_unmounted(t, size, size, block_size, journal_blocks);
	tfs_mount(t);
}

/* The area's bitmap blocks of the groups holding [from, to): those bits
 * cleared (checksum recomputed). */
static int clear_area_bits(struct blockdev *bd, const struct ordfs_super *sb, uint8_t *blk,
			   uint64_t from, uint64_t to)
{
	uint32_t bs = ordfs_block_size(sb);
	uint64_t per = ordfs_bits_per_bitmap_block(bs);
	int err = 0;
	for (uint64_t g = from / per; g * per < to && !err; g++) {
		uint64_t blockno = sb->block_bitmap_start + g;
		err = blockdev_read(bd, blk, bs, blockno * bs);
		if (!err)
			err = ordfs_block_verify(blk, bs, sb->csum_seed, ORDFS_BT_BLOCK_BITMAP,
						 blockno);
		for (uint64_t b = from > g * per ? from : g * per; !err && b < to && b < (g + 1) * per;
		     b++)
			ordfs_bitmap_put(blk, (uint32_t)(b - g * per), false);
		if (!err) {
			ordfs_block_csum_set(blk, bs, sb->csum_seed);
			err = blockdev_write(bd, blk, bs, blockno * bs);
		}
	}
	return err;
}

int tfs_add_groups(struct blockdev *bd, uint64_t new_count)
{
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (err)
		return err;
	uint32_t bs = ordfs_block_size(&sb);
	uint64_t per = ordfs_bits_per_bitmap_block(bs);
	uint64_t old_count = sb.block_count;
	uint64_t area_bits = (uint64_t)sb.block_bitmap_blocks * per;
	if ((sb.feature_incompat & (ORDFS_FEATURE_INCOMPAT_RECOVER |
				    ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS)) ||
	    !(sb.state & ORDFS_STATE_CLEAN) || new_count <= area_bits ||
	    new_count > bd->size / bs || (new_count - 1) % per == 0)
		return -EINVAL;
	uint8_t *blk = malloc(bs);
	if (!blk)
		return -ENOMEM;
	/* The old backup and the bits "past the end" of the area: free now. */
	err = clear_area_bits(bd, &sb, blk, old_count - 1, area_bits);
	/* Each group past the area: its bitmap block in its first block. */
	uint64_t groups = (new_count + per - 1) / per;
	for (uint64_t g = sb.block_bitmap_blocks; g < groups && !err; g++) {
		memset(blk, 0, bs);
		ordfs_block_hdr_init(blk, ORDFS_BT_BLOCK_BITMAP, 0, g * per);
		ordfs_bitmap_put(blk, 0, true);
		for (uint64_t b = g * per; b < (g + 1) * per; b++)
			if (b >= new_count - 1) /* the backup, and past the end */
				ordfs_bitmap_put(blk, (uint32_t)(b - g * per), true);
		ordfs_block_csum_set(blk, bs, sb.csum_seed);
		err = blockdev_write(bd, blk, bs, g * per * bs);
	}
	free(blk);
	if (!err)
		err = blockdev_flush(bd);
	if (err)
		return err;
	sb.block_count = new_count;
	sb.feature_incompat |= ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	sb.free_blocks += (new_count - old_count) - (groups - sb.block_bitmap_blocks);
	if (ordfs_super_check_geometry(&sb, &why))
		return -EINVAL;
	err = ordfs_write_super(bd, &sb, true);
	return err ? err : blockdev_flush(bd);
}

void tfs_setup_groups(struct test_fs *t, uint64_t old_size, uint32_t block_size,
		      uint64_t new_count)
{
	setup_unmounted(t, new_count * block_size, old_size, block_size, 0);
	ck_assert_int_eq(tfs_add_groups(t->rec, new_count), 0);
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

struct check_result tfs_check_dev(struct blockdev *bd)
{
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	ck_assert_int_eq(ordfs_check(bd, &res), 0);
	return res;
}

int tfs_check_image(struct test_fs *t)
{
	return (int)tfs_check_dev(t->mem).problems;
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
