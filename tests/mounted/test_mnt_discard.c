/*
 * test_mnt_discard.c - freed blocks go back to the host: with -o discard
 * as they are freed, without it at `ordfsctl trim`; the image file takes
 * less space on the host (st_blocks) and nothing in use is touched, even
 * while writers allocate during the trim.  Trim is for the mount's owner
 * or CAP_SYS_ADMIN (as FITRIM): another user of an allow_other mount gets
 * EPERM, while stats and sync stay open to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

#define MiB (1024u * 1024u)

static uint64_t host_bytes(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return (uint64_t)st.st_blocks * 512u;
}

static void ioctl_on(struct mnt *m, unsigned long cmd, void *arg)
{
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	MNT_OK(ioctl(fd, cmd, arg));
	close(fd);
}

START_TEST(test_online_discard_shrinks_the_image)
{
	struct mnt m;
	mnt_setup(&m, "256M");
	mnt_start(&m, "discard");
	mnt_write_pattern(mnt_path(&m, "keep"), 3 * MiB, 5, 0644);
	mnt_write_pattern(mnt_path(&m, "big"), 40 * MiB, 6, 0644);
	ioctl_on(&m, ORDFS_IOC_SYNC, NULL);
	uint64_t full = host_bytes(m.image);
	MNT_OK(unlink(mnt_path(&m, "big")));
	ioctl_on(&m, ORDFS_IOC_SYNC, NULL); /* commits the free: discarded then */
	uint64_t after = host_bytes(m.image);
	printf("discard: image %llu KiB -> %llu KiB on the host\n",
	       (unsigned long long)(full >> 10), (unsigned long long)(after >> 10));
	ck_assert_msg(after + 36 * MiB <= full, "the image did not shrink: %llu -> %llu",
		      (unsigned long long)full, (unsigned long long)after);
	mnt_expect_pattern(mnt_path(&m, "keep"), 3 * MiB, 5);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_finish(&m);
}
END_TEST

START_TEST(test_trim_gives_back_free_blocks_only)
{
	struct mnt m;
	mnt_setup(&m, "256M");
	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "keep"), 3 * MiB, 7, 0644);
	mnt_write_pattern(mnt_path(&m, "big"), 40 * MiB, 8, 0644);
	ioctl_on(&m, ORDFS_IOC_SYNC, NULL);
	uint64_t full = host_bytes(m.image);
	MNT_OK(unlink(mnt_path(&m, "big")));
	ioctl_on(&m, ORDFS_IOC_SYNC, NULL);
	uint64_t freed = host_bytes(m.image);
	ck_assert_msg(freed + 4 * MiB >= full, "without -o discard nothing is punched at free");

	/* Writers allocate and fsync while trims run: every file must come
	 * back exactly (a trim that punched a block being allocated would
	 * leave zeros). */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		static uint8_t buf[64 * 1024 + 150 * 517];
		for (int i = 0; i < 150; i++) {
			size_t len = 64 * 1024 + (size_t)i * 517;
			int fd = open(mnt_path(&m, "w%03d", i), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			mnt_pattern_fill(buf, len, 1000 + (uint64_t)i, 0);
			if (fd < 0 || write(fd, buf, len) != (ssize_t)len || fsync(fd) != 0)
				_exit(1);
			close(fd); /* fsync: allocated now, while trims run */
		}
		_exit(0);
	}
	uint64_t trimmed_total = 0;
	unsigned rounds = 0;
	int status;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct ordfs_trim t = { 0 };
		ioctl_on(&m, ORDFS_IOC_TRIM, &t);
		trimmed_total += t.trimmed_bytes;
		rounds++;
	}
	printf("trim: %u trims while the writer ran\n", rounds);
	ck_assert_uint_ge(rounds, 2);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer failed: %#x", status);
	struct ordfs_trim t = { 0 };
	ioctl_on(&m, ORDFS_IOC_TRIM, &t);
	uint64_t after = host_bytes(m.image);
	printf("trim: %llu MiB reported by the last trim (%llu MiB in all); image %llu KiB -> "
	       "%llu KiB\n", (unsigned long long)(t.trimmed_bytes / MiB),
	       (unsigned long long)((trimmed_total + t.trimmed_bytes) / MiB),
	       (unsigned long long)(freed >> 10), (unsigned long long)(after >> 10));
	uint64_t written = 0;
	for (int i = 0; i < 150; i++) {
		mnt_expect_pattern(mnt_path(&m, "w%03d", i), 64 * 1024 + (size_t)i * 517,
				   1000 + (uint64_t)i);
		written += 64 * 1024 + (uint64_t)i * 517;
	}
	ck_assert_uint_ge(t.trimmed_bytes, 100 * MiB); /* most of 256 MiB is free */
	/* the 40 MiB freed went back to the host; the writer's files came */
	ck_assert_msg(after + 40 * MiB <= freed + written + 4 * MiB,
		      "the image did not shrink: %llu -> %llu KiB with %llu KiB written",
		      (unsigned long long)(freed >> 10), (unsigned long long)(after >> 10),
		      (unsigned long long)(written >> 10));
	mnt_expect_pattern(mnt_path(&m, "keep"), 3 * MiB, 7);
	mnt_stop(&m);
	mnt_check(&m);
	/* and after a remount */
	mnt_start(&m, NULL);
	for (int i = 0; i < 150; i += 7)
		mnt_expect_pattern(mnt_path(&m, "w%03d", i), 64 * 1024 + (size_t)i * 517,
				   1000 + (uint64_t)i);
	mnt_stop(&m);
	mnt_finish(&m);
}
END_TEST

/* In a child that becomes `nobody` (no capabilities left): the errno of
 * each ioctl on the mount's root, as the exit status's bits: bit 0 TRIM
 * gave EPERM, bit 1 STATS worked, bit 2 SYNC worked (7 when all hold). */
static int ioctls_as_nobody(struct mnt *m)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* opened first: the test's directories are 0700; every ioctl
		 * still carries nobody's credentials */
		int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			_exit(101);
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0)
			_exit(100);
		struct ordfs_trim t = { 0 };
		struct ordfs_stats st;
		int bits = 0;
		if (ioctl(fd, ORDFS_IOC_TRIM, &t) != 0 && errno == EPERM)
			bits |= 1;
		if (ioctl(fd, ORDFS_IOC_STATS, &st) == 0)
			bits |= 2;
		if (ioctl(fd, ORDFS_IOC_SYNC, NULL) == 0)
			bits |= 4;
		_exit(bits);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_trim_is_for_the_owner_or_cap_sys_admin)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other"); /* other users may use it */
	mnt_write_pattern(mnt_path(&m, "big"), 8 * MiB, 9, 0644);
	MNT_OK(unlink(mnt_path(&m, "big")));
	ioctl_on(&m, ORDFS_IOC_SYNC, NULL);
	int bits = ioctls_as_nobody(&m);
	ck_assert_msg(bits == 7, "as nobody: trim %s, stats %s, sync %s (status %d)",
		      bits & 1 ? "refused" : "NOT refused with EPERM", bits & 2 ? "ok" : "FAILED",
		      bits & 4 ? "ok" : "FAILED", bits);
	/* the owner (root here) still trims */
	struct ordfs_trim t = { 0 };
	ioctl_on(&m, ORDFS_IOC_TRIM, &t);
	ck_assert_uint_ge(t.trimmed_bytes, 8 * MiB);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted discard");
	TCase *tc = tcase_create("discard");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_online_discard_shrinks_the_image);
	tcase_add_test(tc, test_trim_gives_back_free_blocks_only);
	tcase_add_test(tc, test_trim_is_for_the_owner_or_cap_sys_admin);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
