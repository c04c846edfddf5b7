/*
 * test_mnt_cache.c - what the kernel caches above the daemon, through the
 * real daemon: file pages kept across opens exactly when the atime policy
 * allows it (seen with mincore on a mapping of the file), the mutt case
 * with the cache kept, a write through one open seen at once through
 * another open and through a shared mapping, data changed by truncate and
 * fallocate never served stale from the cache, names remembered as absent
 * until they are created, and attributes fresh after a change the daemon
 * makes on its own (the mode an ACL implies, st_blocks after writeback,
 * atime after a read): what stat() shows from the kernel's cache must be
 * what statx(AT_STATX_FORCE_SYNC), which always asks the daemon, shows;
 * and the mount's readahead window the daemon sets.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define FILE_BYTES (64u << 10)

static void read_whole(const char *path)
{
	char *buf = malloc(FILE_BYTES);
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	ck_assert_uint_eq(mnt_read_full(fd, buf, FILE_BYTES), FILE_BYTES);
	close(fd);
	free(buf);
}

/* Pages of the file's first FILE_BYTES in the kernel's page cache right
 * after a new open of it (mincore on a shared mapping). */
static unsigned resident_after_open(const char *path)
{
	int fd = open(path, O_RDONLY);
	MNT_OK(fd);
	void *map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert(map != MAP_FAILED);
	long page = sysconf(_SC_PAGESIZE);
	unsigned pages = FILE_BYTES / (unsigned)page;
	unsigned char vec[FILE_BYTES / 512];
	MNT_OK(mincore(map, FILE_BYTES, vec));
	unsigned resident = 0;
	for (unsigned i = 0; i < pages; i++)
		resident += vec[i] & 1;
	munmap(map, FILE_BYTES);
	close(fd);
	return resident;
}

/* stat() (the kernel's cached attributes, for a day) agrees with what the
 * daemon says now (statx with AT_STATX_FORCE_SYNC makes FUSE ask). */
static void assert_attrs_fresh(const char *path, const char *after)
{
	struct stat st;
	struct statx sx;
	MNT_OK(stat(path, &st));
	MNT_OK(statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &sx));
	ck_assert_msg(st.st_mode == sx.stx_mode && st.st_nlink == sx.stx_nlink &&
			      (uint64_t)st.st_size == sx.stx_size &&
			      (uint64_t)st.st_blocks == sx.stx_blocks,
		      "after %s: cached mode %o nlink %lu size %lld blocks %lld, daemon mode %o "
		      "nlink %u size %llu blocks %llu", after, st.st_mode, (unsigned long)st.st_nlink,
		      (long long)st.st_size, (long long)st.st_blocks, sx.stx_mode, sx.stx_nlink,
		      (unsigned long long)sx.stx_size, (unsigned long long)sx.stx_blocks);
	ck_assert_msg(st.st_atim.tv_sec == sx.stx_atime.tv_sec &&
			      st.st_atim.tv_nsec == (long)sx.stx_atime.tv_nsec &&
			      st.st_mtim.tv_sec == sx.stx_mtime.tv_sec &&
			      st.st_mtim.tv_nsec == (long)sx.stx_mtime.tv_nsec &&
			      st.st_ctim.tv_sec == sx.stx_ctime.tv_sec &&
			      st.st_ctim.tv_nsec == (long)sx.stx_ctime.tv_nsec,
		      "after %s: cached timestamps differ from the daemon's", after);
}

/* A file of FILE_BYTES read once, so its pages are cached and (relatime)
 * its atime is newer than its mtime and ctime. */
static const char *cached_file(struct mnt *m, const char *name)
{
	const char *f = mnt_path(m, "%s", name);
	mnt_write_pattern(f, FILE_BYTES, 7, 0644);
	usleep(20 * 1000);
	read_whole(f);
	return f;
}

START_TEST(test_relatime_keeps_pages_across_opens)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL); /* relatime */
	const char *f = cached_file(&m, "f");
	long page = sysconf(_SC_PAGESIZE);
	ck_assert_uint_eq(resident_after_open(f), FILE_BYTES / (unsigned)page);
	struct timespec before = mnt_atime_of(f);
	read_whole(f); /* from the cache: nothing owed to atime */
	ck_assert(mnt_ts_cmp(mnt_atime_of(f), before) == 0);
	mnt_expect_pattern(f, FILE_BYTES, 7);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_strictatime_drops_pages_at_open)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "strictatime");
	const char *f = cached_file(&m, "f");
	ck_assert_uint_eq(resident_after_open(f), 0);
	/* so each open's first read reaches the daemon and moves atime */
	struct timespec before = mnt_atime_of(f);
	usleep(20 * 1000);
	read_whole(f);
	ck_assert(mnt_ts_cmp(mnt_atime_of(f), before) > 0);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_noatime_keeps_pages)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "noatime");
	const char *f = cached_file(&m, "f");
	long page = sysconf(_SC_PAGESIZE);
	ck_assert_uint_eq(resident_after_open(f), FILE_BYTES / (unsigned)page);
	mnt_finish(&m);
}
END_TEST

/* relatime with the cache kept: new mail written after the last read must
 * still be noticed by the next reader (atime moves past mtime). */
START_TEST(test_mutt_case_with_kept_cache)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	mnt_expect_mutt_case(cached_file(&m, "mbox"));
	mnt_finish(&m);
}
END_TEST

START_TEST(test_write_seen_through_other_open_and_mapping)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = cached_file(&m, "f");
	int reader = open(f, O_RDONLY);
	MNT_OK(reader);
	char *map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, reader, 0);
	ck_assert(map != MAP_FAILED);
	char old[16];
	memcpy(old, map + 4096, sizeof(old)); /* mapped and cached */
	int writer = open(f, O_WRONLY);
	MNT_OK(writer);
	mnt_pwrite_all(writer, "fresh bytes here", 16, 4096);
	char got[16];
	ck_assert_int_eq(pread(reader, got, 16, 4096), 16);
	ck_assert_mem_eq(got, "fresh bytes here", 16);
	ck_assert_mem_eq(map + 4096, "fresh bytes here", 16);
	close(writer);
	/* and through a new open, after the daemon wrote it back */
	int again = open(f, O_RDONLY);
	MNT_OK(again);
	MNT_OK(fsync(again));
	ck_assert_int_eq(pread(again, got, 16, 4096), 16);
	ck_assert_mem_eq(got, "fresh bytes here", 16);
	close(again);
	munmap(map, FILE_BYTES);
	close(reader);
	mnt_finish(&m);
}
END_TEST

static bool all_zero(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

START_TEST(test_truncate_and_punch_never_stale)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "noatime"); /* the cache is kept at every open */
	const char *f = cached_file(&m, "f");
	int fd = open(f, O_RDWR);
	MNT_OK(fd);
	char buf[8192];
	/* punch the second 8 KiB: the cached pages must read as zeros */
	MNT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 8192));
	int other = open(f, O_RDONLY);
	MNT_OK(other);
	ck_assert_int_eq(pread(other, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	ck_assert(all_zero(buf, sizeof(buf)));
	/* zero-range the third */
	MNT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 16384, 8192));
	ck_assert_int_eq(pread(other, buf, sizeof(buf), 16384), (ssize_t)sizeof(buf));
	ck_assert(all_zero(buf, sizeof(buf)));
	/* shrink and grow again: the old tail must not come back */
	MNT_OK(ftruncate(fd, 100));
	MNT_OK(ftruncate(fd, FILE_BYTES));
	ck_assert_int_eq(pread(other, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert(all_zero(buf + 100, sizeof(buf) - 100));
	close(other);
	close(fd);
	/* and after a remount (nothing cached) the same */
	mnt_stop(&m);
	mnt_start(&m, "noatime");
	fd = open(f, O_RDONLY);
	MNT_OK(fd);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	ck_assert(all_zero(buf, sizeof(buf)));
	close(fd);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_absent_names_until_created)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *a = mnt_path(&m, "a");
	struct stat st;
	ck_assert_int_eq(stat(a, &st), -1);
	ck_assert_int_eq(errno, ENOENT); /* remembered as absent now */
	mnt_make_file(a, 0644, "x");
	MNT_OK(stat(a, &st));
	MNT_OK(unlink(a));
	ck_assert_int_eq(stat(a, &st), -1);
	/* a rename onto the remembered-absent name, and a hard link */
	const char *b = mnt_path(&m, "b");
	mnt_make_file(b, 0644, "y");
	MNT_OK(rename(b, a));
	MNT_OK(stat(a, &st));
	MNT_OK(link(a, b));
	MNT_OK(stat(b, &st));
	ck_assert_uint_eq(st.st_nlink, 2);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	MNT_OK(stat(mnt_path(&m, "d"), &st));
	mnt_finish(&m);
}
END_TEST

/* An access ACL whose mask grants rwx: the daemon derives the mode's group
 * bits from it (the change is the daemon's own, the kernel must not go on
 * showing the old mode from its cache). */
START_TEST(test_mode_from_acl_seen_at_once)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	const char *f = mnt_path(&m, "f");
	mnt_make_file(f, 0600, "x");
	struct stat st;
	MNT_OK(stat(f, &st));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* Linux xattr ACL: version 2, then (tag, perm, id) entries. */
	struct {
		uint32_t version;
		struct { uint16_t tag, perm; uint32_t id; } e[4];
	} acl = { 2, { { 0x01, 6, ~0u }, { 0x04, 6, ~0u }, { 0x10, 7, ~0u }, { 0x20, 4, ~0u } } };
	MNT_OK(setxattr(f, "system.posix_acl_access", &acl, sizeof(acl), 0));
	MNT_OK(stat(f, &st));
	ck_assert_msg((st.st_mode & 07777) == 0674, "mode %o after the ACL", st.st_mode & 07777);
	mnt_finish(&m);
}
END_TEST

/* Delayed allocation: st_blocks counts the reserved data blocks until
 * writeback allocates them, which the daemon does on its own, in fsync or
 * in its writeback thread; a file of scattered pieces then also needs an
 * extent tree block, which st_blocks shows only from then on. */
static void write_scattered(const char *path, int *fd_out)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	MNT_OK(fd);
	char piece[4096];
	memset(piece, 'b', sizeof(piece));
	for (int i = 0; i < 24; i++)
		ck_assert_int_eq(pwrite(fd, piece, sizeof(piece), (off_t)i * 2 * 4096),
				 (ssize_t)sizeof(piece));
	struct stat st;
	MNT_OK(stat(path, &st)); /* the kernel caches the attributes now */
	*fd_out = fd;
}

START_TEST(test_blocks_fresh_after_writeback)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "commit=1");
	const char *f = mnt_path(&m, "f");
	int fd;
	write_scattered(f, &fd);
	struct stat before;
	MNT_OK(stat(f, &before));
	MNT_OK(fsync(fd));
	close(fd);
	assert_attrs_fresh(f, "fsync"); /* stat() first: statx refreshes the cache */
	struct statx sx;
	MNT_OK(statx(AT_FDCWD, f, AT_STATX_FORCE_SYNC, STATX_BLOCKS, &sx));
	ck_assert_msg(sx.stx_blocks > (uint64_t)before.st_blocks,
		      "control: writeback did not change st_blocks (%llu, was %lld)",
		      (unsigned long long)sx.stx_blocks, (long long)before.st_blocks);
	/* Two more files left to the writeback thread (commit=1).  h shows
	 * when the thread has run (statx with AT_STATX_FORCE_SYNC refreshes
	 * what the kernel caches, so it must not touch g); then g's cached
	 * attributes get up to 2 s for the daemon's notification. */
	const char *g = mnt_path(&m, "g");
	write_scattered(g, &fd);
	close(fd);
	const char *h = mnt_path(&m, "h");
	write_scattered(h, &fd);
	close(fd);
	struct stat cached;
	MNT_OK(stat(g, &cached));
	blkcnt_t delayed = cached.st_blocks;
	for (int i = 0; i < 1000; i++) {
		MNT_OK(statx(AT_FDCWD, h, AT_STATX_FORCE_SYNC, STATX_BLOCKS, &sx));
		if (sx.stx_blocks > (uint64_t)delayed)
			break;
		usleep(10 * 1000);
	}
	ck_assert_msg(sx.stx_blocks > (uint64_t)delayed,
		      "the writeback thread did not write h back in 10 s");
	for (int i = 0; i < 200 && cached.st_blocks == delayed; i++) {
		usleep(10 * 1000);
		MNT_OK(stat(g, &cached));
	}
	assert_attrs_fresh(g, "background writeback");
	mnt_finish(&m);
}
END_TEST

/* strictatime: every read moves atime, and the read is the daemon's. */
START_TEST(test_atime_fresh_after_read)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "strictatime");
	const char *f = mnt_path(&m, "f");
	mnt_write_pattern(f, FILE_BYTES, 3, 0644);
	assert_attrs_fresh(f, "the write");
	struct timespec before = mnt_atime_of(f);
	usleep(20 * 1000);
	read_whole(f);
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(f), before) > 0, "strictatime: a read left atime");
	assert_attrs_fresh(f, "a read");
	struct timespec dir_before = mnt_atime_of(mnt_path(&m, "."));
	usleep(20 * 1000);
	DIR *d = opendir(mnt_path(&m, "."));
	ck_assert(d != NULL);
	while (readdir(d))
		;
	closedir(d);
	assert_attrs_fresh(mnt_path(&m, "."), "readdir");
	ck_assert_msg(mnt_ts_cmp(mnt_atime_of(mnt_path(&m, ".")), dir_before) > 0,
		      "strictatime: readdir left the directory's atime");
	mnt_finish(&m);
}
END_TEST

/* The mount's readahead window (/sys/class/bdi/MAJ:MIN/read_ahead_kb):
 * the daemon's default, or -o read_ahead_kb=; root only.  A daemon in the
 * foreground (-f, as the tests run it) sets it before it answers INIT,
 * so it is there once the mount is live; this still allows 2 s. */
static unsigned read_ahead_now(const char *mountpoint)
{
	struct stat st;
	MNT_OK(stat(mountpoint, &st));
	char path[96];
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	unsigned kb = 0;
	ck_assert_int_eq(fscanf(f, "%u", &kb), 1);
	fclose(f);
	return kb;
}

static unsigned read_ahead_of(const char *mountpoint, unsigned want)
{
	unsigned kb = 0;
	for (int i = 0; i < 200 && kb != want; i++) {
		if (i)
			usleep(10 * 1000);
		kb = read_ahead_now(mountpoint);
	}
	return kb;
}

START_TEST(test_read_ahead_window)
{
	if (geteuid() != 0) {
		printf("SKIP test_read_ahead_window: only root may set a mount's readahead\n");
		return;
	}
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	char sysfs[96];
	struct stat st;
	MNT_OK(stat(m.mountpoint, &st));
	snprintf(sysfs, sizeof(sysfs), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	if (access(sysfs, W_OK) != 0) {
		printf("SKIP test_read_ahead_window: %s is not writable here (%s)\n", sysfs,
		       strerror(errno));
		mnt_finish(&m);
		return;
	}
	ck_assert_uint_eq(read_ahead_of(m.mountpoint, 4096), 4096);
	mnt_stop(&m);
	mnt_start(&m, "read_ahead_kb=256");
	ck_assert_uint_eq(read_ahead_of(m.mountpoint, 256), 256);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted cache");
	TCase *tc = tcase_create("cache");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_relatime_keeps_pages_across_opens);
	tcase_add_test(tc, test_strictatime_drops_pages_at_open);
	tcase_add_test(tc, test_noatime_keeps_pages);
	tcase_add_test(tc, test_mutt_case_with_kept_cache);
	tcase_add_test(tc, test_write_seen_through_other_open_and_mapping);
	tcase_add_test(tc, test_truncate_and_punch_never_stale);
	tcase_add_test(tc, test_absent_names_until_created);
	tcase_add_test(tc, test_mode_from_acl_seen_at_once);
	tcase_add_test(tc, test_blocks_fresh_after_writeback);
	tcase_add_test(tc, test_atime_fresh_after_read);
	tcase_add_test(tc, test_read_ahead_window);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
