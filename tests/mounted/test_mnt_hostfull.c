/*
 * test_mnt_hostfull.c - the real daemon on a sparse 64 MiB image on a
 * tmpfs of 24 MiB that the test mounts itself (design/allocation.md, "When
 * the host fills
 * up"):
 *  - writing until the host is full: the writer gets ENOSPC, never EIO;
 *    the daemon says once that the filesystem holding the image is full,
 *    naming the image and the tmpfs; the mount warned that the host has
 *    less room than the image may take;
 *  - deleting files in ordfs gives the host its space back: writes and
 *    fsyncs go on with no host action;
 *  - kill -9 while the host is full, fsck.ordfs -fy, mount again: every
 *    fsync'd file is intact;
 *  - a replay that needs host space the host does not have says so (the
 *    daemon and fsck.ordfs), and replays once there is room.
 * Mounting a tmpfs needs root: without it the program skips, saying why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "blockdev/blockdev.h"
#include "format/format.h"
#include "super/super.h"

#define MiB (1024u * 1024u)
#define HOST_DIR "hostfull-tmpfs" /* the tmpfs, in the test's directory */

/* The test's tmpfs of host_mb MiB with a sparse image of image_size
 * (mkfs.ordfs syntax) on it; m->image points there. */
static void host_setup(struct mnt *m, unsigned host_mb, const char *image_size,
		       const char *test)
{
	mnt_setup_named(m, "16M", test); /* the directory (its image goes) */
	MNT_OK(unlink(m->image));
	char host[MNT_DIR_LEN + 32], opts[64];
	snprintf(host, sizeof(host), "%s/%s", m->dir, HOST_DIR);
	MNT_OK(mkdir(host, 0755));
	snprintf(opts, sizeof(opts), "size=%um,mode=0755", host_mb);
	MNT_OK(mount("tmpfs", host, "tmpfs", 0, opts));
	snprintf(m->image, sizeof(m->image), "%s/image", host);
	char *argv[] = { (char *)mnt_mkfs_bin(), "-q", m->image, (char *)image_size, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0, "mkfs.ordfs: exit %d: %s", r.status, r.err);
}

static const char *host_dir(struct mnt *m)
{
	return mnt_host_path(m, "%s", HOST_DIR);
}

/* As mnt_finish (stop, check, remove the directory), the tmpfs with it. */
static void host_finish(struct mnt *m)
{
	char host[MNT_FILE_LEN];
	snprintf(host, sizeof(host), "%s", host_dir(m));
	if (m->daemon > 0)
		mnt_stop(m);
	mnt_check(m);
	MNT_OK(umount2(host, MNT_DETACH));
	mnt_discard(m);
	printf("%s: %.2f s\n", m->test, (double)(mnt_now_ms() - m->started_ms) / 1000.0);
	fflush(stdout);
}

static uint64_t host_free(struct mnt *m)
{
	struct statvfs sv;
	MNT_OK(statvfs(host_dir(m), &sv));
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Writes len bytes of pattern seed to path and fsyncs: 0 or the errno of
 * the first failure (open, write or fsync).  A file that fails stays. */
static int write_fsync(const char *path, size_t len, uint64_t seed)
{
	static uint8_t buf[MiB];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return errno;
	int err = 0;
	for (size_t off = 0; off < len && !err;) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		mnt_pattern_fill(buf, n, seed, off);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0)
			err = errno;
		else
			off += (size_t)w;
	}
	if (!err && fsync(fd) != 0)
		err = errno;
	close(fd);
	return err;
}

/* How many times needle occurs in the daemon's log. */
static unsigned log_count(struct mnt *m, const char *needle)
{
	char *log = mnt_slurp(m->log, NULL);
	ck_assert(log);
	unsigned n = 0;
	for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(log);
	return n;
}

#define FULL_LINE "the host filesystem holding the image is full"

/* Files "<prefix><i>" of 1 MiB, pattern seed base + i, each fsync'd, until
 * one fails: it must fail with ENOSPC (and is removed).  Returns how many
 * were written. */
static unsigned fill(struct mnt *m, const char *prefix, uint64_t base)
{
	for (unsigned i = 0;; i++) {
		const char *p = mnt_path(m, "%s%u", prefix, i);
		int err = write_fsync(p, MiB, base + i);
		if (err) {
			ck_assert_msg(err == ENOSPC, "%s: %s, not ENOSPC", p, strerror(err));
			MNT_OK(unlink(p));
			printf("fill: %u files of 1 MiB, then ENOSPC; %llu KiB left on the host\n",
			       i, (unsigned long long)(host_free(m) >> 10));
			return i;
		}
		/* 64 MiB of ordfs: the 24 MiB host is full long before */
		ck_assert_msg(i < 40, "no ENOSPC from the host after %u MiB", i);
	}
}

/* Then files of 2000 bytes (fsync'd small data goes through the log in
 * data=ordered) until one fails: with ENOSPC, never EIO (a commit that
 * met the full host would give EIO).  Returns how many were written. */
static unsigned fill_small(struct mnt *m, const char *prefix, uint64_t base)
{
	for (unsigned i = 0;; i++) {
		const char *p = mnt_path(m, "%s%u", prefix, i);
		int err = write_fsync(p, 2000, base + i);
		if (err) {
			ck_assert_msg(err == ENOSPC, "%s: %s, not ENOSPC", p, strerror(err));
			MNT_OK(unlink(p));
			printf("fill: %u files of 2000 bytes, then ENOSPC; %llu KiB left on the "
			       "host\n", i, (unsigned long long)(host_free(m) >> 10));
			return i;
		}
		ck_assert_msg(i < 20000, "no ENOSPC from the host after %u small files", i);
	}
}

START_TEST(test_full_host_enospc_delete_and_go_on)
{
	struct mnt m;
	host_setup(&m, 24, "64M", __func__);
	mnt_start(&m, NULL);
	ck_assert_msg(log_count(&m, "the image is sparse and its host filesystem") == 1,
		      "no warning at mount about the host's free space");

	unsigned n = fill(&m, "f", 100);
	ck_assert_uint_ge(n, 6);
	unsigned small = fill_small(&m, "s", 10000);
	/* It stays full: more tries are ENOSPC, and logged once. */
	for (unsigned i = 0; i < 3; i++) {
		int err = write_fsync(mnt_path(&m, "more%u", i), MiB, 999);
		ck_assert_msg(err == ENOSPC, "more%u: %s, not ENOSPC", i, strerror(err));
		MNT_OK(unlink(mnt_path(&m, "more%u", i)));
	}
	ck_assert_msg(log_count(&m, FULL_LINE) == 1, "the full host was logged %u times",
		      log_count(&m, FULL_LINE));
	ck_assert_msg(log_count(&m, m.image) >= 2 && log_count(&m, host_dir(&m)) >= 2,
		      "the log does not name the image and the host filesystem");
	mnt_dump_file(m.log, "daemon: ");

	/* Deleting files in ordfs gives the host its space back: half of
	 * them, then a quarter's worth written (and fsync'd) again. */
	uint64_t before = host_free(&m);
	for (unsigned i = 0; i < n / 2; i++)
		MNT_OK(unlink(mnt_path(&m, "f%u", i)));
	unsigned g = n / 4;
	for (unsigned i = 0; i < g; i++) {
		int err = write_fsync(mnt_path(&m, "g%u", i), MiB, 200 + i);
		ck_assert_msg(err == 0, "g%u after deleting: %s", i, strerror(err));
	}
	uint64_t after = host_free(&m);
	printf("host: %llu KiB free when full, deleted %u MiB, wrote %u MiB again: %llu KiB free\n",
	       (unsigned long long)(before >> 10), n / 2, g, (unsigned long long)(after >> 10));
	/* what was deleted and not written again went back to the host */
	ck_assert_uint_ge(after, before + (uint64_t)(n / 2 - g - 1) * MiB);
	for (unsigned i = n / 2; i < n; i++)
		mnt_expect_pattern(mnt_path(&m, "f%u", i), MiB, 100 + i);
	for (unsigned i = 0; i < g; i++)
		mnt_expect_pattern(mnt_path(&m, "g%u", i), MiB, 200 + i);
	for (unsigned i = 0; i < small; i++)
		mnt_expect_pattern(mnt_path(&m, "s%u", i), 2000, 10000 + i);

	/* Full again, then kill -9 while it is. */
	unsigned h = fill(&m, "h", 300);
	ck_assert_uint_ge(h, 1);
	mnt_kill9(&m);
	ck_assert_uint_lt(host_free(&m), 2 * MiB); /* less than a file and its metadata */

	/* fsck replays and repairs with the host still full: every home
	 * block the log holds has its host space already. */
	char *argv[] = { getenv("FSCK_BIN"), "-fy", m.image, NULL };
	ck_assert(argv[0]);
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0 || r.status == 1, "fsck.ordfs -fy: exit %d: %s", r.status,
		      r.err);
	mnt_start(&m, NULL);
	for (unsigned i = n / 2; i < n; i++)
		mnt_expect_pattern(mnt_path(&m, "f%u", i), MiB, 100 + i);
	for (unsigned i = 0; i < g; i++)
		mnt_expect_pattern(mnt_path(&m, "g%u", i), MiB, 200 + i);
	for (unsigned i = 0; i < h; i++)
		mnt_expect_pattern(mnt_path(&m, "h%u", i), MiB, 300 + i);
	for (unsigned i = 0; i < small; i++)
		mnt_expect_pattern(mnt_path(&m, "s%u", i), 2000, 10000 + i);
	host_finish(&m);
}
END_TEST

/* Fills the tmpfs with a file of its own until not a page is left. */
static void fill_host_dir(struct mnt *m, const char *name)
{
	int fd = open(mnt_host_path(m, "%s/%s", HOST_DIR, name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MNT_OK(fd);
	static uint8_t buf[MiB];
	memset(buf, 0x77, sizeof(buf));
	for (size_t chunk = MiB; chunk >= 4096; chunk /= 2)
		while (write(fd, buf, chunk) == (ssize_t)chunk)
			;
	close(fd);
	ck_assert_uint_eq(host_free(m), 0);
}

#define NO_SPACE "no space left on the filesystem holding "

START_TEST(test_replay_without_host_space_says_so)
{
	struct mnt m;
	host_setup(&m, 24, "64M", __func__);
	mnt_start(&m, NULL);
	for (unsigned i = 0; i < 40; i++) {
		int err = write_fsync(mnt_path(&m, "s%u", i), 3000, 500 + i);
		ck_assert_msg(err == 0, "s%u: %s", i, strerror(err));
	}
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "s0"), &st));
	mnt_kill9(&m);

	/* The log holds the new inodes' table block; its home was given
	 * host space but never written.  An image an older ordfs left, whose
	 * homes were holes, is the same with that space given back: */
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_file_open(m.image, BLOCKDEV_READONLY, &bd), 0);
	struct ordfs_super sb;
	const char *why = "";
	ck_assert_msg(ordfs_read_super(bd, false, &sb, &why) == 0, "superblock: %s", why);
	blockdev_destroy(bd);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(&sb, (uint32_t)st.st_ino, &blk, &off);
	uint32_t bs = ordfs_block_size(&sb);
	int fd = open(m.image, O_RDWR);
	MNT_OK(fd);
	MNT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(blk * bs), bs));
	close(fd);
	fill_host_dir(&m, "filler");

	char want[2 * MNT_FILE_LEN];
	snprintf(want, sizeof(want), NO_SPACE "%s: free space there and mount again", m.image);
	/* Not -f: should it mount after all, it detaches and the test goes on
	 * to fail (the clean-up unmounts it). */
	char *argv[] = { (char *)mnt_ordfs_bin(), m.image, m.mountpoint, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	printf("mount: exit %d: %s", r.status, r.err);
	ck_assert_msg(r.status == 1 && strstr(r.err, want), "mount on a full host: exit %d: %s",
		      r.status, r.err);
	ck_assert(!mnt_is_live(m.mountpoint));

	snprintf(want, sizeof(want), "journal replay failed: " NO_SPACE
		 "%s: free space there and run fsck.ordfs again", m.image);
	char *fsck[] = { getenv("FSCK_BIN"), "-fy", m.image, NULL };
	mnt_run(fsck, NULL, &r);
	printf("fsck: exit %d: %s", r.status, r.err);
	ck_assert_msg(r.status == 8 && strstr(r.err, want), "fsck on a full host: exit %d: %s",
		      r.status, r.err);

	/* Room again: the mount replays, everything fsync'd is there. */
	MNT_OK(unlink(mnt_host_path(&m, "%s/filler", HOST_DIR)));
	mnt_start(&m, NULL);
	for (unsigned i = 0; i < 40; i++)
		mnt_expect_pattern(mnt_path(&m, "s%u", i), 3000, 500 + i);
	host_finish(&m);
}
END_TEST

/* Can this process mount a tmpfs (root)?  NULL, or why not. */
static const char *tmpfs_refused(void)
{
	static char why[256];
	char dir[] = "/tmp/ordfs-tmpfs-probe.XXXXXX";
	if (!mkdtemp(dir)) {
		snprintf(why, sizeof(why), "mkdtemp: %s", strerror(errno));
		return why;
	}
	const char *res = NULL;
	if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
		snprintf(why, sizeof(why), "cannot mount a tmpfs (%s): these tests need root",
			 strerror(errno));
		res = why;
	} else {
		umount2(dir, MNT_DETACH);
	}
	rmdir(dir);
	return res;
}

/* A failed test leaves its tmpfs mounted (its clean-up is its last step):
 * detach every one of ours, and remove what the suite's clean-up could
 * not (the directories they were mounted on). */
static void detach_leftover_tmpfs(void)
{
	char *info = mnt_slurp("/proc/self/mountinfo", NULL);
	if (!info)
		return;
	char *save = NULL;
	for (char *line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char mp[PATH_MAX];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
		    strncmp(mp, "/tmp/ordfs-mnt.", 15) != 0 || !strstr(mp, "/" HOST_DIR))
			continue;
		fprintf(stderr, "cleanup: detaching %s\n", mp);
		umount2(mp, MNT_DETACH);
		char root[PATH_MAX], cmd[PATH_MAX + 16];
		snprintf(root, sizeof(root), "%s", mp);
		char *slash = strchr(root + 5, '/'); /* /tmp/ordfs-mnt.X/... */
		if (slash) {
			*slash = '\0';
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
			if (system(cmd) != 0)
				fprintf(stderr, "cleanup: could not remove %s\n", root);
		}
	}
	free(info);
}

int main(void)
{
	const char *why = tmpfs_refused();
	if (why)
		return mnt_skip_program(why);
	Suite *s = suite_create("mounted hostfull");
	TCase *tc = tcase_create("hostfull");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_full_host_enospc_delete_and_go_on);
	tcase_add_test(tc, test_replay_without_host_space_says_so);
	suite_add_tcase(s, tc);
	int rc = mnt_run_suite(s);
	detach_leftover_tmpfs();
	return rc;
}
