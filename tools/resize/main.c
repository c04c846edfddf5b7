/*
 * main.c - resize.ordfs: grow an ordfs image to the size of its file,
 * block device or NBD export, or to SIZE, as resize2fs does: offline when
 * it is not mounted, online (through the daemon) when it is.
 *
 *   resize.ordfs IMAGE|MOUNTPOINT [SIZE]
 *
 * Owns: the command line, the conditions under which an image may grow,
 * and the report.  The geometry and the ordered writes are
 * src/super/grow.c's (offline) and grow_online.c's (the daemon's, asked
 * with ORDFS_IOC_GROW).
 *
 * Rules kept here:
 *  - A mounted image (mountinfo names it as the source of a FUSE mount,
 *    or IMAGE is the mount point) is grown by its daemon: the daemon asks
 *    its device for the new size itself.
 *  - Every argument is checked before the image is opened, and the
 *    image's state and the new size before anything is written: a refused
 *    run leaves the image byte for byte unchanged.
 *  - Only an image nobody uses: the flock the daemon, fsck.ordfs and
 *    tune.ordfs take, and the owner record (NBD), held to the end.
 *  - Never over a journal that needs replay, an unreadable journal
 *    superblock, a recorded error, or feature bits this version does not
 *    know: those need fsck.ordfs (or a newer resize.ordfs) first.
 *  - Shrinking is refused; so is a size larger than the device, past the
 *    format's limit, or past what the block bitmap's blocks cover.
 *  - Errors are one line on stderr, "resize.ordfs: IMAGE: reason", exit
 *    status 1; --help and --version exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "blockdev/blockdev.h"
#include "base/mountinfo.h"
#include "cli.h"
#include "ordfs_ioctl.h"
#include "offline_image.h"
#include "super/grow.h"
#include "super/owner.h"
#include "super/super.h"

#define PROG "resize.ordfs"

struct resize_options {
	const char *image;
	const char *size_arg; /* NULL: the size of the device */
	uint64_t size;        /* bytes */
};

static void print_help(void);
static int parse_option(int c, const char *arg, void *ctx);

static const struct cli tool = {
	.prog = PROG,
	.usage = "IMAGE [SIZE]",
	.shortopts = ":hV",
	.help_val = 'h',
	.print_help = print_help,
	.parse_option = parse_option,
};

#define usage_error(...) cli_usage_error(&tool, __VA_ARGS__)
#define image_error(...) cli_image_error(&tool, __VA_ARGS__)

static void print_help(void)
{
	printf("Usage: " PROG " IMAGE|MOUNTPOINT [SIZE]\n"
	       "Grow an ordfs filesystem to SIZE, or without SIZE to the size of its image\n"
	       "file, block device or NBD export (nbd://...).  A mounted filesystem is\n"
	       "grown online by its daemon; an unmounted one here.\n"
	       "\n"
	       "SIZE is in bytes, or with a K, M, G or T suffix (powers of 1024); the\n"
	       "filesystem takes the whole blocks that fit.\n"
	       "\n"
	       "Options:\n"
	       "  -h, --help          this help\n"
	       "  -V, --version       print the version\n"
	       "\n"
	       "Offline, the image must not be in use, its journal must be empty and it\n"
	       "must have no error recorded (run fsck.ordfs first).  Online, the mount\n"
	       "must be read-write, and root or the mount's owner must ask.  Shrinking is\n"
	       "not supported.\n"
	       "The inode count stays as it is.  Exit status: 0, or 1 on any failure,\n"
	       "with the image unchanged.\n");
}

static int parse_option(int c, const char *arg, void *ctx)
{
	(void)c, (void)arg, (void)ctx;
	return -1;
}

static int parse_args(int argc, char **argv, struct resize_options *o)
{
	int r = cli_parse_options(&tool, argc, argv, o);
	if (r)
		return r;
	if (cli_image_operand(&tool, argc, argv, &o->image))
		return -1;
	if (optind < argc) {
		o->size_arg = argv[optind++];
		if (!cli_parse_size(o->size_arg, &o->size)) {
			usage_error("invalid size '%s' (bytes, or with a K, M, G or T suffix)",
				    o->size_arg);
			return -1;
		}
	}
	return cli_no_more_operands(&tool, argc, argv);
}

static int open_image(const struct resize_options *o, struct blockdev **bd)
{
	char why[300];
	int err = blockdev_open_image(o->image, 0, 0, bd, why, sizeof(why));
	if (err) {
		image_error(o->image, "cannot open for writing: %s",
			    err == -EINVAL ? "not a regular file or block device" : why);
		return err;
	}
	if ((err = blockdev_host_lock(*bd, LOCK_EX)) != 0) {
		if (err == -EWOULDBLOCK)
			image_error(o->image, "image is in use (being checked, or mounted where "
				    "this mount namespace does not see it)");
		else
			image_error(o->image, "cannot lock the image: %s", strerror(-err));
		blockdev_destroy(*bd);
		*bd = NULL;
		return err;
	}
	return 0;
}

/* The block count asked for: SIZE, or the whole device. */
static int new_block_count(const struct resize_options *o, struct blockdev *bd,
			   const struct ordfs_super *sb, uint64_t *count)
{
	uint32_t bs = ordfs_block_size(sb);
	/* On NBD the export's last 512 bytes stay outside the filesystem, for
	 * the owner record (as mkfs.ordfs leaves them). */
	uint64_t room = blockdev_size(bd);
	if (blockdev_is_nbd_uri(o->image))
		room = room > ORDFS_OWNER_SIZE ? room - ORDFS_OWNER_SIZE : 0;
	uint64_t dev_blocks = room / bs;
	if (!o->size_arg) {
		*count = dev_blocks;
		return 0;
	}
	*count = o->size / bs;
	if (*count > dev_blocks) {
		image_error(o->image, "size %s is larger than the device (%" PRIu64 " blocks "
			    "of %" PRIu32 " bytes fit)", o->size_arg, dev_blocks, bs);
		return -EFBIG;
	}
	return 0;
}

/* The mount point of IMAGE if it is mounted (or IMAGE itself if it is a
 * directory: a mount point named directly).  *covered: the mount found is
 * not the one on top at its mount point (something is mounted over it,
 * so an ioctl there would reach another filesystem). */
static bool mounted_at(const char *image, char *mnt, size_t size, bool *covered)
{
	*covered = false;
	struct stat st;
	if (!blockdev_is_nbd_uri(image) && stat(image, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(mnt, size, "%s", image);
		return true;
	}
	if (mountinfo_image_mountpoint(image, mnt, size) != 0)
		return false;
	char top[4096], type[64], dev[32];
	char *abs = realpath(image, NULL);
	if (mountinfo_find(mnt, top, sizeof(top), type, sizeof(type), dev, sizeof(dev)) == 0)
		*covered = strcmp(top, abs ? abs : image) != 0;
	free(abs);
	return true;
}

/* Online: the daemon of the mount at mnt grows it (ORDFS_IOC_GROW). */
static int resize_online(const struct resize_options *o, const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		image_error(o->image, "cannot open the mount point %s: %s", mnt, strerror(errno));
		return -1;
	}
	struct ordfs_grow g;
	memset(&g, 0, sizeof(g));
	g.size_bytes = o->size_arg ? o->size : 0;
	int rc = ioctl(fd, ORDFS_IOC_GROW, &g);
	int saved = errno;
	close(fd);
	g.reply[sizeof(g.reply) - 1] = '\0';
	if (rc != 0) {
		if (g.reply[0])
			image_error(o->image, "%s", g.reply);
		else if (saved == ENOTTY || saved == ENOSYS)
			image_error(o->image, "%s is not a mounted ordfs that can grow online", mnt);
		else if (saved == EPERM)
			image_error(o->image, "growing a mounted filesystem takes root or the "
				    "mount's owner");
		else
			image_error(o->image, "%s", strerror(saved));
		return -1;
	}
	if (g.new_blocks == g.old_blocks)
		printf("The filesystem on %s (mounted on %s) is already %" PRIu64 " blocks long; "
		       "nothing to do.\n", o->image, mnt, g.new_blocks);
	else
		printf("The filesystem on %s is now %" PRIu64 " blocks of %" PRIu32 " bytes long "
		       "(was %" PRIu64 "), online on %s.\n", o->image, g.new_blocks,
		       g.block_size, g.old_blocks, mnt);
	return 0;
}

static int resize(const struct resize_options *o)
{
	char mnt[4096];
	bool covered;
	if (mounted_at(o->image, mnt, sizeof(mnt), &covered)) {
		if (covered) {
			image_error(o->image, "its mount on %s is covered by another mount; "
				    "unmount that one first", mnt);
			return -1;
		}
		return resize_online(o, mnt);
	}

	struct blockdev *bd;
	struct ordfs_super old, grown;
	const char *why = "";
	if (open_image(o, &bd))
		return -1;
	int err = ordfs_read_super(bd, false, &old, &why);
	if (err)
		image_error(o->image, "%s (run fsck.ordfs)", why);
	/* The owner record first: on NBD it is what says "in use". */
	struct owner_claim *claim = NULL;
	if (!err) {
		char owhy[300];
		struct owner_opts oo = { .program = PROG };
		err = owner_take(bd, old.block_count, ordfs_block_size(&old), &oo, true, &claim,
				 owhy, sizeof(owhy));
		if (err)
			image_error(o->image, "%s", owhy);
	}
	uint64_t count = 0;
	if (!err)
		err = cli_check_offline_image(&tool, o->image, bd, &old, true);
	if (!err)
		err = new_block_count(o, bd, &old, &count);
	bool nothing_to_do = !err && ordfs_grow_target(&old, count) == old.block_count;
	if (!err && !nothing_to_do && (err = ordfs_grow_geometry(&old, count, &grown, &why)) != 0) {
		if (err == -EFBIG && count <= (1ull << 48))
			image_error(o->image, "%s: at most %" PRIu64 " blocks of %" PRIu32
				    " bytes (%" PRIu64 " asked)", why, ordfs_grow_max_blocks(&old),
				    ordfs_block_size(&old), count);
		else
			image_error(o->image, "%s (%" PRIu64 " blocks of %" PRIu32 " bytes)", why,
				    old.block_count, ordfs_block_size(&old));
	}
	if (!err && !nothing_to_do) {
		/* A file or block device (the flock holds it) grown to its last
		 * block with 1 KiB blocks: the record's sector becomes the new
		 * backup's second copy, so it is given back first. */
		if (claim && !owner_record_fits(blockdev_size(bd), grown.block_count,
						ordfs_block_size(&grown))) {
			owner_release(claim);
			claim = NULL;
		}
		if ((err = ordfs_grow_offline(bd, &old, &grown)) != 0)
			image_error(o->image, "cannot grow the filesystem: %s (run fsck.ordfs)",
				    strerror(-err));
	}
	if (err)
		owner_undo(claim); /* a refused grow leaves the image as it was */
	else
		owner_release(claim);
	blockdev_destroy(bd);
	if (err)
		return -1;
	if (nothing_to_do)
		printf("The filesystem on %s is already %" PRIu64 " blocks long; nothing to do.\n",
		       o->image, old.block_count);
	else
		printf("The filesystem on %s is now %" PRIu64 " blocks of %" PRIu32 " bytes long "
		       "(was %" PRIu64 ").\n", o->image, grown.block_count,
		       ordfs_block_size(&grown), old.block_count);
	return 0;
}

int main(int argc, char **argv)
{
	struct resize_options o = { 0 };
	int r = parse_args(argc, argv, &o);
	if (r)
		return r < 0 ? 1 : 0;
	return resize(&o) ? 1 : 0;
}
