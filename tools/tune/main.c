/*
 * main.c - tune.ordfs: change the defaults an unmounted ordfs image keeps
 * in its superblock, as tune2fs does.
 *
 *   tune.ordfs [-o [^]OPTION[,...]] [-E mount_opts=OPTS] [-L LABEL]
 *              [-e continue|remount-ro|abort] [-l] IMAGE
 *
 * Owns: the command line, the conditions under which the superblock may
 * be rewritten, and the rewrite.  Editing and validating the mount
 * options is mount_opts.c's; the -l listing is tools/dump/show_super.c's
 * (the same lines dump.ordfs prints); the option loop (--help, --version),
 * the message lines and -e are shared with mkfs.ordfs and dump.ordfs
 * (tools/common/cli.c).
 *
 * Rules kept here:
 *  - Every argument is checked before the image is opened, and the
 *    image's state before anything is written: a refused run leaves the
 *    image byte for byte unchanged.
 *  - Only an image nobody uses is changed: tune.ordfs takes the lock the
 *    daemon, mkfs.ordfs and fsck.ordfs take (flock LOCK_EX on the image)
 *    and holds it until the new superblock is flushed.
 *  - Never over a journal that holds transactions (block 0 is journaled:
 *    replay would write an older superblock back over the change), an
 *    unreadable journal superblock, or a recorded error: those need
 *    fsck.ordfs first.  Nor over feature bits this version does not know
 *    (a newer format may keep something in bytes this one writes as zero).
 *  - Only the label, errors and mount_opts change; every other field is
 *    written back as it was read.  The superblock goes through
 *    ordfs_write_super (ordfs_super_encode: both sector copies) to the
 *    primary and the backup, then a flush.
 *  - `-l` alone only reads (no lock: like tune2fs -l it works on a mounted
 *    image); with changes it lists the superblock as written.
 *  - Errors are one line on stderr, "tune.ordfs: IMAGE: reason" (usage
 *    errors name no image), and exit status 1; --help and --version exit 0.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs.h"
#include "blockdev/blockdev.h"
#include "cli.h"
#include "offline_image.h"
#include "mount_opts.h"
#include "super/owner.h"
#include "show_super.h"

#define PROG "tune.ordfs"
#define EXIT_FAILED 1
#define MSG_LEN 256

/* One -o or -E mount_opts= argument, kept in command-line order. */
struct opts_edit {
	bool replace;     /* -E mount_opts=: the whole list */
	const char *arg;
};

struct tune_options {
	const char *image;
	bool list;                 /* -l */
	const char *label;         /* -L, NULL = unchanged */
	uint32_t errors;           /* -e, 0 = unchanged */
	struct opts_edit *edits;   /* argc entries at most */
	unsigned nedits;
};

static bool changes_asked(const struct tune_options *o)
{
	return o->label || o->errors || o->nedits;
}

/* ---- messages --------------------------------------------------------- */

static void print_help(void);
static int parse_option(int c, const char *arg, void *ctx);

static const struct cli tool = {
	.prog = PROG,
	.usage = "[options] IMAGE",
	.shortopts = ":o:E:L:e:lhV",
	.help_val = 'h',
	.print_help = print_help,
	.parse_option = parse_option,
};

#define usage_error(...) cli_usage_error(&tool, __VA_ARGS__)
#define image_error(...) cli_image_error(&tool, __VA_ARGS__)

static void print_help(void)
{
	printf("Usage: " PROG " [options] IMAGE\n"
	       "Change the defaults an unmounted ordfs image keeps in its superblock.\n"
	       "\n"
	       "Options:\n"
	       "  -o [^]OPTION[,...]  add default mount options, or with ^ remove them\n"
	       "                      (^commit removes commit=N; removing an option that\n"
	       "                      is not set is an error).  An added option replaces\n"
	       "                      the ones it overrides (commit=10 replaces commit=5,\n"
	       "                      noatime replaces relatime)\n"
	       "  -E mount_opts=OPTS  replace the whole list (empty clears it; takes the\n"
	       "                      rest of the argument, commas included)\n"
	       "  -L LABEL            volume label, at most 32 bytes (empty clears it)\n"
	       "  -e BEHAVIOUR        on metadata errors: continue, remount-ro or abort\n"
	       "                      (panic is accepted as abort)\n"
	       "  -l                  list the superblock (after the changes, if any)\n"
	       "  -h, --help          this help\n"
	       "  -V, --version       print the version\n"
	       "\n"
	       "Default mount options are ordfs's own (data=, commit=, barrier, nobarrier,\n"
	       "discard, nodiscard, flush_error=, errors=, the atime options), checked as\n"
	       "the daemon checks\n"
	       "them at mount, at most 64 bytes; options given to ordfs -o override them.\n"
	       "\n"
	       "The image must not be in use, its journal must be empty and it must have\n"
	       "no error recorded (run fsck.ordfs first).  Exit status: 0, or 1 on any\n"
	       "failure, with the image unchanged.\n");
}

/* ---- parsing ---------------------------------------------------------- */

/* -E key=value: mount_opts= takes the rest of the argument. */
static int parse_extended(const char *arg, struct tune_options *o)
{
	if (strncmp(arg, "mount_opts=", 11) == 0) {
		o->edits[o->nedits++] = (struct opts_edit){ .replace = true, .arg = arg + 11 };
		return 0;
	}
	if (!*arg) {
		usage_error("empty extended option");
		return -1;
	}
	usage_error("unknown extended option '%.*s' (only mount_opts= is known)",
		    (int)strcspn(arg, ",="), arg);
	return -1;
}

static int parse_option(int c, const char *arg, void *ctx)
{
	struct tune_options *o = ctx;
	switch (c) {
	case 'o':
		o->edits[o->nedits++] = (struct opts_edit){ .replace = false, .arg = arg };
		return 0;
	case 'E': return parse_extended(arg, o);
	case 'L': o->label = arg; return 0;
	case 'e': return cli_parse_errors(&tool, arg, &o->errors);
	case 'l': o->list = true; return 0;
	default: return -1;
	}
}

/* 0 to go on, 1 when --help/--version was served, -1 on a usage error
 * (already reported). */
static int parse_args(int argc, char **argv, struct tune_options *o)
{
	int r = cli_parse_image_args(&tool, argc, argv, o, &o->image);
	if (r)
		return r;
	if (!o->list && !changes_asked(o)) {
		usage_error("nothing to do (give -o, -E, -L, -e or -l)");
		return -1;
	}
	return 0;
}

/* What can be checked without the image: the label's length, and every
 * mount option list or option given. */
static int check_arguments(const struct tune_options *o)
{
	char why[MSG_LEN];
	if (o->label && strlen(o->label) > ORDFS_LABEL_LEN) {
		image_error(o->image, "label '%s' is longer than %u bytes", o->label,
			    ORDFS_LABEL_LEN);
		return -1;
	}
	for (unsigned i = 0; i < o->nedits; i++) {
		const struct opts_edit *e = &o->edits[i];
		int rc = e->replace ? mount_opts_validate(e->arg, why, sizeof(why))
				    : mount_opts_check_edits(e->arg, why, sizeof(why));
		if (rc) {
			image_error(o->image, "%s", why);
			return -1;
		}
	}
	return 0;
}

/* ---- the image -------------------------------------------------------- */

static int open_image(const struct tune_options *o, bool writable, struct blockdev **bd)
{
	char why[300];
	int err = blockdev_open_image(o->image, writable ? 0 : BLOCKDEV_READONLY, 0, bd, why,
				      sizeof(why));
	if (err) {
		image_error(o->image, "cannot open%s: %s", writable ? " for writing" : "",
			    err == -EINVAL ? "not a regular file or block device" : why);
		return err;
	}
	if (writable && (err = blockdev_host_lock(*bd, LOCK_EX)) != 0) {
		if (err == -EWOULDBLOCK)
			image_error(o->image, "image is in use (mounted by ordfs, or being "
				    "checked); unmount it first");
		else
			image_error(o->image, "cannot lock the image: %s", strerror(-err));
		blockdev_destroy(*bd);
		*bd = NULL;
		return err;
	}
	return 0;
}

static int read_super(const struct tune_options *o, struct blockdev *bd, struct ordfs_super *sb)
{
	const char *why = "";
	int err = ordfs_read_super(bd, false, sb, &why);
	if (err)
		image_error(o->image, "%s (run fsck.ordfs)", why);
	return err;
}

/* The new superblock: the old one with the asked changes. */
static int apply_changes(const struct tune_options *o, const struct ordfs_super *old,
			 struct ordfs_super *sb)
{
	char opts[MOUNT_OPTS_WORK_LEN], why[MSG_LEN];
	*sb = *old;
	if (o->label) {
		memset(sb->label, 0, sizeof(sb->label));
		memcpy(sb->label, o->label, strlen(o->label)); /* <= 32, checked */
	}
	if (o->errors)
		sb->errors = o->errors;
	if (!o->nedits)
		return 0;
	snprintf(opts, sizeof(opts), "%s", old->mount_opts);
	for (unsigned i = 0; i < o->nedits; i++) {
		const struct opts_edit *e = &o->edits[i];
		int rc = 0;
		if (e->replace)
			snprintf(opts, sizeof(opts), "%s", e->arg); /* <= 64, checked */
		else
			rc = mount_opts_apply(opts, e->arg, why, sizeof(why));
		if (!rc)
			continue;
		image_error(o->image, "%s", why);
		return rc;
	}
	int rc = mount_opts_validate(opts, why, sizeof(why));
	if (rc) {
		image_error(o->image, "%s", why);
		return rc;
	}
	memset(sb->mount_opts, 0, sizeof(sb->mount_opts));
	memcpy(sb->mount_opts, opts, strlen(opts));
	return 0;
}

/* 'text' (escaped), or (none) when empty. */
static void print_quoted(const char *s, size_t max)
{
	if (!*s) {
		fputs("(none)", stdout);
		return;
	}
	fputc('\'', stdout);
	show_escaped(stdout, s, max);
	fputc('\'', stdout);
}

static void report_changes(const struct tune_options *o, const struct ordfs_super *old,
			   const struct ordfs_super *sb)
{
	char buf[32];
	if (o->label) {
		printf("Volume label set to ");
		print_quoted(sb->label, ORDFS_LABEL_LEN);
		printf("\n");
	}
	if (o->errors)
		printf("Errors behaviour set to %s\n", show_errors_name(sb->errors, buf, sizeof(buf)));
	if (o->nedits) {
		printf("Default mount options set to ");
		print_quoted(sb->mount_opts, ORDFS_MOUNT_OPTS_LEN);
		printf(" (were ");
		print_quoted(old->mount_opts, ORDFS_MOUNT_OPTS_LEN);
		printf(")\n");
	}
}

/* Primary (both sector copies) and backup, then a flush. */
static int write_super(const struct tune_options *o, struct blockdev *bd,
		       const struct ordfs_super *sb)
{
	int err = ordfs_write_super(bd, sb, true);
	if (!err)
		err = blockdev_flush(bd);
	if (err)
		image_error(o->image, "cannot write the superblock: %s", strerror(-err));
	return err;
}

static int list_only(const struct tune_options *o)
{
	struct blockdev *bd;
	struct ordfs_super sb;
	if (open_image(o, false, &bd))
		return -1;
	int err = read_super(o, bd, &sb);
	blockdev_destroy(bd);
	if (err)
		return -1;
	show_super(stdout, &sb);
	return 0;
}

static int tune(const struct tune_options *o)
{
	struct blockdev *bd;
	struct ordfs_super old, sb;
	if (open_image(o, true, &bd))
		return -1;
	struct owner_claim *claim = NULL;
	int err = read_super(o, bd, &old);
	if (!err) {
		char why[300];
		struct owner_opts oo = { .program = "tune.ordfs" };
		err = owner_take(bd, old.block_count, ordfs_block_size(&old), &oo, true, &claim,
				 why, sizeof(why));
		if (err)
			image_error(o->image, "%s", why);
	}
	if (!err)
		err = cli_check_offline_image(&tool, o->image, bd, &old, false);
	if (!err)
		err = apply_changes(o, &old, &sb);
	if (!err)
		err = write_super(o, bd, &sb);
	if (err)
		owner_undo(claim); /* a refused change leaves the image as it was */
	else
		owner_release(claim);
	blockdev_destroy(bd); /* releases the lock */
	if (err)
		return -1;
	report_changes(o, &old, &sb);
	if (o->list)
		show_super(stdout, &sb);
	return 0;
}

int main(int argc, char **argv)
{
	struct tune_options o;
	memset(&o, 0, sizeof(o));
	o.edits = calloc((size_t)argc, sizeof(*o.edits));
	if (!o.edits) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_FAILED;
	}
	int r = parse_args(argc, argv, &o);
	if (r == 0)
		r = check_arguments(&o);
	if (r == 0)
		r = changes_asked(&o) ? tune(&o) : list_only(&o);
	if (r == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
		fprintf(stderr, PROG ": %s: cannot write to stdout: %s%s\n", o.image,
			strerror(errno), changes_asked(&o) ? " (the image was changed)" : "");
		r = -1;
	}
	free(o.edits);
	return r < 0 ? EXIT_FAILED : 0;
}
