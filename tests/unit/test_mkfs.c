/*
 * test_mkfs.c - the mkfs library: the geometry it plans and the image it
 * writes.
 *
 * Plans are checked against the format's own rules (ordfs_super_check_
 * geometry, the contiguous layout) and against mke2fs-like defaults.  Written
 * images are read back byte by byte (superblocks, bitmaps, journal
 * superblock, root inode), mounted with the real mount path, and run through
 * the checker.  The write order is checked on a recording device: no
 * superblock before the metadata areas are durable, and a mkfs that fails
 * half way never leaves a valid-looking superblock.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "check/check.h"
#include "mkfs/mkfs.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void params_default(struct mkfs_params *p)
{
	memset(p, 0, sizeof(*p));
}

static void plan_ok(const struct mkfs_params *p, uint64_t bytes, struct ordfs_super *sb)
{
	const char *why = "";
	int err = ordfs_mkfs_plan(p, bytes, sb, &why);
	ck_assert_msg(err == 0, "plan of %llu bytes failed: %s", (unsigned long long)bytes, why);
}

static void plan_refused(const struct mkfs_params *p, uint64_t bytes)
{
	struct ordfs_super sb;
	const char *why = NULL;
	int err = ordfs_mkfs_plan(p, bytes, &sb, &why);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_nonnull(why);
	ck_assert_uint_gt(strlen(why), 5);
}

/* Everything a plan must satisfy whatever its size. */
static void assert_plan_sane(const struct ordfs_super *sb, uint64_t bytes, uint32_t bs)
{
	const char *why = "";
	ck_assert_msg(ordfs_super_check_geometry(sb, &why) == 0, "geometry: %s", why);
	ck_assert_uint_eq(ordfs_block_size(sb), bs);
	ck_assert_uint_eq(sb->block_count, bytes / bs);
	ck_assert_uint_eq(sb->magic, ORDFS_SB_MAGIC);
	ck_assert_uint_eq(sb->version, ORDFS_VERSION);
	ck_assert_uint_eq(sb->feature_compat | sb->feature_incompat | sb->feature_ro_compat, 0);
	ck_assert_uint_eq(sb->state, ORDFS_STATE_CLEAN);
	ck_assert_uint_ge(sb->errors, ORDFS_ERRORS_CONTINUE);
	ck_assert_uint_le(sb->errors, ORDFS_ERRORS_ABORT);
	ck_assert_uint_eq(sb->orphan_head, 0);

	/* Contiguous: journal at 1, then the bitmaps, the inode table, data. */
	ck_assert_uint_eq(sb->journal_start, 1);
	ck_assert_uint_eq(sb->block_bitmap_start, 1 + sb->journal_blocks);
	ck_assert_uint_eq(sb->inode_bitmap_start, sb->block_bitmap_start + sb->block_bitmap_blocks);
	ck_assert_uint_eq(sb->inode_table_start, sb->inode_bitmap_start + sb->inode_bitmap_blocks);
	ck_assert_uint_eq(sb->data_start, sb->inode_table_start + sb->inode_table_blocks);
	ck_assert_uint_lt(sb->data_start + 16, sb->block_count);

	/* The journal: at least the minimum, at most a quarter unless the
	 * minimum itself is more. */
	ck_assert_uint_ge(sb->journal_blocks, ORDFS_MIN_JOURNAL_BLOCKS);
	if (sb->journal_blocks > ORDFS_MIN_JOURNAL_BLOCKS)
		ck_assert_uint_le(sb->journal_blocks, sb->block_count / 4);

	/* Inodes fill whole inode table blocks. */
	ck_assert_uint_ge(sb->inode_count, 16);
	ck_assert_uint_eq((uint64_t)sb->inode_count * ORDFS_INODE_SIZE,
			  (uint64_t)sb->inode_table_blocks * bs);

	/* Free counts: all data blocks, all inodes but 1 and 2. */
	ck_assert_uint_eq(sb->free_blocks, sb->block_count - sb->data_start - 1);
	ck_assert_uint_eq(sb->free_inodes, sb->inode_count - 2);
	ck_assert_uint_eq(sb->csum_seed, ordfs_crc32c(~0u, sb->uuid, ORDFS_UUID_LEN));
	ck_assert_uint_ne(sb->mkfs_time, 0);

	/* What is planned survives the on-disk encoding. */
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super back;
	ordfs_super_encode(sb, raw);
	ck_assert_msg(ordfs_super_decode(raw, &back, &why) == 0, "decode: %s", why);
	ck_assert_uint_eq(back.data_start, sb->data_start);
	ck_assert_mem_eq(back.uuid, sb->uuid, ORDFS_UUID_LEN);
}

START_TEST(test_plan_geometry_many_sizes)
{
	static const struct {
		uint64_t bytes;
		uint32_t bs;
	} cases[] = {
		{ 256 * KiB, 1024 }, { 1 * MiB, 4096 },  { 8 * MiB, 65536 }, { 16 * MiB, 1024 },
		{ 64 * MiB, 4096 },  { 100 * MiB + 123, 4096 }, { 1 * GiB, 2048 },
		{ 3 * GiB, 8192 },   { 16 * GiB, 4096 }, { 1024 * GiB, 4096 },
		{ 1024 * GiB, 65536 }, { 64 * GiB, 1024 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mkfs_params p;
		struct ordfs_super sb;
		params_default(&p);
		p.block_size = cases[i].bs;
		plan_ok(&p, cases[i].bytes, &sb);
		assert_plan_sane(&sb, cases[i].bytes, cases[i].bs);
	}
}
END_TEST

START_TEST(test_plan_defaults_like_mke2fs)
{
	struct mkfs_params p;
	struct ordfs_super sb;
	params_default(&p);

	plan_ok(&p, 64 * MiB, &sb); /* 16384 blocks of 4 KiB */
	ck_assert_uint_eq(ordfs_block_size(&sb), 4096);
	ck_assert_uint_eq(sb.errors, ORDFS_ERRORS_CONTINUE);
	ck_assert_str_eq(sb.label, "");
	ck_assert_uint_eq(sb.journal_blocks, 1024);
	ck_assert_uint_eq(sb.inode_count, 64 * MiB / 16384);

	plan_ok(&p, 512 * MiB, &sb); /* 131072 blocks */
	ck_assert_uint_eq(sb.journal_blocks, 4096);
	plan_ok(&p, 1 * GiB, &sb); /* 262144 blocks */
	ck_assert_uint_eq(sb.journal_blocks, 8192);
	plan_ok(&p, 8 * GiB, &sb); /* 2Mi blocks */
	ck_assert_uint_eq(sb.journal_blocks, 16384);
	plan_ok(&p, 16 * GiB, &sb); /* 4Mi blocks */
	ck_assert_uint_eq(sb.journal_blocks, 32768);

	/* Small images: a quarter of the image, but never below the minimum. */
	plan_ok(&p, 2 * MiB, &sb); /* 512 blocks */
	ck_assert_uint_eq(sb.journal_blocks, 128);
	plan_ok(&p, 1 * MiB, &sb); /* 256 blocks */
	ck_assert_uint_eq(sb.journal_blocks, ORDFS_MIN_JOURNAL_BLOCKS);

	/* Tiny images still get at least 16 inodes. */
	ck_assert_uint_ge(sb.inode_count, 16);
}
END_TEST

START_TEST(test_plan_explicit_values_kept)
{
	struct mkfs_params p;
	struct ordfs_super sb;
	params_default(&p);
	p.block_size = 1024;
	p.journal_blocks = 777;
	p.inode_count = 1001; /* rounded up to fill the last table block */
	p.errors = ORDFS_ERRORS_ABORT;
	strcpy(p.label, "exactly-thirty-two-bytes-long-xx");
	strcpy(p.mount_opts, "data=writeback,noatime,commit=30");
	plan_ok(&p, 32 * MiB, &sb);
	assert_plan_sane(&sb, 32 * MiB, 1024);
	ck_assert_uint_eq(sb.journal_blocks, 777);
	ck_assert_uint_eq(sb.inode_count, 1004); /* 4 inodes per 1 KiB block */
	ck_assert_uint_eq(sb.errors, ORDFS_ERRORS_ABORT);
	ck_assert_str_eq(sb.label, "exactly-thirty-two-bytes-long-xx");
	ck_assert_str_eq(sb.mount_opts, "data=writeback,noatime,commit=30");

	/* size_bytes smaller than the device: the filesystem uses only that. */
	params_default(&p);
	p.size_bytes = 10 * MiB;
	plan_ok(&p, 50 * MiB, &sb);
	ck_assert_uint_eq(sb.block_count, 10 * MiB / 4096);
}
END_TEST

START_TEST(test_plan_uuid_given_is_reproducible)
{
	struct mkfs_params p;
	struct ordfs_super a, b;
	params_default(&p);
	for (unsigned i = 0; i < ORDFS_UUID_LEN; i++)
		p.uuid[i] = (uint8_t)(0x11 * i + 3);
	p.uuid_set = true;
	plan_ok(&p, 64 * MiB, &a);
	plan_ok(&p, 64 * MiB, &b);
	ck_assert_mem_eq(a.uuid, p.uuid, ORDFS_UUID_LEN);
	ck_assert_uint_eq(a.hash_seed, b.hash_seed);
	ck_assert_uint_eq(a.csum_seed, b.csum_seed);

	/* Without a UUID: random, RFC 4122 version 4, different every time. */
	params_default(&p);
	plan_ok(&p, 64 * MiB, &a);
	plan_ok(&p, 64 * MiB, &b);
	ck_assert_int_ne(memcmp(a.uuid, b.uuid, ORDFS_UUID_LEN), 0);
	ck_assert_uint_ne(a.csum_seed, b.csum_seed);
	ck_assert_uint_eq(a.uuid[6] >> 4, 4);
	ck_assert_uint_eq(a.uuid[8] >> 6, 2);
}
END_TEST

START_TEST(test_plan_refuses_bad_input)
{
	struct mkfs_params p;
	params_default(&p);

	/* Too small: fewer than 64 blocks, or no room once the journal is in. */
	plan_refused(&p, 0);
	plan_refused(&p, 63 * 4096);
	plan_refused(&p, 64 * 4096);
	p.block_size = 1024;
	plan_refused(&p, 64 * KiB);
	p.block_size = 65536;
	plan_refused(&p, 4 * MiB);

	/* Block sizes: powers of two from 1 KiB to 64 KiB only. */
	static const uint32_t bad_bs[] = { 512, 1000, 3000, 4095, 131072, 1u << 31 };
	for (size_t i = 0; i < sizeof(bad_bs) / sizeof(bad_bs[0]); i++) {
		p.block_size = bad_bs[i];
		plan_refused(&p, 64 * MiB);
	}

	/* Journal: below the minimum, or too big for the image. */
	params_default(&p);
	p.journal_blocks = ORDFS_MIN_JOURNAL_BLOCKS - 1;
	plan_refused(&p, 64 * MiB);
	p.journal_blocks = 64 * MiB / 4096;
	plan_refused(&p, 64 * MiB);

	/* Inodes: too few, or a table that cannot fit. */
	params_default(&p);
	p.inode_count = 3;
	plan_refused(&p, 64 * MiB);
	p.inode_count = 0xffffffffu;
	plan_refused(&p, 64 * MiB);

	/* Strings without room for their NUL, unknown errors=, size > device. */
	params_default(&p);
	memset(p.label, 'x', sizeof(p.label));
	plan_refused(&p, 64 * MiB);
	params_default(&p);
	memset(p.mount_opts, 'x', sizeof(p.mount_opts));
	plan_refused(&p, 64 * MiB);
	params_default(&p);
	p.errors = 9;
	plan_refused(&p, 64 * MiB);
	params_default(&p);
	p.size_bytes = 65 * MiB;
	plan_refused(&p, 64 * MiB);
}
END_TEST

/* ---- written images ------------------------------------------------------ */

struct image {
	struct blockdev *mem;
	struct ordfs_super sb; /* as planned */
	uint32_t bs;
};

static void image_make(struct image *im, uint64_t bytes, uint32_t bs)
{
	struct mkfs_params p;
	const char *why = "";
	params_default(&p);
	p.block_size = bs;
	strcpy(p.label, "unit");
	ck_assert_int_eq(blockdev_mem_create(bytes, &im->mem), 0);
	plan_ok(&p, bytes, &im->sb);
	int err = ordfs_mkfs_write(im->mem, &im->sb, &why);
	ck_assert_msg(err == 0, "mkfs write: %s (%d)", why, err);
	im->bs = bs;
}

static const uint8_t *image_block(const struct image *im, uint64_t blockno)
{
	return blockdev_mem_bytes(im->mem) + blockno * im->bs;
}

static bool bitmap_bit(const uint8_t *blk, uint64_t bit)
{
	return (blk[ORDFS_BLOCK_HDR_SIZE + bit / 8] >> (bit % 8)) & 1;
}

/* Every bitmap block verifies; returns the number of bits set among the
 * first `nbits` and asserts every bit past them is set. */
static uint64_t check_bitmap(const struct image *im, uint64_t start, uint32_t nblocks,
			     enum ordfs_block_type type, uint64_t nbits, const uint8_t **blocks)
{
	uint64_t per = ordfs_bits_per_bitmap_block(im->bs), set = 0;
	for (uint32_t i = 0; i < nblocks; i++) {
		const uint8_t *blk = image_block(im, start + i);
		ck_assert_int_eq(ordfs_block_verify(blk, im->bs, im->sb.csum_seed, type, start + i),
				 0);
		ck_assert_uint_eq(ordfs_block_owner(blk), 0);
		blocks[i] = blk;
		for (uint64_t b = 0; b < per; b++) {
			uint64_t n = i * per + b;
			if (n < nbits)
				set += bitmap_bit(blk, b);
			else
				ck_assert_msg(bitmap_bit(blk, b), "bit %llu past the end is clear",
					      (unsigned long long)n);
		}
	}
	return set;
}

static bool block_marked(const struct image *im, uint64_t blockno)
{
	uint64_t per = ordfs_bits_per_bitmap_block(im->bs);
	const uint8_t *blk = image_block(im, im->sb.block_bitmap_start + blockno / per);
	return bitmap_bit(blk, blockno % per);
}

static void check_written_image(const struct image *im)
{
	const struct ordfs_super *plan = &im->sb;
	struct ordfs_super sb, backup;
	const char *why = "";

	/* Primary and backup superblocks: valid and identical. */
	ck_assert_msg(ordfs_read_super(im->mem, false, &sb, &why) == 0, "primary: %s", why);
	ck_assert_msg(ordfs_read_super(im->mem, true, &backup, &why) == 0, "backup: %s", why);
	ck_assert_mem_eq(image_block(im, 0), image_block(im, plan->block_count - 1), ORDFS_SB_SIZE);
	ck_assert_mem_eq(sb.uuid, plan->uuid, ORDFS_UUID_LEN);
	ck_assert_uint_eq(sb.data_start, plan->data_start);
	ck_assert_str_eq(sb.label, "unit");
	ck_assert(sb.state & ORDFS_STATE_CLEAN);
	ck_assert_uint_eq(sb.feature_incompat, 0);

	/* Block bitmap: every metadata block and the backup in use. */
	const uint8_t **blocks = calloc(plan->block_bitmap_blocks + plan->inode_bitmap_blocks,
					sizeof(*blocks));
	ck_assert_ptr_nonnull(blocks);
	uint64_t used = check_bitmap(im, plan->block_bitmap_start, plan->block_bitmap_blocks,
				     ORDFS_BT_BLOCK_BITMAP, plan->block_count, blocks);
	for (uint64_t b = 0; b < plan->data_start; b++)
		ck_assert_msg(block_marked(im, b), "metadata block %llu free",
			      (unsigned long long)b);
	ck_assert(block_marked(im, plan->block_count - 1));
	ck_assert_uint_eq(plan->block_count - used, sb.free_blocks);

	/* Inode bitmap: 1, 2 and lost+found in use. */
	uint64_t iused = check_bitmap(im, plan->inode_bitmap_start, plan->inode_bitmap_blocks,
				      ORDFS_BT_INODE_BITMAP, plan->inode_count, blocks);
	ck_assert(bitmap_bit(image_block(im, plan->inode_bitmap_start), 0));
	ck_assert(bitmap_bit(image_block(im, plan->inode_bitmap_start), 1));
	ck_assert_uint_eq(iused, 3);
	ck_assert_uint_eq(sb.free_inodes, plan->inode_count - 3);
	free(blocks);

	/* Journal superblock: empty log, this filesystem's UUID. */
	struct ordfs_journal_super js;
	ck_assert_msg(ordfs_journal_super_decode(image_block(im, 1), im->bs, sb.csum_seed, &js,
						 &why) == 0,
		      "journal sb: %s", why);
	ck_assert_uint_eq(js.start, 0);
	ck_assert_uint_eq(js.first, 1);
	ck_assert_uint_eq(js.total_blocks, plan->journal_blocks);
	ck_assert_int_eq(js.err, 0);
	ck_assert_mem_eq(js.uuid, plan->uuid, ORDFS_UUID_LEN);

	/* Inode 1 is an empty reserved slot. */
	uint64_t iblk;
	uint32_t ioff;
	ordfs_inode_location(&sb, 1, &iblk, &ioff);
	static const uint8_t zero[ORDFS_INODE_SIZE];
	ck_assert_mem_eq(image_block(im, iblk) + ioff, zero, ORDFS_INODE_SIZE);
}

/* Mounts the image: the root holds lost+found, mode 0700, parent root. */
static void check_mounted_image(const struct image *im)
{
	struct ordfs_options opts;
	struct ordfs *fs;
	struct inode *root, *lf;
	const char *why = "";

	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	ck_assert_msg(ordfs_mount(im->mem, &opts, &fs, &why) == 0, "mount: %s", why);
	ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
	ck_assert(S_ISDIR(root->d.mode));
	ck_assert_uint_eq(root->d.mode & 07777, 0755);
	ck_assert_uint_eq(root->d.uid, 0);
	ck_assert_uint_eq(root->d.parent, ORDFS_ROOT_INO);
	ck_assert_uint_eq(root->d.links, 3);
	ck_assert_int_eq(ordfs_lookup(fs, root, "lost+found", &lf), 0);
	ck_assert(S_ISDIR(lf->d.mode));
	ck_assert_uint_eq(lf->d.mode & 07777, 0700);
	ck_assert_uint_eq(lf->d.parent, ORDFS_ROOT_INO);
	ck_assert_uint_eq(lf->d.links, 2);
	struct inode *none = NULL;
	ck_assert_int_eq(ordfs_lookup(fs, root, "nothing-else", &none), -ENOENT);
	inode_put(fs, lf);
	inode_put(fs, root);
	ck_assert_int_eq(ordfs_unmount(fs), 0);
}

static void check_with_checker(const struct image *im)
{
	struct check_result res;
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(ordfs_check(im->mem, &res), 0);
	ck_assert_uint_eq(res.problems, 0);
	ck_assert_uint_eq(res.dirs, 2);
}

START_TEST(test_write_image_block_sizes)
{
	static const struct {
		uint64_t bytes;
		uint32_t bs;
	} cases[] = {
		{ 2 * MiB, 1024 }, { 16 * MiB, 4096 }, { 64 * MiB, 65536 }, { 40 * MiB + 4096, 4096 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct image im;
		image_make(&im, cases[i].bytes, cases[i].bs);
		check_written_image(&im);
		check_mounted_image(&im);
		check_with_checker(&im);
		blockdev_destroy(im.mem);
	}
}
END_TEST

START_TEST(test_write_refuses_small_device)
{
	struct mkfs_params p;
	struct ordfs_super sb;
	struct blockdev *bd;
	const char *why = NULL;
	params_default(&p);
	plan_ok(&p, 32 * MiB, &sb);
	ck_assert_int_eq(blockdev_mem_create(16 * MiB, &bd), 0);
	ck_assert_int_eq(ordfs_mkfs_write(bd, &sb, &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
	/* Nothing was written. */
	const uint8_t *bytes = blockdev_mem_bytes(bd);
	for (uint64_t i = 0; i < 16 * MiB; i += 512)
		ck_assert_uint_eq(bytes[i], 0);
	blockdev_destroy(bd);
}
END_TEST

static bool is_super_write(const struct blockdev_event *ev)
{
	return ev->type == BD_EV_WRITE && ev->off == 0 && ev->len >= 4 &&
	       le_get32(ev->data) == ORDFS_SB_MAGIC;
}

/* The old superblocks go first, the new one only after the metadata areas
 * are written in full and flushed. */
START_TEST(test_write_order_superblock_last)
{
	struct blockdev *mem, *rec;
	struct mkfs_params p;
	struct ordfs_super sb;
	const char *why = "";
	params_default(&p);
	ck_assert_int_eq(blockdev_mem_create(16 * MiB, &mem), 0);
	ck_assert_int_eq(blockdev_record_create(mem, true, &rec), 0);
	plan_ok(&p, 16 * MiB, &sb);
	ck_assert_int_eq(ordfs_mkfs_write(rec, &sb, &why), 0);

	size_t n;
	const struct blockdev_event *ev = blockdev_record_events(rec, &n);
	uint32_t bs = ordfs_block_size(&sb);
	size_t first_sb = n;
	for (size_t i = 0; i < n && first_sb == n; i++)
		if (is_super_write(&ev[i]))
			first_sb = i;
	ck_assert_uint_lt(first_sb, n);

	/* Block 0 is zeroed before any metadata area is written. */
	ck_assert(ev[0].type == BD_EV_WRITE && ev[0].off == 0);
	ck_assert(!is_super_write(&ev[0]));

	uint8_t *covered = calloc(sb.data_start, 1);
	ck_assert_ptr_nonnull(covered);
	size_t last_meta = 0, flush_after = n;
	for (size_t i = 0; i < first_sb; i++) {
		if (ev[i].type == BD_EV_FLUSH) {
			if (i > last_meta)
				flush_after = i;
			continue;
		}
		for (uint64_t off = ev[i].off; off < ev[i].off + ev[i].len; off += bs)
			if (off / bs >= 1 && off / bs < sb.data_start) {
				covered[off / bs] = 1;
				last_meta = i;
				flush_after = n;
			}
	}
	for (uint64_t b = 1; b < sb.data_start; b++)
		ck_assert_msg(covered[b], "metadata block %llu not written before the superblock",
			      (unsigned long long)b);
	ck_assert_msg(flush_after < first_sb, "no flush between the metadata and the superblock");
	free(covered);
	blockdev_destroy(rec);
	blockdev_destroy(mem);
}
END_TEST

/* A mkfs over an existing ordfs that fails at any write or flush leaves no
 * valid primary superblock behind (except when it failed before changing
 * anything at all). */
START_TEST(test_failed_write_leaves_no_valid_super)
{
	for (uint64_t nth = 1; nth < 64; nth++) {
		for (int kind = 0; kind < 2; kind++) {
			struct image im;
			struct blockdev *rec;
			struct ordfs_super sb, old;
			const char *why = "";
			image_make(&im, 8 * MiB, 4096);
			ck_assert_int_eq(blockdev_record_create(im.mem, false, &rec), 0);
			if (kind == 0)
				blockdev_record_fail_write(rec, nth, -EIO);
			else
				blockdev_record_fail_flush(rec, nth, -EIO);
			struct mkfs_params p;
			params_default(&p);
			plan_ok(&p, 8 * MiB, &sb);
			int err = ordfs_mkfs_write(rec, &sb, &why);
			if (err == 0) {
				/* Failure point past the end: the new image is whole. */
				ck_assert_int_eq(ordfs_read_super(im.mem, false, &old, &why), 0);
				ck_assert_mem_eq(old.uuid, sb.uuid, ORDFS_UUID_LEN);
			} else {
				ck_assert_int_lt(err, 0);
				ck_assert_ptr_nonnull(why);
				int rerr = ordfs_read_super(im.mem, false, &old, &why);
				bool untouched = kind == 0 && nth == 1;
				if (untouched)
					ck_assert_int_eq(rerr, 0);
				else if (rerr == 0)
					/* A valid superblock after a failure is only allowed if
					 * it is the new one, written complete before the
					 * failure (lost+found's mount onwards). */
					ck_assert_mem_eq(old.uuid, sb.uuid, ORDFS_UUID_LEN);
			}
			blockdev_destroy(rec);
			blockdev_destroy(im.mem);
		}
	}
}
END_TEST

static Suite *mkfs_suite(void)
{
	Suite *s = suite_create("mkfs");
	TCase *plan = tcase_create("plan");
	tcase_add_test(plan, test_plan_geometry_many_sizes);
	tcase_add_test(plan, test_plan_defaults_like_mke2fs);
	tcase_add_test(plan, test_plan_explicit_values_kept);
	tcase_add_test(plan, test_plan_uuid_given_is_reproducible);
	tcase_add_test(plan, test_plan_refuses_bad_input);
	suite_add_tcase(s, plan);

	TCase *write = tcase_create("write");
	tcase_set_timeout(write, 120);
	tcase_add_test(write, test_write_image_block_sizes);
	tcase_add_test(write, test_write_refuses_small_device);
	tcase_add_test(write, test_write_order_superblock_last);
	tcase_add_test(write, test_failed_write_leaves_no_valid_super);
	suite_add_tcase(s, write);
	return s;
}

int main(void)
{
	return run_suite(mkfs_suite());
}
