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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(check_suite());
}
