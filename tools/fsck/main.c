/*
 * main.c - fsck.ordfs: replay the journal, then check the whole image.
 *
 * Owns: the command line and exit codes (e2fsck's: 0 no errors, 1 errors
 * corrected, 4 errors left uncorrected, 8 operational error, 16 usage).
 * This first version replays (the same journal_recover the daemon uses)
 * and runs the library checker; repairs come with the fsck issue.
 * Rules: refuses an image another process holds (the daemon's flock);
 * with -n opens the image read-only and writes nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fs.h"
#include "blockdev/blockdev.h"
#include "check/check.h"
#include "journal/journal.h"

#define FSCK_OK 0
#define FSCK_CORRECTED 1
#define FSCK_UNCORRECTED 4
#define FSCK_ERROR 8
#define FSCK_USAGE 16

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

struct fsck_opts {
	bool readonly; /* -n */
	bool force;    /* -f */
	bool verbose;  /* -v */
	const char *image;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: fsck.ordfs [-n] [-y] [-p] [-f] [-v] IMAGE\n"
		     "  -n  check only: open read-only, change nothing\n"
		     "  -y, -p  replay the journal if needed (repairs come later)\n"
		     "  -f  check even if the image is marked clean\n"
		     "  -v  verbose\n"
		     "exit codes: 0 clean, 1 corrected, 4 errors left, 8 operational error,\n"
		     "16 usage error\n");
}

static int parse(int argc, char **argv, struct fsck_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(FSCK_OK);
		} else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("fsck.ordfs %s\n", ORDFS_PACKAGE_VERSION);
			exit(FSCK_OK);
		} else if (a[0] == '-' && a[1]) {
			for (const char *c = a + 1; *c; c++) {
				switch (*c) {
				case 'n': o->readonly = true; break;
				case 'y': case 'p': case 'a': break;
				case 'f': o->force = true; break;
				case 'v': o->verbose = true; break;
				default:
					fprintf(stderr, "fsck.ordfs: unknown option -%c (see --help)\n", *c);
					return -EINVAL;
				}
			}
		} else if (!o->image) {
			o->image = a;
		} else {
			fprintf(stderr, "fsck.ordfs: unexpected argument '%s'\n", a);
			return -EINVAL;
		}
	}
	if (!o->image) {
		fprintf(stderr, "fsck.ordfs: missing IMAGE (see --help)\n");
		return -EINVAL;
	}
	return 0;
}

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	printf("problem %d: %s\n", (int)code, msg);
}

/* Replays the journal unless -n.  Returns 1 if it replayed, 0 if not
 * needed, or a negative errno. */
static int replay(struct blockdev *bd, const struct fsck_opts *o)
{
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: %s\n", o->image, why);
		return err;
	}
	int need = journal_needs_recovery(bd, &sb);
	if (need <= 0)
		return need;
	if (o->readonly) {
		printf("%s: journal needs replay (not replayed: -n)\n", o->image);
		return 0;
	}
	struct journal_recovery_info info;
	err = journal_recover(bd, &sb, 0, &info);
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: journal replay failed: %s\n", o->image,
			strerror(-err));
		return err;
	}
	printf("%s: journal replayed: %u transactions, %u blocks\n", o->image,
	       info.transactions, info.blocks_replayed);
	return 1;
}

int main(int argc, char **argv)
{
	struct fsck_opts o;
	if (parse(argc, argv, &o) != 0)
		return FSCK_USAGE;

	struct blockdev *bd;
	int err = blockdev_file_open(o.image, o.readonly ? BLOCKDEV_READONLY : 0, &bd);
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: %s\n", o.image, strerror(-err));
		return FSCK_ERROR;
	}
	if (!o.readonly && flock(blockdev_file_fd(bd), LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "fsck.ordfs: %s: image is in use (mounted by ordfs?)\n", o.image);
		blockdev_destroy(bd);
		return FSCK_ERROR;
	}
	int replayed = replay(bd, &o);
	if (replayed < 0) {
		blockdev_destroy(bd);
		return replayed == -EUCLEAN ? FSCK_UNCORRECTED : FSCK_ERROR;
	}

	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	err = ordfs_check(bd, &res);
	bool cleared = false;
	if (!err && !res.problems && !o.readonly) {
		/* Clean: the error a remount-ro left behind is dealt with. */
		err = ordfs_clear_error_state(bd, &cleared);
		if (cleared)
			printf("%s: recorded error state cleared\n", o.image);
	}
	bool error_left = false;
	if (!err && o.readonly) {
		struct ordfs_super sb;
		const char *why;
		error_left = ordfs_read_super(bd, false, &sb, &why) == 0 &&
			     (sb.state & ORDFS_STATE_ERROR);
		if (error_left)
			printf("%s: the filesystem recorded an error (errno %u); "
			       "run without -n to check and clear it\n",
			       o.image, sb.last_error_code);
	}
	blockdev_destroy(bd);
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: check failed: %s\n", o.image, strerror(-err));
		return FSCK_ERROR;
	}
	printf("%s: %llu inodes (%llu files, %llu directories), %llu blocks in use, "
	       "%u problems\n",
	       o.image, (unsigned long long)res.inodes_used, (unsigned long long)res.files,
	       (unsigned long long)res.dirs, (unsigned long long)res.blocks_used, res.problems);
	if (res.problems || error_left)
		return FSCK_UNCORRECTED;
	return replayed || cleared ? FSCK_CORRECTED : FSCK_OK;
}
