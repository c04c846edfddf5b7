/*
 * test_mnt_shutdown.c - FS_IOC_SHUTDOWN on the real daemon
 * (design/remount-shutdown.md, "Shutdown"), with each of its three
 * flags:
 *  - the daemon honours the flags the caller passed (it reads them from the
 *    caller's memory: FUSE carries no argument in for an _IOR number), and
 *    says which in its log;
 *  - afterwards every operation that reaches the daemon fails with EIO
 *    (open, create, mkdir, unlink, write and fsync on a file already
 *    open), and not one byte of the image changes (but the owner
 *    record's heartbeat: the lock stays held until the unmount);
 *  - the unmount succeeds and leaves the journal for the next mount, which
 *    replays it: every fsync'd file intact, and what each flag promises
 *    there (SYNC: unsynced data too; LOGFLUSH: the names made before it,
 *    their data if it was written back), and fsck clean after;
 *  - kill -9 right after a shutdown, fsck.ordfs -fy, mount: every fsync'd
 *    file intact;
 *  - a caller without CAP_SYS_ADMIN who is not the mount's owner gets
 *    EPERM and the mount goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

#define SYNCED 8          /* fsync'd files, 40 KiB each */
#define SYNCED_LEN (40u * 1024u)
#define UNSYNCED_LEN (100u * 1024u)

static const char *const how_name[] = { "SYNC (0)", "LOGFLUSH (1)", "NOLOGFLUSH (2)" };
static const char *const how_log[] = {
	"shut down after writing back everything",
	"shut down after committing the journal",
	"shut down without committing the journal",
};

/* ioctl(FS_IOC_SHUTDOWN) on dfd, the mountpoint opened before (after
 * the shutdown it cannot be opened): 0 or errno. */
static int shutdown_mount(int dfd, uint32_t flags)
{
	return ioctl(dfd, FS_IOC_SHUTDOWN, &flags) == 0 ? 0 : errno;
}

static int open_mountpoint(struct mnt *m)
{
	int fd = open(m->mountpoint, O_RDONLY | O_DIRECTORY);
	MNT_OK(fd);
	return fd;
}

/* Files written and fsync'd (the file: its data and its name). */
static void write_synced(struct mnt *m)
{
	static uint8_t buf[SYNCED_LEN];
	for (unsigned i = 0; i < SYNCED; i++) {
		const char *p = mnt_path(m, "synced%u", i);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		MNT_OK(fd);
		mnt_pattern_fill(buf, sizeof(buf), 10 + i, 0);
		mnt_write_all(fd, buf, sizeof(buf));
		MNT_OK(fsync(fd));
		MNT_OK(close(fd));
	}
}

static void expect_synced(struct mnt *m)
{
	for (unsigned i = 0; i < SYNCED; i++)
		mnt_expect_pattern(mnt_path(m, "synced%u", i), SYNCED_LEN, 10 + i);
}

/* Writes without fsync; the returned fd stays open (written through). */
static int write_unsynced(const char *path)
{
	static uint8_t buf[UNSYNCED_LEN];
	mnt_pattern_fill(buf, sizeof(buf), 77, 0);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	MNT_OK(fd);
	mnt_write_all(fd, buf, sizeof(buf));
	return fd;
}

static unsigned log_has(struct mnt *m, const char *needle)
{
	char *log = mnt_slurp(m->log, NULL);
	ck_assert(log);
	unsigned n = strstr(log, needle) != NULL;
	free(log);
	return n;
}

static void expect_eio(int rc, const char *what)
{
	ck_assert_msg(rc < 0 && errno == EIO, "%s after the shutdown: %s, not EIO", what,
		      rc < 0 ? strerror(errno) : "it worked");
}

static void shutdown_with(uint32_t how)
{
	struct mnt m;
	char name[64];
	snprintf(name, sizeof(name), "shutdown_%u", how);
	mnt_setup_named(&m, "64M", name);
	mnt_start(&m, NULL);
	write_synced(&m);
	int open_fd = write_unsynced(mnt_path(&m, "unsynced"));
	mnt_make_file(mnt_path(&m, "meta"), 0644, "made before the shutdown\n");
	MNT_OK(mkdir(mnt_path(&m, "dir"), 0755));

	int dfd = open_mountpoint(&m);
	ck_assert_int_eq(shutdown_mount(dfd, how), 0);
	ck_assert_msg(log_has(&m, how_log[how]), "%s: the daemon did not log \"%s\"",
		      how_name[how], how_log[how]);

	/* Nothing more reaches the image. */
	size_t before_len, after_len;
	char *before = mnt_slurp(m.image, &before_len);
	ck_assert(before);
	errno = 0;
	expect_eio(open(mnt_path(&m, "synced0"), O_RDONLY), "open");
	expect_eio(open(mnt_path(&m, "new"), O_WRONLY | O_CREAT, 0644), "create");
	expect_eio(mkdir(mnt_path(&m, "dir2"), 0755), "mkdir");
	expect_eio(unlink(mnt_path(&m, "synced1")), "unlink");
	static const char more[4096] = { 1 };
	expect_eio((int)pwrite(open_fd, more, sizeof(more), 0), "write");
	expect_eio(fsync(open_fd), "fsync");
	close(open_fd);
	char *after = mnt_slurp(m.image, &after_len);
	ck_assert(after);
	/* All but the owner record (the image's last 512 bytes): its
	 * heartbeat goes on, the lock that keeps others off the image until
	 * the unmount releases it. */
	ck_assert_msg(before_len == after_len && before_len > 512 &&
		      memcmp(before, after, before_len - 512) == 0,
		      "%s: the image changed after the shutdown", how_name[how]);
	free(before);
	free(after);
	/* A second shutdown is a success that changes nothing. */
	ck_assert_int_eq(shutdown_mount(dfd, FS_SHUTDOWN_FLAGS_NOLOGFLUSH), 0);
	close(dfd);

	/* The unmount works and leaves the journal to the next mount. */
	mnt_stop(&m);
	ck_assert_msg(mnt_image_in_use(&m), "%s: the unmount after the shutdown marked the image "
		      "clean", how_name[how]);
	mnt_start(&m, NULL);
	expect_synced(&m);
	if (how == FS_SHUTDOWN_FLAGS_DEFAULT)
		mnt_expect_pattern(mnt_path(&m, "unsynced"), UNSYNCED_LEN, 77);
	if (how == FS_SHUTDOWN_FLAGS_DEFAULT)
		mnt_expect_text(mnt_path(&m, "meta"), "made before the shutdown\n");
	if (how != FS_SHUTDOWN_FLAGS_NOLOGFLUSH) {
		/* LOGFLUSH commits names, not data still waiting for writeback
		 * (delayed allocation, as ext4): the file is there, empty or
		 * whole, never anything else. */
		size_t len;
		char *text = mnt_slurp(mnt_path(&m, "meta"), &len);
		ck_assert_msg(text, "%s: meta is missing after the replay", how_name[how]);
		ck_assert_msg(len == 0 || (len == 25 && memcmp(text, "made before the shutdown\n", 25) == 0),
			      "%s: meta holds %zu bytes of something else", how_name[how], len);
		free(text);
		struct stat st;
		MNT_OK(stat(mnt_path(&m, "dir"), &st));
		ck_assert(S_ISDIR(st.st_mode));
	}
	mnt_finish(&m);
}

START_TEST(test_shutdown_default_writes_back_everything)
{
	shutdown_with(FS_SHUTDOWN_FLAGS_DEFAULT);
}
END_TEST

START_TEST(test_shutdown_logflush_commits_the_journal)
{
	shutdown_with(FS_SHUTDOWN_FLAGS_LOGFLUSH);
}
END_TEST

START_TEST(test_shutdown_nologflush_stops_at_once)
{
	shutdown_with(FS_SHUTDOWN_FLAGS_NOLOGFLUSH);
}
END_TEST

/* kill -9 right after the shutdown, then fsck.ordfs -fy and a mount. */
START_TEST(test_shutdown_then_kill9)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	write_synced(&m);
	int fd = write_unsynced(mnt_path(&m, "unsynced"));
	int dfd = open_mountpoint(&m);
	ck_assert_int_eq(shutdown_mount(dfd, FS_SHUTDOWN_FLAGS_NOLOGFLUSH), 0);
	close(dfd);
	close(fd);
	mnt_kill9(&m);
	char *argv[] = { getenv("FSCK_BIN"), "-fy", m.image, NULL };
	ck_assert(argv[0]);
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status == 0 || r.status == 1, "fsck.ordfs -fy: exit %d: %s", r.status,
		      r.err);
	mnt_start(&m, NULL);
	expect_synced(&m);
	mnt_finish(&m);
}
END_TEST

/* As nobody, on a root mount with allow_other: EPERM, and the mount goes
 * on working. */
START_TEST(test_shutdown_needs_cap_sys_admin)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other");
	pid_t pid = fork();
	MNT_OK(pid);
	if (pid == 0) {
		/* opened as root (the way there is root's), used as nobody */
		int dfd = open(m.mountpoint, O_RDONLY | O_DIRECTORY);
		if (dfd < 0)
			_exit(4);
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		uint32_t flags = FS_SHUTDOWN_FLAGS_NOLOGFLUSH;
		int rc = ioctl(dfd, FS_IOC_SHUTDOWN, &flags);
		_exit(rc < 0 && errno == EPERM ? 0 : rc == 0 ? 1 : 2);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "shutdown as nobody: exit %d (1: it worked, 2: not EPERM)",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	mnt_make_file(mnt_path(&m, "after"), 0644, "still here\n");
	mnt_expect_text(mnt_path(&m, "after"), "still here\n");
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted shutdown");
	TCase *tc = tcase_create("shutdown");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_shutdown_default_writes_back_everything);
	tcase_add_test(tc, test_shutdown_logflush_commits_the_journal);
	tcase_add_test(tc, test_shutdown_nologflush_stops_at_once);
	tcase_add_test(tc, test_shutdown_then_kill9);
	tcase_add_test(tc, test_shutdown_needs_cap_sys_admin);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
