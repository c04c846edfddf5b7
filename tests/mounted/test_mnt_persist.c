/*
 * test_mnt_persist.c - what survives an unmount and a remount, and what a
 * clean unmount leaves behind.
 *
 * Owns: contents, sizes (sparse and dense), modes, owners and times with
 * nanoseconds across unmount/remount (also after renames, unlinks and
 * truncates, and through a data=writeback,commit=1 mount); a clean image
 * mounts again without journal recovery (and, as the control, an image
 * left by kill -9 after fsync does need it); a read-only mount serves the
 * files, refuses changes and leaves the image byte-identical.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define MiB (1024u * 1024u)

/* One file of the persistence tree. */
struct pfile {
	const char *name;
	size_t size;     /* dense size; sparse files add tail_off */
	uint64_t seed;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	off_t tail_off;  /* 0, or where a 4-byte "tail" sits past a hole */
	struct timespec atime, mtime;
};

static struct pfile files[] = {
	{ "empty", 0, 1, 0600, 0, 0, 0, { 1, 0 }, { 2, 999999999 } },
	{ "one", 1, 2, 0644, 10, 20, 0, { 1000000000, 1 }, { 1000000001, 2 } },
	{ "d1/block-minus-one", 4095, 3, 0640, 0, 0, 0, { 5, 5 }, { 1234567890, 123456789 } },
	{ "d1/block", 4096, 4, 0604, 0, 0, 0, { 6, 6 }, { 1234567891, 500000000 } },
	{ "d1/block-plus-one", 4097, 5, 0755, 0, 0, 0, { 7, 7 }, { 1600000000, 1 } },
	{ "d1/d2/mib-plus-three", MiB + 3, 6, 04711, 3, 4, 0, { 8, 8 }, { 1700000000, 314159265 } },
	{ "d1/d2/sparse", 8192, 7, 0444, 0, 0, 3 * (off_t)MiB + 11, { 9, 9 },
	  { 1500000000, 271828182 } },
	{ "d3/four-mib", 4 * MiB, 8, 0664, 65534, 65534, 0, { 10, 10 }, { 2000000000, 42 } },
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static const char *const dirs[] = { "d1", "d1/d2", "d3", "d3/empty-dir" };
static const mode_t dir_modes[] = { 0700, 0750, 0755, 0711 };
#define NDIRS (sizeof(dirs) / sizeof(dirs[0]))

static void write_file(struct mnt *m, const struct pfile *f)
{
	const char *path = mnt_path(m, "%s", f->name);
	mnt_write_pattern(path, f->size, f->seed, 0600);
	if (f->tail_off) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		mnt_pwrite_all(fd, "tail", 4, f->tail_off);
		MNT_OK(close(fd));
	}
	MNT_OK(chown(path, f->uid, f->gid));
	MNT_OK(chmod(path, f->mode));
	struct timespec ts[2] = { f->atime, f->mtime };
	MNT_OK(utimensat(AT_FDCWD, path, ts, 0));
}

/* Attributes first (reading a file could move its atime), then data. */
static void verify_file(struct mnt *m, const struct pfile *f)
{
	const char *path = mnt_path(m, "%s", f->name);
	struct stat st;
	MNT_OK(stat(path, &st));
	off_t size = f->tail_off ? f->tail_off + 4 : (off_t)f->size;
	ck_assert_msg(st.st_size == size, "%s: size %lld, expected %lld", f->name,
		      (long long)st.st_size, (long long)size);
	ck_assert_msg(st.st_mode == (S_IFREG | f->mode), "%s: mode %o, expected %o", f->name,
		      st.st_mode, S_IFREG | f->mode);
	ck_assert_msg(st.st_uid == f->uid && st.st_gid == f->gid, "%s: owner %u:%u", f->name,
		      st.st_uid, st.st_gid);
	ck_assert_msg(st.st_mtim.tv_sec == f->mtime.tv_sec && st.st_mtim.tv_nsec == f->mtime.tv_nsec,
		      "%s: mtime %lld.%09ld, expected %lld.%09ld", f->name,
		      (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		      (long long)f->mtime.tv_sec, f->mtime.tv_nsec);
	ck_assert_msg(st.st_atim.tv_sec == f->atime.tv_sec && st.st_atim.tv_nsec == f->atime.tv_nsec,
		      "%s: atime %lld.%09ld, expected %lld.%09ld", f->name,
		      (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
		      (long long)f->atime.tv_sec, f->atime.tv_nsec);
	if (f->tail_off)
		ck_assert_msg(st.st_blocks * 512 < f->tail_off, "%s: hole was allocated", f->name);

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	uint8_t *buf = malloc((size_t)size + 1);
	ck_assert(buf);
	ck_assert_int_eq(mnt_read_full(fd, buf, (size_t)size + 1), size);
	MNT_OK(close(fd));
	ck_assert_msg(mnt_pattern_mismatch(buf, f->size, f->seed, 0) == f->size,
		      "%s: contents differ", f->name);
	if (f->tail_off) {
		off_t i = (off_t)f->size;
		while (i < f->tail_off && buf[i] == 0)
			i++;
		ck_assert_msg(i == f->tail_off, "%s: hole byte %lld is %u", f->name,
			      (long long)i, buf[i]);
		ck_assert(memcmp(buf + f->tail_off, "tail", 4) == 0);
	}
	free(buf);
}

static void build_tree(struct mnt *m)
{
	for (size_t i = 0; i < NDIRS; i++)
		MNT_OK(mkdir(mnt_path(m, "%s", dirs[i]), dir_modes[i]));
	for (size_t i = 0; i < NFILES; i++)
		write_file(m, &files[i]);
	struct timespec ts[2] = { { 77, 7 }, { 777, 777777777 } };
	MNT_OK(utimensat(AT_FDCWD, mnt_path(m, "d3/empty-dir"), ts, 0));
}

static unsigned count_entries(const char *path)
{
	DIR *d = opendir(path);
	ck_assert_msg(d, "opendir %s: %s", path, strerror(errno));
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void verify_tree(struct mnt *m, size_t nfiles)
{
	for (size_t i = 0; i < NDIRS; i++) {
		struct stat st;
		MNT_OK(stat(mnt_path(m, "%s", dirs[i]), &st));
		ck_assert_uint_eq(st.st_mode, S_IFDIR | dir_modes[i]);
	}
	struct stat st;
	MNT_OK(stat(mnt_path(m, "d3/empty-dir"), &st));
	ck_assert_int_eq(st.st_mtim.tv_sec, 777);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 777777777);
	for (size_t i = 0; i < nfiles; i++)
		verify_file(m, &files[i]);
}

START_TEST(test_persistence_across_remount)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	/* noatime: the atimes set here must survive the reads that verify
	 * the data (access-time rules are test_mnt_atime's). */
	mnt_start(&m, "noatime");
	build_tree(&m);
	verify_tree(&m, NFILES);
	mnt_stop(&m);
	mnt_check(&m);

	mnt_start(&m, "noatime");
	verify_tree(&m, NFILES);
	ck_assert_uint_eq(count_entries(m.mountpoint), 5); /* lost+found empty one d1 d3 */
	ck_assert_uint_eq(count_entries(mnt_path(&m, "d1")), 4);
	ck_assert_uint_eq(count_entries(mnt_path(&m, "d1/d2")), 2);
	ck_assert_uint_eq(count_entries(mnt_path(&m, "d3")), 2);

	/* change things, then remount through other options */
	MNT_OK(rename(mnt_path(&m, "one"), mnt_path(&m, "d3/renamed-one")));
	MNT_OK(unlink(mnt_path(&m, "d1/block")));
	MNT_OK(truncate(mnt_path(&m, "d3/four-mib"), MiB + 1));
	MNT_OK(rmdir(mnt_path(&m, "d3/empty-dir")));
	struct timespec ts[2] = { { 3, 3 }, { 1111111111, 111111111 } };
	MNT_OK(utimensat(AT_FDCWD, mnt_path(&m, "d3/four-mib"), ts, 0));
	mnt_stop(&m);
	mnt_check(&m);

	mnt_start(&m, "data=writeback,commit=1,noatime");
	struct stat st;
	MNT_FAILS(stat(mnt_path(&m, "one"), &st), ENOENT);
	MNT_FAILS(stat(mnt_path(&m, "d1/block"), &st), ENOENT);
	MNT_FAILS(stat(mnt_path(&m, "d3/empty-dir"), &st), ENOENT);
	MNT_OK(stat(mnt_path(&m, "d3/renamed-one"), &st));
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0644);
	ck_assert_uint_eq(st.st_uid, 10);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000001);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 2);
	mnt_expect_pattern(mnt_path(&m, "d3/renamed-one"), 1, 2);
	MNT_OK(stat(mnt_path(&m, "d3/four-mib"), &st));
	ck_assert_int_eq(st.st_mtim.tv_sec, 1111111111);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 111111111);
	mnt_expect_pattern(mnt_path(&m, "d3/four-mib"), MiB + 1, 8);
	verify_file(&m, &files[2]);
	verify_file(&m, &files[4]);
	verify_file(&m, &files[5]);
	verify_file(&m, &files[6]);
	/* a file written under writeback, with no fsync, made durable by the unmount */
	mnt_write_pattern(mnt_path(&m, "wb"), 300000, 9, 0644);
	mnt_stop(&m);
	mnt_check(&m);

	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "wb"), 300000, 9);
	mnt_finish(&m);
}
END_TEST

/* Fails if the daemon log says it replayed the journal. */
static bool log_says_recovered(const char *log)
{
	char *text = mnt_slurp(log, NULL);
	bool rec = text && strstr(text, "recovered the journal") != NULL;
	free(text);
	return rec;
}

START_TEST(test_clean_image_mounts_without_recovery)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	/* a fresh image needs no recovery */
	mnt_start(&m, NULL);
	ck_assert_msg(!log_says_recovered(m.log), "fresh image was recovered");
	for (unsigned i = 0; i < 20; i++)
		mnt_write_pattern(mnt_path(&m, "f%u", i), 10000 * i, i, 0644);
	int fd = open(mnt_path(&m, "f3"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	mnt_stop(&m);
	mnt_check(&m); /* clean flag set, journal empty, no problem */

	mnt_start(&m, NULL);
	ck_assert_msg(!log_says_recovered(m.log), "a cleanly unmounted image was recovered");
	for (unsigned i = 0; i < 20; i++)
		mnt_expect_pattern(mnt_path(&m, "f%u", i), 10000 * i, i);

	/* the control: kill -9 right after an fsync leaves a journal to replay */
	mnt_write_pattern(mnt_path(&m, "after"), 5000, 99, 0644);
	fd = open(mnt_path(&m, "after"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	mnt_kill9(&m);
	mnt_start(&m, NULL);
	ck_assert_msg(log_says_recovered(m.log),
		      "kill -9 after fsync left nothing to recover (log: %s)", m.log);
	mnt_expect_pattern(mnt_path(&m, "after"), 5000, 99);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	ck_assert_msg(!log_says_recovered(m.log), "recovered again after a clean unmount");
	mnt_finish(&m);
}
END_TEST

START_TEST(test_readonly_mount)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "f"), 123456, 5, 0644);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	mnt_stop(&m);
	mnt_check(&m);

	size_t before_len, after_len;
	char *before = mnt_slurp(m.image, &before_len);
	ck_assert(before);
	mnt_start(&m, "ro");
	mnt_expect_pattern(mnt_path(&m, "f"), 123456, 5);
	MNT_FAILS(open(mnt_path(&m, "new"), O_CREAT | O_WRONLY, 0644), EROFS);
	MNT_FAILS(open(mnt_path(&m, "f"), O_WRONLY), EROFS);
	MNT_FAILS(mkdir(mnt_path(&m, "d2"), 0755), EROFS);
	MNT_FAILS(unlink(mnt_path(&m, "f")), EROFS);
	MNT_FAILS(rmdir(mnt_path(&m, "d")), EROFS);
	MNT_FAILS(rename(mnt_path(&m, "f"), mnt_path(&m, "g")), EROFS);
	MNT_FAILS(chmod(mnt_path(&m, "f"), 0600), EROFS);
	MNT_FAILS(truncate(mnt_path(&m, "f"), 0), EROFS);
	int fd = open(mnt_path(&m, "f"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	mnt_stop(&m);
	char *after = mnt_slurp(m.image, &after_len);
	ck_assert(after);
	ck_assert_msg(before_len == after_len && memcmp(before, after, before_len) == 0,
		      "a read-only mount changed the image");
	free(before);
	free(after);
	mnt_finish(&m);
}
END_TEST

/* File handles outlive the mount (open_by_handle_at, as NFS export uses
 * them): after a remount the kernel has no inode cached and asks the
 * daemon for "." of the node; a handle of a removed file, whose inode
 * number may be taken again, is stale (xfstests generic/426, 467, 477). */
START_TEST(test_file_handles_across_remount)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	mnt_make_file(mnt_path(&m, "d/f"), 0644, "kept\n");
	mnt_make_file(mnt_path(&m, "gone"), 0644, "x");
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} hf, hd, hg;
	int mount_id;
	hf.fh.handle_bytes = hd.fh.handle_bytes = hg.fh.handle_bytes = MAX_HANDLE_SZ;
	MNT_OK(name_to_handle_at(AT_FDCWD, mnt_path(&m, "d/f"), &hf.fh, &mount_id, 0));
	MNT_OK(name_to_handle_at(AT_FDCWD, mnt_path(&m, "d"), &hd.fh, &mount_id, 0));
	MNT_OK(name_to_handle_at(AT_FDCWD, mnt_path(&m, "gone"), &hg.fh, &mount_id, 0));
	MNT_OK(unlink(mnt_path(&m, "gone")));
	mnt_stop(&m);

	mnt_start(&m, NULL);
	int mfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(mfd);
	int fd = open_by_handle_at(mfd, &hf.fh, O_RDONLY);
	ck_assert_msg(fd >= 0, "open_by_handle_at(file): %s", strerror(errno));
	char buf[16] = "";
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "kept\n");
	MNT_OK(close(fd));
	fd = open_by_handle_at(mfd, &hd.fh, O_RDONLY | O_DIRECTORY);
	ck_assert_msg(fd >= 0, "open_by_handle_at(dir): %s", strerror(errno));
	struct stat st;
	MNT_OK(fstatat(fd, "f", &st, 0));
	MNT_OK(close(fd));
	MNT_FAILS(open_by_handle_at(mfd, &hg.fh, O_RDONLY), ESTALE);
	MNT_OK(close(mfd));
	mnt_finish(&m);
}
END_TEST

static Suite *persist_suite(void)
{
	Suite *s = suite_create("mounted_persist");
	TCase *tc = tcase_create("persist");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_persistence_across_remount);
	tcase_add_test(tc, test_clean_image_mounts_without_recovery);
	tcase_add_test(tc, test_readonly_mount);
	tcase_add_test(tc, test_file_handles_across_remount);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(persist_suite());
}
