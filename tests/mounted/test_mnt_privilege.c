/*
 * test_mnt_privilege.c - what an ordinary user may see and change on a
 * mount shared with it (-o allow_other), as ext4 decides (issue 36,
 * finding 9): listxattr shows trusted.* names only to CAP_SYS_ADMIN, and
 * the data-journaling flag (chattr +j) needs CAP_SYS_RESOURCE even on the
 * user's own file.
 *
 * The daemon runs as root; each step as the user runs in a child that
 * drops to `nobody` (uid and gid 65534, no groups, no capabilities) and
 * reports by exit status, so the assertions stay in the test process.
 * The controls run as root: the same calls see and change what the user
 * may not.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define NOBODY 65534u

/* Runs fn(arg) in a child as nobody; returns its exit status (0: as
 * expected; otherwise a code saying which step differed). */
static int as_nobody(int (*fn)(const char *arg), const char *arg)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(100);
		_exit(fn(arg));
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Does the list of names (listxattr's) hold name? */
static bool list_has(const char *list, ssize_t len, const char *name)
{
	for (ssize_t pos = 0; pos < len; pos += (ssize_t)strlen(list + pos) + 1)
		if (strcmp(list + pos, name) == 0)
			return true;
	return false;
}

/* As nobody: the list has user.note and not trusted.secret, and the size
 * asked first is the size given. */
static int user_lists(const char *path)
{
	char list[1024];
	ssize_t size = listxattr(path, NULL, 0);
	ssize_t n = listxattr(path, list, sizeof(list));
	if (n < 0)
		return 1;
	if (!list_has(list, n, "user.note"))
		return 2;
	if (list_has(list, n, "trusted.secret"))
		return 3; /* before the fix */
	if (size != n)
		return 4;
	char small[4];
	if (listxattr(path, small, sizeof(small)) != -1 || errno != ERANGE)
		return 5;
	return 0;
}

static int setflags_fd(const char *path, unsigned flags)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	int rc = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static unsigned getflags(const char *path)
{
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	unsigned flags = 0;
	MNT_OK(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	close(fd);
	return flags;
}

/* As nobody, the owner: +j refused with EPERM, +d taken. */
static int user_chattr(const char *path)
{
	if (setflags_fd(path, FS_JOURNAL_DATA_FL) != -1)
		return 1; /* before the fix */
	if (errno != EPERM)
		return 2;
	if (setflags_fd(path, FS_NODUMP_FL) != 0)
		return 3;
	return 0;
}

/* As nobody, the owner of a file root flagged j: clearing j is refused
 * too, keeping it while setting d is not a change of j. */
static int user_clear_j(const char *path)
{
	if (setflags_fd(path, 0) != -1)
		return 1;
	if (errno != EPERM)
		return 2;
	if (setflags_fd(path, FS_JOURNAL_DATA_FL | FS_NODUMP_FL) != 0)
		return 3;
	return 0;
}

/* The user can reach the mount: the directories above it (0700 from
 * mkdtemp) searchable, the mount's root open to all. */
static void reachable(struct mnt *m)
{
	MNT_OK(chmod(mnt_root(), 0711));
	MNT_OK(chmod(m->dir, 0711));
	MNT_OK(chmod(m->mountpoint, 0755));
}

START_TEST(test_trusted_names_listed_only_to_cap_sys_admin)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other");
	const char *f = mnt_path(&m, "rootfile");
	mnt_make_file(f, 0644, "x");
	MNT_OK(setxattr(f, "user.note", "u", 1, 0));
	MNT_OK(setxattr(f, "trusted.secret", "t", 1, 0));
	reachable(&m);
	/* the control: root sees both */
	char list[1024];
	ssize_t n = listxattr(f, list, sizeof(list));
	MNT_OK(n);
	ck_assert(list_has(list, n, "user.note") && list_has(list, n, "trusted.secret"));
	ck_assert_int_eq(listxattr(f, NULL, 0), n);
	ck_assert_int_eq(as_nobody(user_lists, f), 0);
	/* a list with only trusted names is empty to the user */
	const char *g = mnt_path(&m, "onlytrusted");
	mnt_make_file(g, 0644, "y");
	MNT_OK(setxattr(g, "trusted.a", "1", 1, 0));
	ck_assert_int_eq(as_nobody(user_lists, g), 2); /* no user.note: the list was read */
	mnt_finish(&m);
}
END_TEST

START_TEST(test_journal_flag_needs_cap_sys_resource)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "allow_other");
	reachable(&m);
	const char *f = mnt_path(&m, "userfile");
	mnt_make_file(f, 0644, "x");
	MNT_OK(chown(f, NOBODY, NOBODY));
	ck_assert_int_eq(as_nobody(user_chattr, f), 0);
	ck_assert_uint_eq(getflags(f), FS_NODUMP_FL);
	/* the control: root (CAP_SYS_ADMIN here) sets it */
	MNT_OK(setflags_fd(f, FS_JOURNAL_DATA_FL));
	ck_assert_uint_eq(getflags(f), FS_JOURNAL_DATA_FL);
	ck_assert_int_eq(as_nobody(user_clear_j, f), 0);
	ck_assert_uint_eq(getflags(f), FS_JOURNAL_DATA_FL | FS_NODUMP_FL);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted privilege");
	TCase *tc = tcase_create("privilege");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_trusted_names_listed_only_to_cap_sys_admin);
	tcase_add_test(tc, test_journal_flag_needs_cap_sys_resource);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
