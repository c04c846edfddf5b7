/*
 * test_mnt_alloc.c - allocation on a damaged image (issue 36, findings 2
 * and 3): what the bitmaps say is free is not trusted blindly.  The real
 * daemon on an image damaged by ordfs-corrupt (CORRUPT_BIN), real system
 * calls.
 *
 *  - ibitmap-free-all (every inode in use past the root marked free in the
 *    inode bitmap, checksums valid): a create must never be given the
 *    number of a live inode.  Before the fix `echo x > MNT/n1` got inode 3
 *    (lost+found became a 2-byte file), and a FORGET of the replaced inode
 *    aborted the daemon ("reference underflow").
 *  - bitmap-free-dir (a directory block marked free, checksum valid): the
 *    part of finding 3 cheap checks can see.  A directory block cached by
 *    this mount is never handed out; before, the first new file's data
 *    went onto it.  What they cannot see, finding 3 itself (a data block of
 *    a file this mount has not touched), is left to the full
 *    cross-reference of fsck and the online scrub: no test here pretends
 *    otherwise (design/allocation.md).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mnt_helpers.h"

static const char *bin(const char *name)
{
	const char *p = getenv(name);
	ck_assert_msg(p && *p, "%s is not set", name);
	return p;
}

static void corrupt(struct mnt *m, const char *kind, const char *seed)
{
	struct mnt_run_result r;
	char *argv[] = { (char *)bin("CORRUPT_BIN"), m->image, (char *)kind, (char *)seed, NULL };
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "ordfs-corrupt %s: exit %d: %s", kind, r.status, r.err);
}

static int run_fsck(struct mnt *m, const char *flags, struct mnt_run_result *r)
{
	char *argv[] = { (char *)bin("FSCK_BIN"), (char *)flags, m->image, NULL };
	mnt_run(argv, NULL, r);
	return r->status;
}

static bool log_has(struct mnt *m, const char *needle)
{
	size_t len;
	char *text = mnt_slurp(m->log, &len);
	bool found = text && strstr(text, needle);
	free(text);
	return found;
}

static ino_t ino_of(const char *path)
{
	struct stat st;
	MNT_OK(lstat(path, &st));
	return st.st_ino;
}

/* The kernel forgets every inode it does not use (FORGETs to the daemon). */
static void drop_kernel_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	MNT_OK(fd);
	MNT_OK(write(fd, "2", 1));
	close(fd);
}

#define NFILES 6

/* The tree the tests damage: lost+found (mkfs), directory a with files
 * and a subdirectory, each file a known pattern. */
static void make_tree(struct mnt *m)
{
	MNT_OK(mkdir(mnt_path(m, "a"), 0755));
	MNT_OK(mkdir(mnt_path(m, "a/sub"), 0755));
	for (int i = 0; i < NFILES; i++)
		mnt_write_pattern(mnt_path(m, "a/f%d", i), 3 * 4096 + 100 * (size_t)i,
				  100 + (uint64_t)i, 0644);
	mnt_write_pattern(mnt_path(m, "a/sub/deep"), 5000, 99, 0644);
}

static void expect_tree(struct mnt *m)
{
	struct stat st;
	MNT_OK(lstat(mnt_path(m, "lost+found"), &st));
	ck_assert_msg(S_ISDIR(st.st_mode), "lost+found is no longer a directory");
	MNT_OK(lstat(mnt_path(m, "a"), &st));
	ck_assert_msg(S_ISDIR(st.st_mode), "a is no longer a directory (size %lld)",
		      (long long)st.st_size);
	MNT_OK(lstat(mnt_path(m, "a/sub"), &st));
	ck_assert(S_ISDIR(st.st_mode));
	for (int i = 0; i < NFILES; i++)
		mnt_expect_pattern(mnt_path(m, "a/f%d", i), 3 * 4096 + 100 * (size_t)i,
				   100 + (uint64_t)i);
	mnt_expect_pattern(mnt_path(m, "a/sub/deep"), 5000, 99);
}

/* Finding 2. */
START_TEST(test_new_inode_never_takes_a_live_one)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	make_tree(&m);
	ino_t live[NFILES + 4];
	unsigned nlive = 0;
	live[nlive++] = ino_of(mnt_path(&m, "lost+found"));
	live[nlive++] = ino_of(mnt_path(&m, "a"));
	live[nlive++] = ino_of(mnt_path(&m, "a/sub"));
	live[nlive++] = ino_of(mnt_path(&m, "a/sub/deep"));
	for (int i = 0; i < NFILES; i++)
		live[nlive++] = ino_of(mnt_path(&m, "a/f%d", i));
	mnt_stop(&m);
	mnt_check(&m);
	corrupt(&m, "ibitmap-free-all", "1");

	mnt_start(&m, "errors=continue");
	/* The kernel knows a and lost+found (a lookup reference each), as
	 * after an ls: the FORGETs of the end must match what it was given. */
	expect_tree(&m);
	/* Each create that meets a live inode marked free fails (EUCLEAN)
	 * and marks it in use; a later one gets a free number. */
	int fd = -1, refused = 0;
	for (int tries = 0; tries < 3 * NFILES && fd < 0; tries++) {
		errno = 0;
		fd = open(mnt_path(&m, "n1"), O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			ck_assert_msg(errno == EUCLEAN, "create n1: %s", strerror(errno));
			refused++;
		}
	}
	ck_assert_msg(fd >= 0, "create n1 never succeeded (%d refusals)", refused);
	mnt_write_all(fd, "x\n", 2);
	MNT_OK(close(fd));
	ino_t n1 = ino_of(mnt_path(&m, "n1"));
	for (unsigned i = 0; i < nlive; i++)
		ck_assert_msg(n1 != live[i], "n1 was given inode %llu, which is in use",
			      (unsigned long long)n1);
	/* lost+found (3) comes first after the root's number. */
	ck_assert_int_ge(refused, 1);
	char needle[64];
	snprintf(needle, sizeof(needle), "inode %llu", (unsigned long long)live[0]);
	ck_assert_msg(log_has(&m, needle), "no log line names inode %llu",
		      (unsigned long long)live[0]);
	mnt_expect_text(mnt_path(&m, "n1"), "x\n");
	MNT_OK(mkdir(mnt_path(&m, "n2"), 0755));
	for (int i = 0; i < NFILES; i++) {
		/* More creates: they may meet more live inodes (EUCLEAN), never
		 * take one. */
		int nfd = open(mnt_path(&m, "n3.%d", i), O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_msg(nfd >= 0 || errno == EUCLEAN, "create n3.%d: %s", i, strerror(errno));
		if (nfd >= 0)
			close(nfd);
	}
	expect_tree(&m);
	/* Forget everything the kernel holds: no reference may underflow. */
	drop_kernel_caches();
	expect_tree(&m);
	mnt_expect_text(mnt_path(&m, "n1"), "x\n");
	drop_kernel_caches();
	ck_assert_int_eq(mnt_stop_status(&m), 0);

	/* The error was recorded; fsck repairs the rest of the bitmap in one
	 * run, and nothing was lost. */
	struct mnt_run_result r;
	ck_assert_int_eq(run_fsck(&m, "-n", &r), 4);
	int st = run_fsck(&m, "-fy", &r);
	ck_assert_msg(st == 1, "fsck -fy exit %d: %s", st, r.err);
	ck_assert_int_eq(run_fsck(&m, "-fn", &r), 0);
	mnt_start(&m, NULL);
	expect_tree(&m);
	mnt_expect_text(mnt_path(&m, "n1"), "x\n");
	mnt_finish(&m);
}
END_TEST

/* Every directory of the tree read (its blocks in the buffer cache). */
static unsigned list_dir(struct mnt *m, const char *rel)
{
	DIR *d = opendir(mnt_path(m, "%s", rel));
	ck_assert_msg(d != NULL, "opendir %s: %s", rel, strerror(errno));
	unsigned n = 0;
	errno = 0;
	while (readdir(d))
		n++;
	ck_assert_msg(errno == 0, "readdir %s: %s", rel, strerror(errno));
	closedir(d);
	return n;
}

static void ordfsctl_sync(struct mnt *m)
{
	struct mnt_run_result r;
	char *argv[] = { (char *)bin("ORDFSCTL_BIN"), "sync", m->mountpoint, NULL };
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "ordfsctl sync: exit %d: %s", r.status, r.err);
}

/* Four new 4 KiB files (the finding's writes), durable. */
static void write_four(struct mnt *m)
{
	for (int i = 0; i < 4; i++)
		mnt_write_pattern(mnt_path(m, "new%d", i), 4096, 500 + (uint64_t)i, 0644);
	ordfsctl_sync(m);
}

static void expect_four(struct mnt *m)
{
	for (int i = 0; i < 4; i++)
		mnt_expect_pattern(mnt_path(m, "new%d", i), 4096, 500 + (uint64_t)i);
}

/* Finding 3, the part cheap checks can see: a directory block marked free
 * while the directory is in use and cached.  Before, the first new file's
 * data went onto it (the first free block after the mount's rotor) and
 * the directory was lost at the next mount. */
START_TEST(test_cached_dir_block_marked_free)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	make_tree(&m);
	mnt_stop(&m);
	mnt_check(&m);
	corrupt(&m, "bitmap-free-dir", "1");

	mnt_start(&m, "errors=continue");
	unsigned n_lf = list_dir(&m, "lost+found"), n_a = list_dir(&m, "a"),
		 n_sub = list_dir(&m, "a/sub");
	expect_tree(&m);
	write_four(&m);
	mnt_stop(&m);
	ck_assert_msg(log_has(&m, "in use (cached metadata) but free in the block bitmap"),
		      "the allocator did not see the directory block");
	/* The refusal went through errors= (writeback_report_refused): the
	 * image records the error, so fsck -n says so and a read-write
	 * mount waits for fsck; the tree is checked read-only. */
	ck_assert_msg(mnt_image_error_recorded(&m), "the refusal left no error for fsck");
	struct mnt_run_result r;
	ck_assert_int_eq(run_fsck(&m, "-fn", &r), 4);
	mnt_start(&m, "ro");
	ck_assert_uint_eq(list_dir(&m, "lost+found"), n_lf);
	ck_assert_uint_eq(list_dir(&m, "a"), n_a);
	ck_assert_uint_eq(list_dir(&m, "a/sub"), n_sub);
	expect_tree(&m);
	expect_four(&m);
	mnt_stop(&m);
	/* The bitmap is still wrong on disk: fsck repairs it in one run. */
	int st = run_fsck(&m, "-fy", &r);
	ck_assert_msg(st == 1, "fsck -fy exit %d: %s", st, r.err);
	ck_assert_int_eq(run_fsck(&m, "-fn", &r), 0);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted alloc");
	TCase *tc = tcase_create("alloc");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_new_inode_never_takes_a_live_one);
	tcase_add_test(tc, test_cached_dir_block_marked_free);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
