/*
 * utab.c - makes umount(8) wait for this daemon.
 *
 * The kernel does not wait for a FUSE daemon at umount, and umount(8) runs
 * a helper only when libmount knows the mount's type or a `helper=` option
 * for it; for a FUSE mount it goes by statfs ("fuse") unless its own table
 * of userspace options (utab) names a helper.  So once the mount is live,
 * a daemon running as root records `helper=ordfs` for it there, with
 * `mount --fake --internal-only` (no syscall, no helper: just the table),
 * and umount(8) then runs umount.ordfs, which unmounts and waits until the
 * daemon has closed the image (tools/umount/main.c).
 *
 * Rules: best effort (a failure is logged by the caller and umount still
 * works, without the wait); only when the helper is installed where
 * umount(8) looks (ORDFS_HELPER_DIR); never while holding a lock the
 * filesystem needs, since `mount` may look at the mount point.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "utab.h"

#ifndef ORDFS_HELPER_DIR
#define ORDFS_HELPER_DIR "/sbin"
#endif

extern char **environ;

int utab_register_umount_helper(const char *source, const char *mountpoint)
{
	char helper[PATH_MAX];
	snprintf(helper, sizeof(helper), "%s/umount.ordfs", ORDFS_HELPER_DIR);
	if (geteuid() != 0 || access(helper, X_OK) != 0)
		return 0; /* nothing to register, or no right to */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = { "mount", "--fake", "--internal-only", "--no-canonicalize",
			 "-t", "fuse.ordfs", "-o", "helper=ordfs", "--",
			 (char *)source, (char *)mountpoint, NULL };
	pid_t pid;
	int err = posix_spawnp(&pid, "mount", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return -err;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}
