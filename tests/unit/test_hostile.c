/*
 * test_hostile.c - damaged and hostile images: the checker, journal
 * replay, and read-write and read-only mounts must never crash, hang or
 * read out of bounds (this runs under ASan/UBSan too), whatever the
 * corruption tool did to the image; and damage that the format can always
 * detect (a failed checksum, a zeroed directory block, a used block marked
 * free, a wrong link count) must be reported by the checker or refused by
 * the mount.
 *
 * Each kind of damage is applied with ORDFS_HOSTILE_SEEDS seeds (default
 * 12) to a populated image: a directory big enough for an index, a file
 * with an extent tree, fast and long symlinks, hard links, xattrs; the
 * journal kinds to an image left with transactions in its log.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "corrupt.h"
#include "check/check.h"

#define IMG (16ull << 20)

static const struct ordfs_cred root_cred = { 0, 0 };

static unsigned seeds(void)
{
	const char *s = getenv("ORDFS_HOSTILE_SEEDS");
	return s && atoi(s) > 0 ? (unsigned)atoi(s) : 12;
}

static void populate(struct test_fs *t, bool leave_log)
{
	struct inode *root = tfs_root(t), *dir, *f;
	ck_assert_int_eq(ordfs_mkdir(t->fs, root, "big", 0755, &root_cred, &dir), 0);
	for (int i = 0; i < 120; i++) {
		char name[40];
		snprintf(name, sizeof(name), "entry-with-a-longish-name-%03d", i);
		ck_assert_int_eq(ordfs_create(t->fs, dir, name, 0644, &root_cred, &f), 0);
		ck_assert_int_eq(ordfs_write(t->fs, f, name, strlen(name), 0), (ssize_t)strlen(name));
		if (i % 40 == 0)
			ck_assert_int_eq(ordfs_setxattr(t->fs, f, "user.k", "v", 1, 0), 0);
		if (i % 30 == 0)
			ck_assert_int_eq(ordfs_link(t->fs, f, root, name), 0);
		inode_put(t->fs, f);
	}
	/* Every other block written: more extents than the inode holds. */
	ck_assert_int_eq(ordfs_create(t->fs, root, "sparse", 0644, &root_cred, &f), 0);
	uint8_t blk[4096];
	memset(blk, 0x5a, sizeof(blk));
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(ordfs_write(t->fs, f, blk, sizeof(blk), (uint64_t)i * 8192),
				 (ssize_t)sizeof(blk));
		ck_assert_int_eq(ordfs_fsync(t->fs, f, false), 0);
	}
	inode_put(t->fs, f);
	char longt[600];
	memset(longt, 'x', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = 0;
	ck_assert_int_eq(ordfs_symlink(t->fs, root, "fast", "target", &root_cred, &f), 0);
	inode_put(t->fs, f);
	ck_assert_int_eq(ordfs_symlink(t->fs, dir, "slow", longt, &root_cred, &f), 0);
	inode_put(t->fs, f);
	if (leave_log) {
		/* Transactions in the log: fsyncs, then a crash. */
		ck_assert_int_eq(ordfs_create(t->fs, root, "last", 0644, &root_cred, &f), 0);
		ck_assert_int_eq(ordfs_write(t->fs, f, "x", 1, 0), 1);
		ck_assert_int_eq(ordfs_fsync(t->fs, f, false), 0);
		inode_put(t->fs, f);
	}
	inode_put(t->fs, dir);
	inode_put(t->fs, root);
	if (leave_log)
		tfs_crash(t);
	else
		tfs_unmount(t);
}

/* ---- reading everything a mount shows ------------------------------------ */

struct walk {
	struct ordfs *fs;
	unsigned depth;
	unsigned seen;
};

static void walk_inode(struct walk *w, struct inode *inode);

static int walk_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
		      uint64_t next)
{
	struct walk *w = ctx;
	(void)ino;
	(void)dtype;
	(void)next;
	char copy[256];
	if (len >= sizeof(copy) || w->seen > 2000)
		return 1; /* stop */
	memcpy(copy, name, len);
	copy[len] = 0;
	w->seen++;
	(void)copy;
	return 0;
}

struct names {
	char v[64][256];
	unsigned n;
};

static int collect_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
			 uint64_t next)
{
	struct names *n = ctx;
	(void)ino;
	(void)dtype;
	(void)next;
	if (n->n >= 64 || len >= 256)
		return 1;
	memcpy(n->v[n->n], name, len);
	n->v[n->n][len] = 0;
	n->n++;
	return 0;
}

/* Lists, stats, reads and readlinks what it can reach; every error is
 * fine, a crash or hang is not. */
static void walk_inode(struct walk *w, struct inode *inode)
{
	struct stat st;
	ordfs_getattr(w->fs, inode, &st);
	char buf[8192];
	(void)ordfs_listxattr(w->fs, inode, buf, sizeof(buf));
	(void)ordfs_getxattr(w->fs, inode, "user.k", buf, sizeof(buf));
	if (S_ISREG(inode->d.mode)) {
		for (uint64_t off = 0; off < 400000; off += sizeof(buf))
			if (ordfs_read(w->fs, inode, buf, sizeof(buf), off) <= 0)
				break;
		(void)ordfs_seek_data_hole(w->fs, inode, 0, 3 /* SEEK_DATA */);
	} else if (S_ISLNK(inode->d.mode)) {
		(void)ordfs_readlink(w->fs, inode, buf, sizeof(buf));
	} else if (S_ISDIR(inode->d.mode) && w->depth < 4) {
		(void)ordfs_readdir(w->fs, inode, 0, walk_entry, w);
		struct names *names = malloc(sizeof(*names));
		ck_assert_ptr_nonnull(names);
		names->n = 0;
		(void)ordfs_readdir(w->fs, inode, 0, collect_entry, names);
		for (unsigned i = 0; i < names->n; i++) {
			struct inode *child;
			if (ordfs_lookup(w->fs, inode, names->v[i], &child) == 0) {
				w->depth++;
				walk_inode(w, child);
				w->depth--;
				inode_put(w->fs, child);
			}
		}
		free(names);
	}
}

/* Mounts (read-write or not), reads everything, makes a few changes,
 * unmounts.  Returns whether the mount was accepted. */
static bool exercise_mount(struct blockdev *bd, bool readonly)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	opts.readonly = readonly;
	struct ordfs *fs;
	const char *why = NULL;
	if (ordfs_mount(bd, &opts, &fs, &why) != 0) {
		ck_assert_ptr_nonnull(why);
		return false;
	}
	struct inode *root;
	if (inode_get(fs, ORDFS_ROOT_INO, &root) == 0) {
		struct walk w = { fs, 0, 0 };
		walk_inode(&w, root);
		if (!readonly) {
			struct inode *f, *d;
			if (ordfs_create(fs, root, "new-after-damage", 0644, &root_cred, &f) == 0) {
				(void)ordfs_write(fs, f, "hello", 5, 0);
				(void)ordfs_fsync(fs, f, false);
				inode_put(fs, f);
			}
			if (ordfs_mkdir(fs, root, "newdir", 0755, &root_cred, &d) == 0)
				inode_put(fs, d);
			(void)ordfs_unlink(fs, root, "fast");
			(void)ordfs_rename(fs, root, "sparse", root, "sparse2", 0);
			(void)ordfs_sync(fs);
		}
		inode_put(fs, root);
	}
	(void)ordfs_unmount(fs);
	return true;
}

static void quiet(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	(void)code;
	(void)msg;
}

/* The checker's verdict on the image as replay would leave it. */
static uint32_t check_after_replay(struct blockdev *bd)
{
	struct ordfs_super sb;
	const char *why;
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = quiet;
	if (ordfs_read_super(bd, false, &sb, &why) != 0)
		return 1; /* refused: detected */
	struct blockdev *ov;
	ck_assert_int_eq(blockdev_overlay_create(bd, ordfs_block_size(&sb), &ov), 0);
	int need = journal_needs_recovery(ov, &sb);
	struct journal_recovery_info info;
	if (need < 0 || (need > 0 && journal_recover(ov, &sb, 0, &info) != 0)) {
		blockdev_destroy(ov);
		return 1;
	}
	int err = ordfs_check(ov, &res);
	blockdev_destroy(ov);
	return err ? 1 : res.problems;
}

/* Must the checker (or a refusal) catch this kind every time? */
static bool always_detectable(enum corrupt_kind k)
{
	return k == CORRUPT_INODE_BITS || k == CORRUPT_INODE_LINKS || k == CORRUPT_DIR_ZERO ||
	       k == CORRUPT_DIR_BITS || k == CORRUPT_BITMAP_FREE || k == CORRUPT_BITMAP_BITS;
}

static void hostile_kind(enum corrupt_kind kind)
{
	bool journal = kind == CORRUPT_JOURNAL_BITS || kind == CORRUPT_JOURNAL_CSUM;
	struct test_fs t;
	tfs_setup(&t, IMG, 1024, 256);
	populate(&t, journal);
	const uint8_t *base = blockdev_mem_bytes(t.mem);

	unsigned damaged = 0, detected = 0, refused_rw = 0, refused_ro = 0;
	for (unsigned seed = 1; seed <= seeds(); seed++) {
		struct blockdev *img;
		ck_assert_int_eq(blockdev_mem_from(base, IMG, &img), 0);
		char what[160] = "";
		int err = corrupt_image(img, kind, seed, what, sizeof(what));
		if (err == -ENOENT) {
			blockdev_destroy(img);
			continue;
		}
		ck_assert_msg(err == 0, "%s seed %u: corrupt: %d", corrupt_kind_name(kind), seed, err);
		damaged++;

		uint32_t problems = check_after_replay(img);
		detected += problems > 0;
		ck_assert_msg(problems > 0 || !always_detectable(kind),
			      "%s seed %u (%s): the checker found nothing", corrupt_kind_name(kind),
			      seed, what);

		/* Read-only first (changes nothing), then read-write on a copy. */
		refused_ro += !exercise_mount(img, true);
		struct blockdev *copy;
		ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(img), IMG, &copy), 0);
		refused_rw += !exercise_mount(copy, false);
		blockdev_destroy(copy);
		blockdev_destroy(img);
	}
	fprintf(stderr, "hostile %-13s %2u damaged, %2u detected by the checker, mount refused "
		"%2u ro / %2u rw\n", corrupt_kind_name(kind), damaged, detected, refused_ro,
		refused_rw);
	ck_assert_uint_gt(damaged, 0);
	tfs_free(&t);
}

START_TEST(test_hostile_kind)
{
	hostile_kind((enum corrupt_kind)_i);
}
END_TEST

START_TEST(test_corruption_is_deterministic)
{
	struct test_fs t;
	tfs_setup(&t, IMG, 1024, 256);
	populate(&t, false);
	struct blockdev *a, *b;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t.mem), IMG, &a), 0);
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(t.mem), IMG, &b), 0);
	ck_assert_int_eq(corrupt_image(a, CORRUPT_ANY_METADATA, 42, NULL, 0), 0);
	ck_assert_int_eq(corrupt_image(b, CORRUPT_ANY_METADATA, 42, NULL, 0), 0);
	ck_assert(memcmp(blockdev_mem_bytes(a), blockdev_mem_bytes(b), IMG) == 0);
	ck_assert(memcmp(blockdev_mem_bytes(a), blockdev_mem_bytes(t.mem), IMG) != 0);
	blockdev_destroy(a);
	blockdev_destroy(b);
	tfs_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("hostile");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_corruption_is_deterministic);
	tcase_add_loop_test(tc, test_hostile_kind, 0, CORRUPT_KINDS);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
