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
 *
 * Then the repairs (fsck -y's ordfs_repair) on the same damage: the check
 * after them is clean (e2fsck's run-twice rule), and no file whose own
 * metadata was intact is lost: each is found with its bytes at its path,
 * or (when its directory was the damage) in /lost+found as "#INO".
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
	char v[256][256];
	unsigned n;
};

static int collect_entry(void *ctx, const char *name, size_t len, uint32_t ino, uint8_t dtype,
			 uint64_t next)
{
	struct names *n = ctx;
	(void)ino;
	(void)dtype;
	(void)next;
	if (n->n >= 256 || len >= 256)
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

static void print_problem_msg(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "left: [%d] %s\n", (int)code, msg);
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
	       k == CORRUPT_DIR_BITS || k == CORRUPT_BITMAP_FREE || k == CORRUPT_BITMAP_BITS ||
	       k == CORRUPT_FILE_SIZE || k == CORRUPT_BLOCK_COUNT || k == CORRUPT_EXTENT_RANGE ||
	       k == CORRUPT_EXTENT_DUP || k == CORRUPT_DIR_PARENT || k == CORRUPT_ORPHAN_HEAD ||
	       k == CORRUPT_XATTR_BITS || k == CORRUPT_IBITMAP_FREE || k == CORRUPT_XATTR_RANGE ||
	       k == CORRUPT_DIR_HARDLINK || k == CORRUPT_FLAGS_UNKNOWN || k == CORRUPT_FLAGS_TYPE;
}

/* The populated image a kind of damage is applied to (the journal kinds
 * need transactions left in the log).  Returns its bytes. */
static const uint8_t *base_image(struct test_fs *t, enum corrupt_kind kind)
{
	tfs_setup(t, IMG, 1024, 256);
	populate(t, kind == CORRUPT_JOURNAL_BITS || kind == CORRUPT_JOURNAL_CSUM);
	return blockdev_mem_bytes(t->mem);
}

static void hostile_kind(enum corrupt_kind kind)
{
	struct test_fs t;
	const uint8_t *base = base_image(&t, kind);

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
	/* The owner record has no place on these 1 KiB-block images (it
	 * would overlap the backup superblock): cli_replay_untrusted. */
	if ((enum corrupt_kind)_i == CORRUPT_OWNER_HELD)
		return;
	hostile_kind((enum corrupt_kind)_i);
}
END_TEST

/* ---- repairs ------------------------------------------------------------- */

struct manifest_file {
	char path[300];
	uint32_t ino;
	uint64_t size;
	uint64_t hash;
};

struct manifest {
	struct manifest_file v[400];
	unsigned n;
};

/* Hash of the first limit bytes (a damaged size may claim terabytes of
 * holes: reading past what the file had proves nothing). */
static uint64_t hash_file(struct ordfs *fs, struct inode *f, uint64_t limit, uint64_t *size)
{
	uint64_t h = 1469598103934665603ull, total = 0;
	uint8_t buf[4096];
	for (uint64_t off = 0; off < limit; off += sizeof(buf)) {
		ssize_t n = ordfs_read(fs, f, buf, sizeof(buf), off);
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
		total += (uint64_t)n;
	}
	*size = total;
	return h;
}

/* Regular files under dir (two levels), with their bytes' hash. */
static void manifest_dir(struct ordfs *fs, struct inode *dir, const char *prefix,
			 struct manifest *m, int depth)
{
	struct names *names = malloc(sizeof(*names));
	ck_assert_ptr_nonnull(names);
	names->n = 0;
	ck_assert_int_ge(ordfs_readdir(fs, dir, 0, collect_entry, names), 0);
	for (unsigned i = 0; i < names->n && m->n < 400; i++) {
		struct inode *c;
		if (ordfs_lookup(fs, dir, names->v[i], &c) != 0)
			continue;
		char path[300];
		snprintf(path, sizeof(path), "%s/%s", prefix, names->v[i]);
		if (S_ISREG(c->d.mode)) {
			struct manifest_file *mf = &m->v[m->n++];
			snprintf(mf->path, sizeof(mf->path), "%s", path);
			mf->ino = c->ino;
			mf->hash = hash_file(fs, c, UINT64_MAX, &mf->size);
		} else if (S_ISDIR(c->d.mode) && depth < 2) {
			manifest_dir(fs, c, path, m, depth + 1);
		}
		inode_put(fs, c);
	}
	free(names);
}

static struct inode *lookup_path(struct ordfs *fs, const char *path)
{
	struct inode *f;
	return ordfs_lookup_path(fs, path, &f) == 0 ? f : NULL;
}

static struct ordfs *mount_ro(struct blockdev *bd)
{
	struct ordfs_options opts;
	ordfs_options_default(&opts);
	opts.readonly = true;
	struct ordfs *fs;
	const char *why;
	int err = ordfs_mount(bd, &opts, &fs, &why);
	ck_assert_msg(err == 0, "read-only mount after repair: %s", why);
	return fs;
}

/* Where a file whose own metadata was intact may be after the repair: at
 * its path, at another of its names (hard links), or in /lost+found. */
static bool file_survived(struct ordfs *fs, const struct manifest *m,
			  const struct manifest_file *mf)
{
	struct inode *f = NULL;
	for (unsigned i = 0; i < m->n && !f; i++) {
		if (m->v[i].ino != mf->ino)
			continue;
		f = lookup_path(fs, m->v[i].path);
		if (f && f->ino != mf->ino) {
			inode_put(fs, f);
			f = NULL;
		}
	}
	if (!f) {
		char lf[40];
		snprintf(lf, sizeof(lf), "/lost+found/#%u", mf->ino);
		f = lookup_path(fs, lf);
	}
	if (!f)
		return false;
	uint64_t size;
	bool same = hash_file(fs, f, mf->size + 1, &size) == mf->hash && size == mf->size &&
		    (uint64_t)f->size == mf->size;
	inode_put(fs, f);
	return same;
}

/* How many files a kind of damage may cost: none when it damages no
 * file's data or only a directory's names; the damaged file itself when
 * it changes one file's mapping or size (a block it took from another
 * file is copied, so the other keeps its data); any number otherwise
 * (a damaged inode, tree or log loses what it held, as a crash would;
 * of a directory's two names the one met first stays, so paths change). */
static unsigned max_lost(enum corrupt_kind k)
{
	switch (k) {
	case CORRUPT_BITMAP_FREE: case CORRUPT_BITMAP_BITS: case CORRUPT_INODE_LINKS:
	case CORRUPT_DIR_ZERO: case CORRUPT_DIR_BITS: case CORRUPT_DIR_CSUM:
	case CORRUPT_BLOCK_COUNT: case CORRUPT_DIR_PARENT: case CORRUPT_ORPHAN_HEAD:
	case CORRUPT_XATTR_BITS: case CORRUPT_IBITMAP_FREE: case CORRUPT_XATTR_RANGE:
	case CORRUPT_FLAGS_UNKNOWN: case CORRUPT_FLAGS_TYPE:
		return 0;
	case CORRUPT_EXTENT_DUP: case CORRUPT_FILE_SIZE: case CORRUPT_EXTENT_RANGE:
		return 1;
	default:
		return UINT32_MAX;
	}
}

static void repair_kind(enum corrupt_kind kind)
{
	struct test_fs t;
	const uint8_t *base = base_image(&t, kind);

	/* What a clean mount of the undamaged image shows. */
	struct manifest *m = calloc(1, sizeof(*m));
	ck_assert_ptr_nonnull(m);
	{
		struct blockdev *copy;
		ck_assert_int_eq(blockdev_mem_from(base, IMG, &copy), 0);
		struct ordfs_options opts;
		ordfs_options_default(&opts);
		opts.commit_interval_ms = 0;
		struct ordfs *fs;
		const char *why;
		ck_assert_int_eq(ordfs_mount(copy, &opts, &fs, &why), 0); /* replays */
		struct inode *root = NULL;
		ck_assert_int_eq(inode_get(fs, ORDFS_ROOT_INO, &root), 0);
		manifest_dir(fs, root, "", m, 0);
		inode_put(fs, root);
		ck_assert_int_eq(ordfs_unmount(fs), 0);
		blockdev_destroy(copy);
	}
	ck_assert_uint_gt(m->n, 100);

	unsigned repaired = 0, lost_total = 0;
	for (unsigned seed = 1; seed <= seeds(); seed++) {
		struct blockdev *img;
		ck_assert_int_eq(blockdev_mem_from(base, IMG, &img), 0);
		char what[160] = "";
		int err = corrupt_image(img, kind, seed, what, sizeof(what));
		if (err == -ENOENT) {
			blockdev_destroy(img);
			continue;
		}
		ck_assert_int_eq(err, 0);

		/* fsck -y: replay (the journal superblock reset if it is
		 * corrupt), then the repairs. */
		struct ordfs_super sb;
		const char *why;
		ck_assert_int_eq(ordfs_read_super(img, false, &sb, &why), 0);
		int need = journal_needs_recovery(img, &sb);
		struct journal_recovery_info info;
		if (need < 0)
			ck_assert_int_eq(journal_reset(img, &sb), 0);
		else if (need > 0)
			ck_assert_int_eq(journal_recover(img, &sb, 0, &info), 0);
		struct repair_result rep;
		ck_assert_int_eq(ordfs_repair(img, 0, NULL, NULL, &rep), 0);
		struct check_result res;
		memset(&res, 0, sizeof(res));
		res.report = print_problem_msg;
		ck_assert_int_eq(ordfs_check(img, &res), 0);
		ck_assert_msg(res.problems == 0, "%s seed %u (%s): %u problems left after %u rounds",
			      corrupt_kind_name(kind), seed, what, res.problems, rep.rounds);
		repaired++;

		struct ordfs *fs = mount_ro(img);
		unsigned lost = 0;
		for (unsigned i = 0; i < m->n; i++)
			lost += !file_survived(fs, m, &m->v[i]);
		ordfs_unmount(fs);
		ck_assert_msg(lost <= max_lost(kind), "%s seed %u (%s): %u of %u files lost",
			      corrupt_kind_name(kind), seed, what, lost, m->n);
		lost_total += lost;
		blockdev_destroy(img);
	}
	fprintf(stderr, "repair  %-13s %2u repaired to a clean check, %u files lost in all "
		"(of %u per image)\n", corrupt_kind_name(kind), repaired, lost_total, m->n);
	free(m);
	tfs_free(&t);
}

START_TEST(test_repair_kind)
{
	if ((enum corrupt_kind)_i == CORRUPT_SUPER_CSUM ||
	    (enum corrupt_kind)_i == CORRUPT_SUPER_RESERVED)
		return; /* a damaged superblock is -b's (cli_fsck) */
	repair_kind((enum corrupt_kind)_i);
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
	tcase_add_loop_test(tc, test_repair_kind, 0, CORRUPT_KINDS);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
