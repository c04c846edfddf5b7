/*
 * main.c - fsck.ordfs: replay the journal, then check the whole image.
 *
 * Owns: the command line, the order of the run and the exit codes
 * (e2fsck's: 0 no errors, 1 errors corrected, 4 errors left uncorrected,
 * 8 operational error, 16 usage error, 32 cancelled).  The run:
 *   1. open the image (read-only with -n) and take its lock, so a mounted
 *      image is refused (-n takes none: it changes nothing);
 *   2. read the superblock: the primary, or with -b the backup, which is
 *      written over the primary unless -n;
 *   3. a clean image (unmounted cleanly, no recorded error, empty
 *      journal) is only summarized unless -f;
 *   4. replay the journal with the daemon's recovery code; with -n into a
 *      copy-on-write overlay, so the check sees the image as it would be
 *      after replay while the image stays byte for byte the same;
 *   5. the library checker's passes (progress with -C); without -n the
 *      repairs of check/repair.c, round after round, then a final check;
 *   6. a clean check clears an error the filesystem recorded (not -n).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "blockdev/blockdev.h"
#include "check/check.h"
#include "journal/journal.h"
#include "mount/host_space.h"
#include "super/owner.h"
#include "../../src/daemon/image_lock.h"

#define FSCK_OK 0
#define FSCK_CORRECTED 1
#define FSCK_UNCORRECTED 4
#define FSCK_ERROR 8
#define FSCK_USAGE 16
#define FSCK_CANCELLED 32

#ifndef ORDFS_PACKAGE_VERSION
#define ORDFS_PACKAGE_VERSION "unknown"
#endif

struct fsck_opts {
	bool readonly;       /* -n */
	bool preen;          /* -p / -a */
	bool force;          /* -f */
	bool verbose;        /* -v */
	int64_t backup;      /* -b BLOCK, -1 = the primary */
	int progress_fd;     /* -C FD, -1 = none; 0 = a bar on the terminal */
	const char *image;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: fsck.ordfs [-n | -y | -p] [-f] [-v] [-b SUPERBLOCK] [-C FD] IMAGE\n"
		"  -n     check only: open read-only, change nothing; a journal that needs\n"
		"         replay is replayed in memory and the result checked\n"
		"  -y     replay the journal and fix everything fsck can (the default:\n"
		"         fsck.ordfs never asks)\n"
		"  -p     fix only what loses nothing (replay, bitmaps and counts, link\n"
		"         counts, '..'); exit 4 if more is needed\n"
		"  -f     check even if the image is marked clean\n"
		"  -v     verbose: name each pass as it starts\n"
		"  -b N   use the backup superblock at block N (mkfs.ordfs prints it: the\n"
		"         last block) and, unless -n, write it over the primary\n"
		"  -C FD  progress: 0 draws a bar on the terminal, FD > 0 gets lines\n"
		"         \"pass done total IMAGE\" (as e2fsck's, for fsck -C)\n"
		"exit codes: 0 clean, 1 corrected, 4 errors left, 8 operational error,\n"
		"16 usage error, 32 cancelled\n");
}

static int parse_number(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse(int argc, char **argv, struct fsck_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backup = -1;
	o->progress_fd = -1;
	bool yes = false;
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
				int64_t v;
				switch (*c) {
				case 'n': o->readonly = true; break;
				case 'y': yes = true; break;
				case 'p': case 'a': o->preen = true; break;
				case 'f': o->force = true; break;
				case 'v': o->verbose = true; break;
				case 'b':
				case 'C': {
					/* The value follows in this argument or the next. */
					const char *val = c[1] ? c + 1 : (i + 1 < argc ? argv[++i] : NULL);
					if (!val || parse_number(val, &v) != 0 ||
					    (*c == 'C' && v > 1024)) {
						fprintf(stderr, "fsck.ordfs: -%c needs a number\n", *c);
						return -EINVAL;
					}
					if (*c == 'b')
						o->backup = v;
					else
						o->progress_fd = (int)v;
					c += strlen(c) - 1; /* the rest of a was the value */
					break;
				}
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
	/* As e2fsck: one answer for every question. */
	if ((int)o->readonly + (int)yes + (int)o->preen > 1) {
		fprintf(stderr, "fsck.ordfs: only one of -n, -y and -p (-a) may be given\n");
		return -EINVAL;
	}
	return 0;
}

/* A path that cannot hold an image (a directory, a character device such
 * as /dev/null, a FIFO): one line that says so, before anything opens it.
 * false if it was refused. */
static bool image_kind_ok(const char *image)
{
	struct stat st;
	if (blockdev_is_nbd_uri(image) || stat(image, &st) != 0)
		return true; /* the open says what is wrong */
	const char *what = S_ISDIR(st.st_mode)   ? "is a directory"
			 : S_ISCHR(st.st_mode)   ? "is a character device"
			 : S_ISFIFO(st.st_mode)  ? "is a FIFO"
			 : S_ISSOCK(st.st_mode)  ? "is a socket"
			 : NULL;
	if (!what)
		return true;
	fprintf(stderr, "fsck.ordfs: %s: %s, not an ordfs image (give the image file or "
		"block device)\n", image, what);
	return false;
}

/* SIGINT/SIGTERM: stop now.  What was written so far is safe to stop
 * after: replay is idempotent and the checker writes nothing. */
static void on_cancel(int sig)
{
	(void)sig;
	static const char msg[] = "fsck.ordfs: cancelled\n";
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(FSCK_CANCELLED);
}

static void print_problem(void *ctx, enum check_problem code, const char *msg)
{
	(void)ctx;
	printf("problem %d (%s): %s\n", (int)code, check_problem_name(code), msg);
}

struct progress {
	const struct fsck_opts *o;
	unsigned last_pct;
	unsigned last_pass;
};

static void show_progress(void *ctx, unsigned pass, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	if (p->o->progress_fd > 0) {
		dprintf(p->o->progress_fd, "%u %" PRIu64 " %" PRIu64 " %s\n", pass, done, total,
			p->o->image);
		return;
	}
	/* -C 0: one bar on the terminal, redrawn when the percentage moves. */
	unsigned pct = (unsigned)(((pass - 1) * 100 + (total ? done * 100 / total : 100)) /
				  CHECK_PASSES);
	if (pct == p->last_pct && pass == p->last_pass)
		return;
	p->last_pct = pct;
	p->last_pass = pass;
	char bar[41];
	memset(bar, ' ', 40);
	memset(bar, '=', pct * 40 / 100);
	bar[40] = 0;
	fprintf(stderr, "\r%s: pass %u/%u %-18s [%s] %3u%%", p->o->image, pass, CHECK_PASSES,
		check_pass_name(pass), bar, pct);
	if (pass == CHECK_PASSES && done == total)
		fputc('\n', stderr);
	fflush(stderr);
}

/* -v: one line as each pass starts. */
static void verbose_progress(void *ctx, unsigned pass, uint64_t done, uint64_t total)
{
	(void)total;
	struct progress *p = ctx;
	if (done == 0)
		printf("%s: pass %u: %s\n", p->o->image, pass, check_pass_name(pass));
}

/* The backup superblock at block `block` (the last block of the image
 * it describes), for whichever block size gives one that decodes and fits
 * in the image.  The library's reader places the backup by the primary's
 * geometry when the primary decodes, so a primary that verifies but is
 * wrong (a block_count past the end of the image) hid it. */
static int backup_at(struct blockdev *bd, uint64_t block, struct ordfs_super *sb)
{
	uint8_t raw[ORDFS_SB_SIZE];
	uint64_t size = blockdev_size(bd);
	for (uint32_t lg = ORDFS_MIN_BLOCK_LOG; lg <= ORDFS_MAX_BLOCK_LOG; lg++) {
		const char *why;
		if (block > (size >> lg) || (block << lg) + sizeof(raw) > size)
			continue;
		if (blockdev_read(bd, raw, sizeof(raw), block << lg) == 0 &&
		    ordfs_super_decode(raw, sb, &why) == 0 && sb->log_block_size == lg &&
		    sb->block_count - 1 == block && (size >> lg) >= sb->block_count)
			return 0;
	}
	return -EUCLEAN;
}

/* A valid backup: where the primary's geometry puts it, else in the last
 * block of the image for each block size. */
static int find_backup(struct blockdev *bd, struct ordfs_super *sb)
{
	const char *why;
	if (ordfs_read_super(bd, true, sb, &why) == 0)
		return 0;
	for (uint32_t lg = ORDFS_MIN_BLOCK_LOG; lg <= ORDFS_MAX_BLOCK_LOG; lg++) {
		uint64_t blocks = blockdev_size(bd) >> lg;
		if (blocks >= 2 && backup_at(bd, blocks - 1, sb) == 0)
			return 0;
	}
	return -EUCLEAN;
}

/* Reads the superblock fsck works from: the primary, or the backup at
 * block o->backup.  A primary that cannot be used gets one line with the
 * exact command that uses the backup, when there is a valid one. */
static int read_super(struct blockdev *bd, const struct fsck_opts *o, struct ordfs_super *sb)
{
	const char *why;
	if (o->backup < 0) {
		int err = ordfs_read_super(bd, false, sb, &why);
		if (err) {
			fprintf(stderr, "fsck.ordfs: %s: %s\n", o->image, why);
			struct ordfs_super backup;
			if (find_backup(bd, &backup) == 0)
				fprintf(stderr, "fsck.ordfs: a valid backup superblock is at block "
					"%" PRIu64 ": try fsck.ordfs -b %" PRIu64 " %s\n",
					backup.block_count - 1, backup.block_count - 1, o->image);
		}
		return err;
	}
	int err = backup_at(bd, (uint64_t)o->backup, sb);
	if (err)
		fprintf(stderr, "fsck.ordfs: %s: no valid superblock at block %" PRId64 "\n",
			o->image, o->backup);
	return err;
}

/* A clean image without -f: a summary line, no check (as e2fsck). */
static bool clean_enough(struct blockdev *bd, const struct ordfs_super *sb,
			 const struct fsck_opts *o)
{
	return !o->force && o->backup < 0 && (sb->state & ORDFS_STATE_CLEAN) &&
	       !(sb->state & ORDFS_STATE_ERROR) && journal_needs_recovery(bd, sb) == 0;
}

/* Replays the journal (into view, which is the image or with -n an
 * overlay).  1 if it replayed, 0 if not needed, or a negative errno. */
static int replay(struct blockdev *view, const struct ordfs_super *sb,
		  const struct fsck_opts *o)
{
	int need = journal_needs_recovery(view, sb);
	if (need < 0 && !o->readonly && !o->preen) {
		/* Nothing in the log can be found without it: start a new one. */
		int err = journal_reset(view, sb);
		if (err) {
			fprintf(stderr, "fsck.ordfs: %s: cannot reset the journal: %s\n", o->image,
				strerror(-err));
			return err;
		}
		printf("%s: the journal superblock was corrupt: journal cleared "
		       "(transactions not yet replayed are lost)\n", o->image);
		return 1;
	}
	if (need <= 0) {
		if (need < 0)
			fprintf(stderr, "fsck.ordfs: %s: the journal superblock is corrupt%s\n",
				o->image, o->preen ? " (run fsck.ordfs -y to clear it)" : "");
		return need;
	}
	struct journal_recovery_info info;
	int err = journal_recover(view, sb, 0, &info);
	if (err == -ENOSPC) {
		/* The log is intact: a run once there is room replays it. */
		char why[PATH_MAX + 256];
		fprintf(stderr, "fsck.ordfs: %s: journal replay failed: %s\n", o->image,
			ordfs_no_space_reason(view, "run fsck.ordfs again", why, sizeof(why)));
		return err;
	}
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: journal replay failed: %s\n", o->image,
			strerror(-err));
		return err;
	}
	printf("%s: journal %s: %u transactions, %u blocks\n", o->image,
	       o->readonly ? "needs replay (replayed in memory only, -n)" : "replayed",
	       info.transactions, info.blocks_replayed);
	return 1;
}

/* After a clean check of an image left by a crash (its journal replayed
 * now): the superblock says so, as e2fsck leaves it: clean, no recovery
 * pending, the free counts the check found. */
static int mark_clean(struct blockdev *bd, const struct check_result *res)
{
	struct ordfs_super sb;
	const char *why;
	int err = ordfs_read_super(bd, false, &sb, &why);
	if (err)
		return err;
	if ((sb.state & ORDFS_STATE_CLEAN) && !(sb.feature_incompat & ORDFS_FEATURE_INCOMPAT_RECOVER))
		return 0;
	/* Orphans are for the next mount to finish (it truncates and frees
	 * them): an image with some is not clean. */
	if (journal_needs_recovery(bd, &sb) != 0 || sb.orphan_head != 0)
		return 0;
	sb.state |= ORDFS_STATE_CLEAN;
	sb.feature_incompat &= ~ORDFS_FEATURE_INCOMPAT_RECOVER;
	sb.free_blocks = sb.block_count - res->blocks_used;
	sb.free_inodes = sb.inode_count - (uint32_t)res->inodes_used - 1;
	err = ordfs_write_super(bd, &sb, true);
	return err ? err : blockdev_flush(bd);
}

int main(int argc, char **argv)
{
	struct fsck_opts o;
	if (parse(argc, argv, &o) != 0)
		return FSCK_USAGE;
	signal(SIGINT, on_cancel);
	signal(SIGTERM, on_cancel);

	struct blockdev *bd, *overlay = NULL;
	struct owner_claim *claim = NULL;
	char why[300]; /* open and claim errors */
	if (!image_kind_ok(o.image))
		return FSCK_ERROR;
	int err = blockdev_open_image(o.image, o.readonly ? BLOCKDEV_READONLY : 0, 0, &bd, why,
				      sizeof(why));
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: %s\n", o.image, why);
		return FSCK_ERROR;
	}
	int status = FSCK_ERROR;
	/* A daemon still finishing its unmount holds the lock a moment. */
	if (!o.readonly && image_lock_wait(bd, o.image, IMAGE_LOCK_WAIT_MS) != 0) {
		fprintf(stderr, "fsck.ordfs: %s: image is in use (mounted by ordfs?)\n", o.image);
		goto out;
	}
	struct ordfs_super sb;
	if (read_super(bd, &o, &sb) != 0)
		goto out;
	if (!o.readonly) {
		struct owner_opts oo = { .program = "fsck.ordfs" };
		if (owner_take(bd, sb.block_count, ordfs_block_size(&sb), &oo, true, &claim, why,
			       sizeof(why)) != 0) {
			fprintf(stderr, "fsck.ordfs: %s: %s\n", o.image, why);
			goto out;
		}
	}
	if (clean_enough(bd, &sb, &o)) {
		printf("%s: clean, %" PRIu32 "/%" PRIu32 " inodes, %" PRIu64 "/%" PRIu64
		       " blocks free\n", o.image, sb.free_inodes, sb.inode_count, sb.free_blocks,
		       sb.block_count);
		status = FSCK_OK;
		goto out;
	}

	/* What the check reads: the image, or with -n a view of it that takes
	 * the replay (and a restored superblock) in memory. */
	struct blockdev *view = bd;
	if (o.readonly) {
		err = blockdev_overlay_create(bd, ordfs_block_size(&sb), &overlay);
		if (err) {
			fprintf(stderr, "fsck.ordfs: %s: %s\n", o.image, strerror(-err));
			goto out;
		}
		view = overlay;
	}
	bool corrected = false;
	if (o.backup >= 0) {
		err = ordfs_write_super(view, &sb, false);
		if (!err)
			err = blockdev_flush(view);
		if (err) {
			fprintf(stderr, "fsck.ordfs: %s: cannot restore the superblock: %s\n",
				o.image, strerror(-err));
			goto out;
		}
		printf("%s: primary superblock %s from block %" PRId64 "\n", o.image,
		       o.readonly ? "taken (in memory only, -n)" : "restored", o.backup);
		corrected = !o.readonly;
	}
	int replayed = replay(view, &sb, &o);
	if (replayed < 0) {
		status = replayed == -EUCLEAN ? FSCK_UNCORRECTED : FSCK_ERROR;
		goto out;
	}
	corrected = corrected || (replayed && !o.readonly);

	struct progress prog = { .o = &o, .last_pct = 101 };
	struct check_result res;
	memset(&res, 0, sizeof(res));
	res.report = print_problem;
	if (o.progress_fd >= 0 || o.verbose) {
		res.progress = o.progress_fd >= 0 ? show_progress : verbose_progress;
		res.ctx = &prog;
	}
	err = ordfs_check(view, &res);
	if (!err && res.problems && !o.readonly) {
		/* Repairs, then the check that says what is left. */
		struct repair_result rep;
		err = ordfs_repair(bd, o.preen ? REPAIR_PREEN : 0, NULL, NULL, &rep);
		if (!err) {
			printf("%s: %u problems found, %u fixes made in %u rounds\n", o.image,
			       res.problems, rep.fixes, rep.rounds);
			corrected = corrected || rep.fixes > 0;
			memset(&res, 0, sizeof(res));
			res.report = print_problem;
			err = ordfs_check(bd, &res);
			if (!err && res.problems && o.preen)
				printf("%s: UNEXPECTED INCONSISTENCY: run fsck.ordfs -y\n", o.image);
		}
	}
	bool cleared = false;
	if (!err && !res.problems && !o.readonly) {
		/* Clean: the error a remount-ro left behind is dealt with. */
		err = ordfs_clear_error_state(bd, &cleared);
		if (cleared)
			printf("%s: recorded error state cleared\n", o.image);
		if (!err)
			err = mark_clean(bd, &res);
	}
	bool error_left = false;
	if (!err && o.readonly) {
		struct ordfs_super now;
		const char *ignored;
		error_left = ordfs_read_super(view, false, &now, &ignored) == 0 &&
			     (now.state & ORDFS_STATE_ERROR);
		if (error_left)
			printf("%s: the filesystem recorded an error (errno %u); "
			       "run without -n to check and clear it\n",
			       o.image, now.last_error_code);
	}
	if (err) {
		fprintf(stderr, "fsck.ordfs: %s: check failed: %s\n", o.image, strerror(-err));
		goto out;
	}
	printf("%s: %" PRIu64 " inodes (%" PRIu64 " files, %" PRIu64 " directories), "
	       "%" PRIu64 " blocks in use, %u problems\n",
	       o.image, res.inodes_used, res.files, res.dirs, res.blocks_used, res.problems);
	if (res.problems || error_left)
		status = FSCK_UNCORRECTED;
	else
		status = corrected || cleared ? FSCK_CORRECTED : FSCK_OK;
out:
	owner_release(claim);
	blockdev_destroy(overlay);
	blockdev_destroy(bd); /* releases the lock */
	return status;
}
