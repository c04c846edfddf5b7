/*
 * main.c - ordfsctl: ask a mounted ordfs daemon to do something now.
 *
 * Owns: the command line of ordfsctl.  Commands:
 *   sync MOUNTPOINT   write back all data, commit and flush the image
 *                     (what sync(1) cannot do for a FUSE filesystem).
 * Rules: talks to the daemon only through the ioctls of ordfs_ioctl.h on
 * a file or directory of the mount; one line on error; exit 0 on
 * success, 1 if the daemon reported an error, 2 for a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ordfs_ioctl.h"

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

static void usage(FILE *out)
{
	fprintf(out, "usage: ordfsctl sync MOUNTPOINT\n"
		     "  sync  write back all dirty data, commit the journal and flush the\n"
		     "        image now (sync(1) does not reach FUSE filesystems; without\n"
		     "        this, data waits for the next periodic commit)\n");
}

static int cmd_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ordfsctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = ioctl(fd, ORDFS_IOC_SYNC);
	int saved = errno;
	close(fd);
	if (rc != 0) {
		if (saved == ENOTTY || saved == EINVAL || saved == ENOSYS)
			fprintf(stderr, "ordfsctl: %s: not on a mounted ordfs\n", path);
		else
			fprintf(stderr, "ordfsctl: %s: sync failed: %s\n", path, strerror(saved));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("ordfsctl %s\n", ORDFS_PACKAGE_VERSION);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "sync") == 0)
		return cmd_sync(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "sync") != 0)
		fprintf(stderr, "ordfsctl: unknown command '%s' (see --help)\n", argv[1]);
	else
		fprintf(stderr, "ordfsctl: usage: ordfsctl sync MOUNTPOINT\n");
	return 2;
}
