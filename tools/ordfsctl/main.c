/*
 * main.c - ordfsctl: ask a mounted ordfs daemon to do something now, or
 * what it has been doing.
 *
 * Owns: the command line of ordfsctl.  Commands:
 *   sync MOUNTPOINT           write back all data, commit and flush the image
 *                             (what sync(1) cannot do for a FUSE filesystem).
 *   trim MOUNTPOINT           discard every free block (fstrim for the
 *                             image: it shrinks on the host).
 *   stats [--json] MOUNTPOINT the options in force, journal use, commits,
 *                             flushes and their state, dirty data, fsync
 *                             latency since mount (stats_print.c).
 *   remount MOUNTPOINT OPTS   change ordfs's options live, as mount -o
 *                             remount (src/daemon/remount_client.c): what a
 *                             user, who cannot run mount(8) on the mount,
 *                             uses; as root it sets the kernel's flags too.
 *   scrub MOUNTPOINT          check the mounted filesystem's metadata and
 *                             cross-references while it stays in use
 *                             (check/scrub.h); prints what it found.
 * Rules: talks to the daemon only through the ioctls of ordfs_ioctl.h on
 * a file or directory of the mount; one line on error; exit 0 on
 * success, 1 if the daemon reported an error, 2 for a usage error, and
 * for scrub 4 when it found problems (as fsck.ordfs: errors left
 * uncorrected; fsck.ordfs repairs them once the filesystem is unmounted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ordfs_ioctl.h"
#include "stats_print.h"
#include "daemon/remount_client.h"

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

static void usage(FILE *out)
{
	fprintf(out, "usage: ordfsctl sync MOUNTPOINT\n"
		     "       ordfsctl trim MOUNTPOINT\n"
		     "       ordfsctl stats [--json] MOUNTPOINT\n"
		     "       ordfsctl remount MOUNTPOINT OPTIONS\n"
		     "       ordfsctl scrub MOUNTPOINT\n"
		     "  sync   write back all dirty data, commit the journal and flush the\n"
		     "         image now (sync(1) does not reach FUSE filesystems; without\n"
		     "         this, data waits for the next periodic commit)\n"
		     "  trim   discard every free block of the image (like fstrim): an\n"
		     "         image file gets holes and takes less space on the host\n"
		     "  stats  mount options in force, journal size and use, commits\n"
		     "         (waited for vs periodic), flushes, flush failures and state,\n"
		     "         dirty data and its limit, fsync latency since mount;\n"
		     "         --json for programs\n"
		     "  remount  change options of the mounted filesystem now, as\n"
		     "         mount -o remount does: ro, rw, commit=, barrier, nobarrier,\n"
		     "         discard, nodiscard, errors=, flush_error=, relatime,\n"
		     "         strictatime, noatime, nodiratime, lazytime, journal_ioprio=\n"
		     "         (root, or the user who mounted it)\n"
		     "  scrub  check the metadata of the mounted filesystem while it stays\n"
		     "         in use (inode and block bitmaps against inodes and extent\n"
		     "         trees, blocks mapped twice, directory entries), at low\n"
		     "         priority; problems are logged and recorded for fsck.ordfs;\n"
		     "         exit 4 if any were found (root, or the user who mounted it)\n");
}

/* ioctl `cmd` on path; prints why it failed.  0 or 1. */
static int ask(const char *path, unsigned long cmd, void *arg, const char *what)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ordfsctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = ioctl(fd, cmd, arg);
	int saved = errno;
	close(fd);
	if (rc != 0) {
		if (saved == ENOTTY || saved == EINVAL || saved == ENOSYS)
			fprintf(stderr, "ordfsctl: %s: not on a mounted ordfs\n", path);
		else
			fprintf(stderr, "ordfsctl: %s: %s failed: %s\n", path, what, strerror(saved));
		return 1;
	}
	return 0;
}

static int cmd_trim(const char *path)
{
	struct ordfs_trim t = { 0 };
	if (ask(path, ORDFS_IOC_TRIM, &t, "trim"))
		return 1;
	printf("%s: %.1f MiB (%llu bytes) trimmed\n", path,
	       (double)t.trimmed_bytes / (1024.0 * 1024.0), (unsigned long long)t.trimmed_bytes);
	return 0;
}

static int cmd_scrub(const char *path)
{
	struct ordfs_scrub sc;
	memset(&sc, 0, sizeof(sc));
	if (ask(path, ORDFS_IOC_SCRUB, &sc, "scrub"))
		return 1;
	for (uint32_t i = 0; i < sc.lines && i < ORDFS_SCRUB_LINES; i++)
		printf("%s: %.*s\n", path, ORDFS_SCRUB_LINE_LEN, sc.line[i]);
	if (sc.problems > sc.lines)
		printf("%s: ... and %u more (the daemon's log has them all)\n", path,
		       sc.problems - sc.lines);
	printf("%s: scrubbed %llu inodes (%llu directories), %llu blocks in %.2f s: ", path,
	       (unsigned long long)sc.inodes, (unsigned long long)sc.dirs,
	       (unsigned long long)sc.blocks, (double)sc.elapsed_ns / 1e9);
	if (!sc.problems) {
		printf("clean\n");
		return 0;
	}
	printf("%u problem%s; unmount and run fsck.ordfs\n", sc.problems,
	       sc.problems == 1 ? "" : "s");
	return 4;
}

static int cmd_stats(const char *path, bool json)
{
	struct ordfs_stats st;
	memset(&st, 0, sizeof(st));
	if (ask(path, ORDFS_IOC_STATS, &st, "stats"))
		return 1;
	if (st.version != ORDFS_STATS_VERSION) {
		fprintf(stderr, "ordfsctl: %s: the daemon speaks stats version %u, this ordfsctl "
			"version %u\n", path, st.version, ORDFS_STATS_VERSION);
		return 1;
	}
	st.options[sizeof(st.options) - 1] = '\0';
	if (json)
		stats_print_json(stdout, &st);
	else
		stats_print_text(stdout, path, &st);
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
		return ask(argv[2], ORDFS_IOC_SYNC, NULL, "sync");
	if (argc == 3 && strcmp(argv[1], "trim") == 0)
		return cmd_trim(argv[2]);
	if (argc == 3 && strcmp(argv[1], "scrub") == 0)
		return cmd_scrub(argv[2]);
	if (argc == 4 && strcmp(argv[1], "remount") == 0) {
		char msg[1024];
		if (remount_client(argv[2], argv[3], false, msg, sizeof(msg)) != 0) {
			fprintf(stderr, "ordfsctl: remount %s: %s\n", argv[2], msg);
			return 1;
		}
		printf("%s: %s\n", argv[2], msg);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "stats") == 0) {
		bool json = false;
		const char *path = NULL;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--json") == 0)
				json = true;
			else if (!path && argv[i][0] != '-')
				path = argv[i];
			else
				path = NULL, i = argc;
		}
		if (path)
			return cmd_stats(path, json);
		fprintf(stderr, "ordfsctl: usage: ordfsctl stats [--json] MOUNTPOINT\n");
		return 2;
	}
	if (argc >= 2 && strcmp(argv[1], "sync") != 0 && strcmp(argv[1], "stats") != 0 &&
	    strcmp(argv[1], "trim") != 0 && strcmp(argv[1], "remount") != 0 &&
	    strcmp(argv[1], "scrub") != 0)
		fprintf(stderr, "ordfsctl: unknown command '%s' (see --help)\n", argv[1]);
	else
		fprintf(stderr, "ordfsctl: usage: ordfsctl sync|trim|scrub MOUNTPOINT | stats [--json] "
			"MOUNTPOINT | remount MOUNTPOINT OPTIONS\n");
	return 2;
}
