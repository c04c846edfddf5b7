/*
 * test_check.c - the checker finds what it should: each test damages one
 * structure of a clean image (fixing up checksums where the damage must
 * look valid) and expects the matching problem code; a clean image has no
 * problems.
 */
#include "suite_main.h"
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "check/check.h"

static const struct ordfs_cred cred = { 0, 0 };

struct seen {
	unsigned count[32];
};

static void record(void *ctx, enum check_problem code, const char *msg)
{
	struct seen *s = ctx;
	(void)msg;
	if ((unsigned)code < 32)
		s->count[code]++;
}

static struct seen run_check(struct test_fs *t)
{
	struct seen s;
	memset(&s, 0, sizeof(s));
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = record;
	res.ctx = &s;
	ck_assert_int_eq(ordfs_check(t->mem, &res), 0);
	return s;
}

/* A small clean image: /a (file with data), /d/b (file), and their inode
 * numbers. */
static void make_image(struct test_fs *t, uint32_t *ino_a, uint32_t *ino_d)
{
	tfs_setup(t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(t), *a, *d, *b;
	ck_assert_int_eq(ordfs_create(t->fs, root, "a", 0644, &cred, &a), 0);
	uint8_t buf[20000];
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(ordfs_write(t->fs, a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert_int_eq(ordfs_mkdir(t->fs, root, "d", 0755, &cred, &d), 0);
	ck_assert_int_eq(ordfs_create(t->fs, d, "b", 0644, &cred, &b), 0);
	*ino_a = a->ino;
	*ino_d = d->ino;
	inode_put(t->fs, a);
	inode_put(t->fs, b);
	inode_put(t->fs, d);
	inode_put(t->fs, root);
	tfs_unmount(t);
}

static uint8_t *block_ptr(struct test_fs *t, const struct ordfs_super *sb, uint64_t blk)
{
	return blockdev_mem_bytes(t->mem) + blk * ordfs_block_size(sb);
}

static void read_sb(struct test_fs *t, struct ordfs_super *sb)
{
	const char *why;
	ck_assert_int_eq(ordfs_read_super(t->mem, false, sb, &why), 0);
}

/* Rewrites inode ino through fn with a valid checksum. */
static void edit_inode(struct test_fs *t, uint32_t ino, void (*fn)(struct ordfs_inode *))
{
	struct ordfs_super sb;
	read_sb(t, &sb);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&sb, ino, &blk, &off);
	uint8_t *raw = block_ptr(t, &sb, blk) + off;
	struct ordfs_inode d;
	ck_assert_int_eq(ordfs_inode_decode(raw, ino, sb.csum_seed, &d), 0);
	fn(&d);
	ordfs_inode_encode(&d, ino, sb.csum_seed, raw);
}

START_TEST(test_clean_image_has_no_problems)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	struct seen s = run_check(&t);
	for (int i = 0; i < 32; i++)
		ck_assert_uint_eq(s.count[i], 0);
	tfs_free(&t);
}
END_TEST

static void add_link(struct ordfs_inode *d) { d->links++; }
static void bump_blocks(struct ordfs_inode *d) { d->blocks += 3; }
static void wrong_parent(struct ordfs_inode *d) { d->parent = 7; }

START_TEST(test_finds_wrong_link_count)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	edit_inode(&t, a, add_link);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_LINK_COUNT], 1);
	tfs_free(&t);
}
END_TEST

START_TEST(test_finds_wrong_block_count_and_parent)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	edit_inode(&t, a, bump_blocks);
	edit_inode(&t, d, wrong_parent);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_BLOCK_COUNT], 1);
	ck_assert_uint_ge(s.count[CHK_DIR_PARENT], 1);
	tfs_free(&t);
}
END_TEST

START_TEST(test_finds_used_block_marked_free)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	struct ordfs_super sb;
	read_sb(&t, &sb);
	/* Find a data block in use and clear its bit (with a valid csum). */
	uint8_t *bm = block_ptr(&t, &sb, sb.block_bitmap_start);
	uint64_t victim = sb.data_start;
	while (!((bm[ORDFS_BLOCK_HDR_SIZE + victim / 8] >> (victim % 8)) & 1))
		victim++;
	bm[ORDFS_BLOCK_HDR_SIZE + victim / 8] &= (uint8_t)~(1u << (victim % 8));
	ordfs_block_csum_set(bm, ordfs_block_size(&sb), sb.csum_seed);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_BLOCK_BITMAP], 1);
	tfs_free(&t);
}
END_TEST

START_TEST(test_finds_inode_bitmap_mismatch)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	struct ordfs_super sb;
	read_sb(&t, &sb);
	uint8_t *bm = block_ptr(&t, &sb, sb.inode_bitmap_start);
	uint32_t spare = sb.inode_count - 1; /* last inode: surely free */
	bm[ORDFS_BLOCK_HDR_SIZE + spare / 8] |= (uint8_t)(1u << (spare % 8));
	ordfs_block_csum_set(bm, ordfs_block_size(&sb), sb.csum_seed);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_INODE_BITMAP], 1);
	tfs_free(&t);
}
END_TEST

START_TEST(test_finds_corrupt_inode_and_summary)
{
	struct test_fs t;
	uint32_t a, d;
	make_image(&t, &a, &d);
	struct ordfs_super sb;
	read_sb(&t, &sb);
	sb.free_blocks += 5;
	ordfs_write_super(t.mem, &sb, false);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&sb, a, &blk, &off);
	block_ptr(&t, &sb, blk)[off + 20] ^= 0x40; /* checksum now wrong */
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_SUMMARY], 1);
	ck_assert_uint_eq(s.count[CHK_INODE_CORRUPT], 1);
	tfs_free(&t);
}
END_TEST

START_TEST(test_finds_dirty_journal)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "x", 0644, &cred, &f), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_JOURNAL_NOT_EMPTY], 1);
	/* After replay (a read-write mount) the image checks clean. */
	tfs_mount(&t);
	tfs_unmount_and_check(&t);
}
END_TEST

/* A repair whose check cannot mount the image (here: the journal needs
 * replay, which fsck.ordfs does first) finds nothing it can fix, and
 * changes nothing: its findings were left uninitialized once, and the
 * repair read them. */
START_TEST(test_repair_of_unmountable_image_does_nothing)
{
	struct test_fs t;
	tfs_setup(&t, 16 << 20, 4096, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "x", 0644, &cred, &f), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_crash(&t);
	uint64_t size = t.mem->size;
	uint8_t *before = malloc(size);
	memcpy(before, blockdev_mem_bytes(t.mem), size);
	struct repair_result rep;
	ck_assert_int_eq(ordfs_repair(t.mem, 0, NULL, NULL, &rep), 0);
	ck_assert_uint_eq(rep.fixes, 0);
	ck_assert_uint_eq(rep.problems, 1);
	ck_assert(memcmp(before, blockdev_mem_bytes(t.mem), size) == 0);
	free(before);
	tfs_mount(&t);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- block-bitmap groups past the area (INCOMPAT_GROUP_BITMAPS) ------------ */

/* 1 KiB blocks, 8000 a group: a 4 MiB filesystem grown by hand
 * (tfs_add_groups) to three groups past its one-block area. */
#define GROUPS_PER 8000u
#define GROUPS_COUNT (3u * GROUPS_PER + 500u)
#define GROUP_BITMAP (2u * GROUPS_PER) /* group 2's bitmap block */

/* The grouped image, unmounted, with /a (20 blocks of data, an xattr);
 * a's inode number.  The checker finds nothing. */
static uint32_t make_grouped_image(struct test_fs *t)
{
	tfs_setup_groups(t, 4u << 20, 1024, GROUPS_COUNT);
	struct inode *root = tfs_root(t), *a;
	ck_assert_int_eq(ordfs_create(t->fs, root, "a", 0644, &cred, &a), 0);
	uint8_t buf[20 * 1024];
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(ordfs_write(t->fs, a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert_int_eq(ordfs_setxattr(t->fs, a, "user.note", "v", 1, 0), 0);
	uint32_t ino = a->ino;
	inode_put(t->fs, a);
	inode_put(t->fs, root);
	tfs_unmount(t);
	ck_assert_int_eq(tfs_check_image(t), 0);
	return ino;
}

/* fsck -y: repaired, then clean. */
static void repair_clean(struct test_fs *t)
{
	struct repair_result rep;
	ck_assert_int_eq(ordfs_repair(t->mem, 0, NULL, NULL, &rep), 0);
	ck_assert_uint_gt(rep.fixes, 0);
	ck_assert_uint_eq(rep.problems, 0);
	ck_assert_int_eq(tfs_check_image(t), 0);
}

/* Does the daemon's mount of (a copy of) the image succeed? */
static int mount_copy(struct test_fs *t)
{
	struct blockdev *copy;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t->mem), t->mem->size, &copy), 0);
	struct ordfs *fs;
	const char *why;
	int err = ordfs_mount(copy, &t->opts, &fs, &why);
	if (!err)
		ck_assert_int_eq(ordfs_unmount(fs), 0);
	blockdev_destroy(copy);
	return err;
}

enum group_damage {
	GD_PAYLOAD,  /* a payload byte: the checksum fails */
	GD_BLOCKNO,  /* another block's number, checksum right */
	GD_TYPE,     /* the inode bitmap's type, checksum right */
	GD_ZERO,     /* never written */
	GD_OWN_BIT,  /* its own bit clear, checksum right */
	GD_KINDS
};

/* Each damage of a group bitmap block's header or own bit: the checker
 * finds it, the daemon's mount refuses the image, and repair rewrites the
 * block (header, checksum, bits) so that it checks clean and mounts. */
START_TEST(test_group_bitmap_block_damage_found_and_repaired)
{
	for (int kind = 0; kind < GD_KINDS; kind++) {
		struct test_fs t;
		make_grouped_image(&t);
		struct ordfs_super sb;
		read_sb(&t, &sb);
		uint32_t bs = ordfs_block_size(&sb);
		uint8_t *blk = block_ptr(&t, &sb, GROUP_BITMAP);
		ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), 0);
		switch (kind) {
		case GD_PAYLOAD: blk[ORDFS_BLOCK_HDR_SIZE + 300] ^= 0x10; break;
		case GD_BLOCKNO: le_put64(blk + 16, GROUP_BITMAP + 1); break;
		case GD_TYPE: le_put16(blk + 4, ORDFS_BT_INODE_BITMAP); break;
		case GD_ZERO: memset(blk, 0, bs); break;
		default: ordfs_bitmap_put(blk, 0, false); break;
		}
		if (kind == GD_BLOCKNO || kind == GD_TYPE || kind == GD_OWN_BIT)
			ordfs_block_csum_set(blk, bs, sb.csum_seed);
		ck_assert_int_ne(ordfs_block_bitmap_verify(&sb, 2, blk), 0);
		struct seen s = run_check(&t);
		ck_assert_msg(s.count[CHK_BLOCK_BITMAP] >= 1, "damage %d not found", kind);
		ck_assert_int_eq(mount_copy(&t), -EUCLEAN);
		repair_clean(&t);
		ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), 0);
		ck_assert(ordfs_bitmap_bit(blk, 1) == 0); /* the group's blocks free */
		tfs_mount(&t);
		ck_assert(alloc_block_in_use(t.fs->alloc, GROUP_BITMAP));
		tfs_unmount_and_check(&t);
	}
}
END_TEST

static uint64_t extent_target;
static void extent_onto_target(struct ordfs_inode *d)
{
	le_put64(d->data + ORDFS_EXTENT_NODE_HDR + 8, extent_target); /* record 0's physical */
}

/* A file's extent over a group bitmap block (checksums right): the
 * daemon refuses to read it, the checker finds it, and repair truncates
 * the file, leaving the bitmap block whole and in use. */
START_TEST(test_extent_on_group_bitmap_block_found_and_repaired)
{
	struct test_fs t;
	uint32_t a = make_grouped_image(&t);
	struct ordfs_super sb;
	read_sb(&t, &sb);
	extent_target = GROUP_BITMAP - 5; /* 20 blocks: over GROUP_BITMAP */
	edit_inode(&t, a, extent_onto_target);
	struct seen s = run_check(&t);
	ck_assert_uint_ge(s.count[CHK_EXTENT_TREE] + s.count[CHK_BLOCK_RANGE], 1);

	/* The daemon (on a copy: the image stays as the damage made it): the
	 * file cannot be read, nor written over the bitmap block. */
	struct test_fs copy = t;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t.mem), t.mem->size, &copy.mem), 0);
	ck_assert_int_eq(blockdev_record_create(copy.mem, false, &copy.rec), 0);
	tfs_mount(&copy);
	struct inode *f = tfs_open_file(&copy, "a");
	uint8_t buf[1024];
	memset(buf, 'y', sizeof(buf));
	ck_assert_int_eq(ordfs_read(copy.fs, f, buf, sizeof(buf), 5 * 1024), -EUCLEAN);
	ck_assert_int_lt(ordfs_write(copy.fs, f, buf, sizeof(buf), 5 * 1024), 0);
	inode_put(copy.fs, f);
	(void)ordfs_unmount(copy.fs);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, block_ptr(&copy, &sb, GROUP_BITMAP)), 0);
	tfs_free(&copy);

	repair_clean(&t);
	const uint8_t *blk = block_ptr(&t, &sb, GROUP_BITMAP);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), 0);
	tfs_mount(&t);
	f = tfs_open_file(&t, "a");
	ck_assert_uint_eq(f->d.size, 0);
	inode_put(t.fs, f);
	ck_assert(alloc_block_in_use(t.fs->alloc, GROUP_BITMAP));
	tfs_unmount_and_check(&t);
}
END_TEST

static void xattr_onto_group_bitmap(struct ordfs_inode *d)
{
	d->xattr_block = GROUP_BITMAP;
}

/* An xattr block on a group bitmap block is outside the data area, as
 * one on the area's would be (not a block claimed twice: no inode claimed
 * it); repair drops the attributes and keeps the file and the bitmap. */
START_TEST(test_xattr_on_group_bitmap_block_out_of_range)
{
	struct test_fs t;
	uint32_t a = make_grouped_image(&t);
	struct ordfs_super sb;
	read_sb(&t, &sb);
	edit_inode(&t, a, xattr_onto_group_bitmap);
	struct seen s = run_check(&t);
	ck_assert_uint_eq(s.count[CHK_BLOCK_RANGE], 1);
	ck_assert_uint_eq(s.count[CHK_BLOCK_DUP], 0);
	repair_clean(&t);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, block_ptr(&t, &sb, GROUP_BITMAP)), 0);
	tfs_mount(&t);
	struct inode *f = tfs_open_file(&t, "a");
	ck_assert_uint_eq(f->d.xattr_block, 0);
	ck_assert_uint_eq(f->d.size, 20 * 1024);
	inode_put(t.fs, f);
	tfs_unmount_and_check(&t);
}
END_TEST

/* The geometry of a grouped image, as the mount and the checker see it:
 * without the flag its one bitmap block is too few; a backup superblock
 * on a group bitmap block is refused. */
START_TEST(test_grouped_geometry_refused)
{
	struct test_fs t;
	make_grouped_image(&t);
	struct ordfs_super sb, bad;
	read_sb(&t, &sb);
	bad = sb;
	bad.feature_incompat &= ~ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	ordfs_super_encode(&bad, block_ptr(&t, &sb, 0));
	ck_assert_int_eq(mount_copy(&t), -EUCLEAN);
	ck_assert_uint_eq(run_check(&t).count[CHK_SUPER], 1);
	bad = sb;
	bad.block_count = 3 * GROUPS_PER + 1; /* last block: group 3's bitmap block */
	ordfs_super_encode(&bad, block_ptr(&t, &sb, 0));
	ck_assert_int_eq(mount_copy(&t), -EUCLEAN);
	ck_assert_uint_eq(run_check(&t).count[CHK_SUPER], 1);
	ordfs_super_encode(&sb, block_ptr(&t, &sb, 0));
	ck_assert_int_eq(mount_copy(&t), 0);
	ck_assert_int_eq(tfs_check_image(&t), 0);
	tfs_free(&t);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_clean_image_has_no_problems);
	tcase_add_test(tc, test_finds_wrong_link_count);
	tcase_add_test(tc, test_finds_wrong_block_count_and_parent);
	tcase_add_test(tc, test_finds_used_block_marked_free);
	tcase_add_test(tc, test_finds_inode_bitmap_mismatch);
	tcase_add_test(tc, test_finds_corrupt_inode_and_summary);
	tcase_add_test(tc, test_finds_dirty_journal);
	tcase_add_test(tc, test_repair_of_unmountable_image_does_nothing);
	tcase_add_test(tc, test_group_bitmap_block_damage_found_and_repaired);
	tcase_add_test(tc, test_extent_on_group_bitmap_block_found_and_repaired);
	tcase_add_test(tc, test_xattr_on_group_bitmap_block_out_of_range);
	tcase_add_test(tc, test_grouped_geometry_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(check_suite());
}
