/*
 * main.c - dump.ordfs: print what an ordfs image holds, as dumpe2fs does:
 * the superblock, the journal, and how each area of the image is used.
 *
 *   dump.ordfs [-h] IMAGE
 *   dump.ordfs -i INODE IMAGE
 *
 * Owns: the command line, the journal and area sections of the listing,
 * and the exit status.  The superblock lines are show_super.c's (shared
 * with tune.ordfs -l); one inode (-i, its file flags among its fields)
 * is show_inode.c's; counting bitmap bits is bitmap_count.c's; the
 * option loop (--help, --version), the usage errors and the size and UUID
 * formatters are shared with mkfs.ordfs and tune.ordfs (tools/common/cli.c).
 *
 * Rules kept here:
 *  - Read-only: the image is opened O_RDONLY and nothing is written; what
 *    journal replay would do is found by journal_recover's dry run.
 *  - A mounted image can be dumped: the daemon's lock is only probed (a
 *    shared flock, dropped at once) to warn that the numbers may be stale;
 *    dump.ordfs never holds a lock that would stop a mount.
 *  - The image is untrusted: nothing is located before the library has
 *    decoded and validated the superblock (geometry, image size), the
 *    journal superblock is decoded with its checksum, and every bitmap
 *    block is verified before its bits are counted.
 *  - A superblock that does not decode is one line on stderr and exit 1.
 *    Damage found further on (journal superblock, bitmap blocks, a log
 *    that cannot be scanned) is reported in the listing, the rest is still
 *    printed, and the exit status is 1.  Usage errors: one line, exit 1.
 *    --help and --version exit 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "fs.h"
#include "blockdev/blockdev.h"
#include "cli.h"
#include "journal/journal.h"
#include "super/owner.h"
#include "bitmap_count.h"
#include "show_inode.h"
#include "show_super.h"

#define PROG "dump.ordfs"
#define EXIT_FAILED 1

struct dump_options {
	const char *image;
	bool header_only; /* -h */
	uint32_t inode;   /* -i INODE: only that inode (0: none) */
};

/* What one run found; `damaged` decides the exit status. */
struct dump {
	const struct dump_options *o;
	struct blockdev *bd;
	struct ordfs_super sb;
	bool in_use;      /* a daemon (or fsck.ordfs) holds the image's lock */
	bool damaged;     /* something could not be read or verified */
	bool log_live;    /* the journal holds transactions not yet home */
};

/* ---- messages --------------------------------------------------------- */

static void print_help(void);
static int parse_option(int c, const char *arg, void *ctx);

/* -h is "header only" (as dumpe2fs -h), so --help is only the long option. */
static const struct cli tool = {
	.prog = PROG,
	.usage = "[-h] [-i INODE] IMAGE",
	.shortopts = ":hi:V",
	.help_val = 'H',
	.print_help = print_help,
	.parse_option = parse_option,
};

static void print_help(void)
{
	printf("Usage: " PROG " [-h] [-i INODE] IMAGE\n"
	       "Print what an ordfs image holds: the superblock, the journal (and what a\n"
	       "replay would do), and how the image's areas are used, counted from the\n"
	       "bitmaps.  The image is only read; a mounted image can be dumped, but the\n"
	       "numbers may be stale.\n"
	       "\n"
	       "Options:\n"
	       "  -h              only the superblock and the journal superblock\n"
	       "  -i INODE        only inode INODE: type, mode, owner, size, times, and\n"
	       "                  its file flags as chattr letters (lsattr's)\n"
	       "  --help          this help\n"
	       "  -V, --version   print the version\n"
	       "\n"
	       "Exit status: 0, or 1 if the image could not be read or something in it\n"
	       "failed verification (reported in the listing).\n");
}

static int parse_option(int c, const char *arg, void *ctx)
{
	struct dump_options *o = ctx;
	switch (c) {
	case 'h': o->header_only = true; return 0;
	case 'i': {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(arg, &end, 0);
		if (errno || end == arg || *end || n == 0 || n > UINT32_MAX) {
			cli_usage_error(&tool, "invalid inode number '%s'", arg);
			return -1;
		}
		o->inode = (uint32_t)n;
		return 0;
	}
	default: return -1;
	}
}

/* 0 to go on, 1 when --help/--version was served, -1 on a usage error. */
static int parse_args(int argc, char **argv, struct dump_options *o)
{
	return cli_parse_image_args(&tool, argc, argv, o, &o->image);
}

/* ---- the image -------------------------------------------------------- */

/* True if someone holds the image's exclusive lock (a daemon, fsck). */
static bool probe_in_use(struct blockdev *bd)
{
	if (blockdev_is_nbd(bd)) {
		bool held = false;
		char who[200];
		return owner_describe(bd, &held, who, sizeof(who)) == 0 && held;
	}
	int fd = blockdev_file_fd(bd);
	if (flock(fd, LOCK_SH | LOCK_NB) != 0)
		return errno == EWOULDBLOCK;
	flock(fd, LOCK_UN);
	return false;
}

static int open_image(struct dump *d)
{
	char why_open[300];
	int err = blockdev_open_image(d->o->image, BLOCKDEV_READONLY, 0, &d->bd, why_open,
				      sizeof(why_open));
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", d->o->image,
			err == -EINVAL ? "not a regular file or block device" : why_open);
		return err;
	}
	d->in_use = probe_in_use(d->bd);
	if (d->in_use)
		fprintf(stderr, PROG ": %s: warning: in use by a running ordfs daemon (or "
			"fsck.ordfs); the numbers may be stale\n", d->o->image);
	const char *why = "";
	err = ordfs_read_super(d->bd, false, &d->sb, &why);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", d->o->image, why);
		struct ordfs_super backup;
		if (ordfs_read_super(d->bd, true, &backup, &why) == 0)
			fprintf(stderr, PROG ": %s: a valid backup superblock is at block %" PRIu64
				": fsck.ordfs -b %" PRIu64 " %s restores it\n", d->o->image,
				backup.block_count - 1, backup.block_count - 1, d->o->image);
	}
	return err;
}

/* ---- superblock copies ------------------------------------------------ */

/* The two sector copies of the primary, and the backup in the last block. */
static void show_super_copies(struct dump *d)
{
	uint8_t raw[ORDFS_SB_SIZE], mine[ORDFS_SB_SIZE], theirs[ORDFS_SB_SIZE];
	uint32_t bs = ordfs_block_size(&d->sb);

	printf(SHOW_LINE_FMT, "Superblock copies:");
	if (blockdev_read(d->bd, raw, sizeof(raw), 0) != 0) {
		printf("cannot be read\n");
		d->damaged = true;
	} else if (ordfs_super_copies_agree(raw)) {
		printf("the two sector copies agree\n");
	} else {
		printf("the two sector copies differ (a torn write; fsck.ordfs rewrites them)\n");
	}

	struct ordfs_super backup;
	const char *why = "";
	printf(SHOW_LINE_FMT, "Backup superblock state:");
	if (blockdev_read(d->bd, raw, sizeof(raw), (d->sb.block_count - 1) * bs) != 0) {
		printf("cannot be read\n");
		d->damaged = true;
		return;
	}
	if (ordfs_super_decode(raw, &backup, &why) != 0) {
		printf("invalid: %s\n", why);
		d->damaged = true;
		return;
	}
	ordfs_super_encode(&d->sb, mine);
	ordfs_super_encode(&backup, theirs);
	if (memcmp(mine, theirs, sizeof(mine)) == 0)
		printf("valid, the same as the primary\n");
	else
		printf("valid, differs from the primary (the backup is rewritten at a clean "
		       "unmount)\n");
}

/* ---- journal ---------------------------------------------------------- */

/* What replay would do: journal_recover's dry run, which writes nothing. */
static void show_replay(struct dump *d)
{
	struct journal_recovery_info info;
	int err = journal_recover(d->bd, &d->sb, JOURNAL_RECOVER_DRY_RUN, &info);
	if (err) {
		printf(SHOW_LINE_FMT "the log cannot be scanned: %s%s\n", "Replay would apply:",
		       strerror(-err), d->in_use ? " (it is changing under a running daemon)" : "");
		d->damaged = true;
		return;
	}
	if (info.transactions)
		printf(SHOW_LINE_FMT "%" PRIu32 " transaction%s (sequences %" PRIu64 "..%" PRIu64
		       "), %" PRIu32 " block%s\n", "Replay would apply:", info.transactions,
		       info.transactions == 1 ? "" : "s", info.first_seq, info.next_seq - 1,
		       info.blocks_replayed, info.blocks_replayed == 1 ? "" : "s");
	else
		printf(SHOW_LINE_FMT "0 transactions, 0 blocks (no complete transaction in "
		       "the log)\n", "Replay would apply:");
	printf(SHOW_LINE_FMT "%" PRIu32 " revoked block%s, %" PRIu32 " block%s failing "
	       "their checksum\n", "Replay would skip:", info.blocks_revoked,
	       info.blocks_revoked == 1 ? "" : "s", info.bad_tag_csums,
	       info.bad_tag_csums == 1 ? "" : "s");
}

static void show_journal(struct dump *d)
{
	const struct ordfs_super *sb = &d->sb;
	uint32_t bs = ordfs_block_size(sb);
	struct ordfs_journal_super js;
	const char *why = "";
	char buf[64], uuid[37];

	printf("\n");
	uint8_t *blk = malloc(bs);
	int err = blk ? blockdev_read(d->bd, blk, bs, sb->journal_start * bs) : -ENOMEM;
	if (!err)
		err = ordfs_journal_super_decode(blk, bs, sb->csum_seed, &js, &why);
	bool copies_agree = !err && ordfs_super_copies_agree(blk);
	free(blk);
	if (err) {
		printf(SHOW_LINE_FMT "unusable: %s (fsck.ordfs -y replaces it with an empty "
		       "journal)\n", "Journal superblock:", err == -EUCLEAN ? why : strerror(-err));
		d->damaged = true;
		return;
	}
	printf(SHOW_LINE_FMT "%s\n", "Journal superblock:",
	       copies_agree ? "valid, the two sector copies agree"
			    : "valid, the two sector copies differ (a torn write; fsck.ordfs "
			      "rewrites them)");
	cli_format_bytes((uint64_t)js.total_blocks * bs, CLI_UP_TO_EIB, buf, sizeof(buf));
	printf(SHOW_LINE_FMT "%" PRIu32 " blocks (%s)%s\n", "Journal size:", js.total_blocks,
	       buf, js.total_blocks == sb->journal_blocks ? "" : " (not the superblock's size!)");
	printf(SHOW_LINE_FMT "%" PRIu32 "%s\n", "Journal block size:", js.block_size,
	       js.block_size == bs ? "" : " (not the filesystem's!)");
	printf(SHOW_LINE_FMT "%" PRIu32 "\n", "Journal first block:", js.first);
	if (js.start)
		printf(SHOW_LINE_FMT "log block %" PRIu32 "\n", "Journal start:", js.start);
	else
		printf(SHOW_LINE_FMT "0 (the log is empty)\n", "Journal start:");
	printf(SHOW_LINE_FMT "%" PRIu64 "\n", "Journal sequence:", js.sequence);
	if (js.err)
		printf(SHOW_LINE_FMT "%" PRId32 " (%s: recorded error, fsck.ordfs clears it)\n",
		       "Journal errno:", js.err,
		       js.err < 0 && js.err > -4096 ? strerror(-js.err) : "not an errno");
	else
		printf(SHOW_LINE_FMT "0\n", "Journal errno:");
	cli_format_uuid(js.uuid, uuid);
	printf(SHOW_LINE_FMT "%s (%s)\n", "Journal UUID:", uuid,
	       memcmp(js.uuid, sb->uuid, ORDFS_UUID_LEN) == 0 ? "the filesystem's"
							       : "NOT the filesystem's");
	if (!js.start) {
		printf(SHOW_LINE_FMT "no\n", "Journal needs replay:");
		return;
	}
	d->log_live = true;
	printf(SHOW_LINE_FMT "yes%s\n", "Journal needs replay:",
	       d->in_use ? " (the filesystem is mounted: the log is live)"
			 : " (fsck.ordfs or the next mount replays it)");
	if (!d->o->header_only)
		show_replay(d);
}

/* ---- how the areas are used ------------------------------------------ */

static void show_area_row(const char *name, uint64_t blocks, const char *where)
{
	printf("  %-22s %12" PRIu64 "  %s\n", name, blocks, where);
}

/* An area of `blocks` blocks from `start`: its row, "block N" or "blocks N..M". */
static void show_span_row(const char *name, uint64_t start, uint64_t blocks)
{
	char where[64];
	if (blocks == 1)
		snprintf(where, sizeof(where), "block %" PRIu64, start);
	else
		snprintf(where, sizeof(where), "blocks %" PRIu64 "..%" PRIu64, start,
			 start + blocks - 1);
	show_area_row(name, blocks, where);
}

static void report_bad_bitmap(struct dump *d, const char *which, const struct bitmap_count *c)
{
	if (!c->bad_blocks)
		return;
	printf("  (%" PRIu32 " %s bitmap block%s failed verification, the first at block %" PRIu64
	       "; %" PRIu64 " bits not counted: run fsck.ordfs)\n", c->bad_blocks, which,
	       c->bad_blocks == 1 ? "" : "s", c->first_bad, c->unknown);
	d->damaged = true;
}

static int show_areas(struct dump *d)
{
	const struct ordfs_super *sb = &d->sb;
	struct bitmap_count blocks, inodes;
	char where[96];

	/* Data blocks are [data_start, block_count - 1); inode i is bit i - 1,
	 * and inode 1 (bit 0) is reserved, so count bits [1, inode_count). */
	int err = bitmap_count(d->bd, sb, ORDFS_BT_BLOCK_BITMAP, sb->data_start,
			       sb->block_count - 1, &blocks);
	if (!err)
		err = bitmap_count(d->bd, sb, ORDFS_BT_INODE_BITMAP, 1, sb->inode_count, &inodes);
	if (err) {
		fprintf(stderr, PROG ": %s: cannot read the bitmaps: %s\n", d->o->image,
			strerror(-err));
		d->damaged = true;
		return err;
	}

	/* Groups past the block bitmap area (group_bitmaps) have their bitmap
	 * block in their first block, inside the data area. */
	uint64_t per = ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
	uint64_t groups = ordfs_block_groups(sb);
	uint64_t group_bitmaps = groups - sb->block_bitmap_blocks;
	uint64_t data_blocks = sb->block_count - 1 - sb->data_start - group_bitmaps;
	printf("\nArea use%s:\n", d->in_use     ? " (mounted: may be stale)"
				   : d->log_live ? " (as on disk, before journal replay)"
						 : "");
	printf("  %-22s %12s  %s\n", "area", "blocks", "where");
	snprintf(where, sizeof(where), "block 0 and block %" PRIu64, sb->block_count - 1);
	show_area_row("superblocks", 2, where);
	show_span_row("journal", sb->journal_start, sb->journal_blocks);
	show_span_row("block bitmap", sb->block_bitmap_start, sb->block_bitmap_blocks);
	if (group_bitmaps) {
		uint64_t first = ordfs_block_bitmap_block(sb, sb->block_bitmap_blocks);
		uint64_t last = ordfs_block_bitmap_block(sb, groups - 1);
		if (group_bitmaps == 1)
			snprintf(where, sizeof(where), "block %" PRIu64, first);
		else
			snprintf(where, sizeof(where),
				 "blocks %" PRIu64 "..%" PRIu64 ", every %" PRIu64 "th", first,
				 last, per);
		show_area_row("group bitmaps", group_bitmaps, where);
	}
	show_span_row("inode bitmap", sb->inode_bitmap_start, sb->inode_bitmap_blocks);
	show_span_row("inode table", sb->inode_table_start, sb->inode_table_blocks);
	if (group_bitmaps) {
		snprintf(where, sizeof(where),
			 "blocks %" PRIu64 "..%" PRIu64 " but the group bitmaps", sb->data_start,
			 sb->block_count - 2);
		show_area_row("data", data_blocks, where);
	} else {
		show_span_row("data", sb->data_start, data_blocks);
	}

	printf("\n");
	/* The group bitmap blocks' bits are set in the data area's range:
	 * metadata, not data in use. */
	printf(SHOW_LINE_FMT "%" PRIu64 "\n", "Data blocks used:",
	       blocks.set - blocks.group_bitmaps);
	printf(SHOW_LINE_FMT "%" PRIu64 "\n", "Data blocks free:", blocks.clear);
	report_bad_bitmap(d, "block", &blocks);
	/* What fsck.ordfs calls "blocks in use": every block outside the data
	 * area (superblocks, journal, bitmaps, inode table) plus data in use
	 * and the group bitmap blocks (set in the bitmap). */
	uint64_t in_use = sb->data_start + 1 + blocks.set;
	printf(SHOW_LINE_FMT "%" PRIu64 " of %" PRIu64 "\n", "Blocks in use:", in_use,
	       sb->block_count);
	printf(SHOW_LINE_FMT "%" PRIu64 " of %" PRIu32 " (not counting reserved inode 1)\n",
	       "Inodes in use:", inodes.set, sb->inode_count);
	printf(SHOW_LINE_FMT "%" PRIu64 "\n", "Inodes free:", inodes.clear);
	report_bad_bitmap(d, "inode", &inodes);
	if (!blocks.bad_blocks && !inodes.bad_blocks) {
		bool agree = sb->free_blocks == blocks.clear && sb->free_inodes == inodes.clear;
		printf(SHOW_LINE_FMT "%s\n", "Superblock free counts:",
		       agree ? "agree with the bitmaps"
			     : "differ from the bitmaps (they are advisory: recomputed at "
			       "mount, written at a clean unmount)");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dump_options o;
	struct dump d;

	memset(&o, 0, sizeof(o));
	int r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : EXIT_FAILED;
	memset(&d, 0, sizeof(d));
	d.o = &o;
	if (open_image(&d) != 0) {
		blockdev_destroy(d.bd);
		return EXIT_FAILED;
	}
	if (o.inode) {
		int err = show_inode(stdout, d.bd, &d.sb, o.inode);
		blockdev_destroy(d.bd);
		fflush(stdout);
		return err ? EXIT_FAILED : 0;
	}
	show_super(stdout, &d.sb);
	show_super_copies(&d);
	show_journal(&d);
	if (!o.header_only)
		show_areas(&d);
	blockdev_destroy(d.bd);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": %s: cannot write the listing: %s\n", o.image,
			strerror(errno));
		return EXIT_FAILED;
	}
	return d.damaged ? EXIT_FAILED : 0;
}
