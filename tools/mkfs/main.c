/*
 * mkfs.ordfs - make an ordfs filesystem in an image file or on a block device.
 *
 *   mkfs.ordfs [-b blocksize] [-N inodes] [-J size=MiB] [-L label] [-U uuid]
 *              [-E root_owner[=UID:GID],mount_opts=OPTS]
 *              [-e continue|remount-ro|abort] [-d DIR]
 *              [-n] [-F] [-q] IMAGE [SIZE]
 *
 * Owns: the command line, the checks made before anything is written, and
 * the creation or extension of an image file.  The geometry and the writing
 * are the library's (src/mkfs/mkfs.c), and so is filling the new
 * filesystem from -d DIR (src/mkfs/populate.c); nothing here knows the
 * format beyond the superblock magic it looks for.  -E is parsed by
 * extended.c.  The option loop (--help, --version), the message lines, -e
 * and the size and UUID formatters are shared with tune.ordfs and
 * dump.ordfs (tools/common/cli.c).
 *
 * Who owns what: the root directory is the caller's (real uid and gid)
 * unless -E root_owner says otherwise: root's for root, as mke2fs makes
 * it, and a user's own for a user, who will mount the image with
 * fusermount3 as that user and must be able to write to it.  With -d, a
 * run as root keeps every file's owner (and the root directory takes
 * DIR's, unless -E root_owner is given); a user's run makes everything the
 * user's.
 *
 * Rules kept here:
 *  - Everything is validated before the image is opened for writing: the
 *    options, the size, the plan, and the signatures of what the image
 *    holds now.  A refused run leaves the image byte-for-byte unchanged (and
 *    does not create it).
 *  - An existing ordfs, or another filesystem's signature, is overwritten
 *    only with -F.
 *  - Every error is one line on stderr, "mkfs.ordfs: ...", and exit status
 *    1 (operation failed or bad usage, as mke2fs does).  --help and
 *    --version exit 0.
 *  - -d DIR must be a directory this run can open, checked before
 *    anything is written.  If copying it fails (a file it cannot read, no
 *    space left), the error names the path, the new filesystem is
 *    unmade (its superblocks zeroed: a half-filled image never looks
 *    valid) and the exit status is 1.
 *  - A file this run created is removed again if making the filesystem
 *    fails.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "blockdev/blockdev.h"
#include "cli.h"
#include "extended.h"
#include "format/format.h"
#include "mkfs/mkfs.h"
#include "mkfs/populate.h"
#include "mount_opts.h"
#include "ops.h"
#include "super/owner.h"

#define PROG "mkfs.ordfs"
#define EXIT_FAILED 1
#define SIGNATURE_PROBE_BYTES (65600u + 8u) /* through btrfs's magic */

struct mkfs_options {
	struct mkfs_params params;
	struct mkfs_extended ext; /* -E */
	const char *source;       /* -d DIR */
	const char *image;
	const char *size_arg;
	uint64_t size;          /* SIZE in bytes, 0 = not given */
	uint64_t journal_mib;   /* -J size=, 0 = default */
	bool dry_run, force, quiet;
};

/* What the image is now, found without writing anything. */
struct target {
	bool exists;
	bool is_blockdev;
	uint64_t bytes;          /* current size of the file or device */
	struct blockdev *nbd;    /* an NBD export, connected from the probe on */
};

/* ---- messages --------------------------------------------------------- */

static void print_help(void);
static int parse_option(int c, const char *arg, void *ctx);

static const struct cli tool = {
	.prog = PROG,
	.usage = "[options] IMAGE [SIZE]",
	.shortopts = ":b:N:J:L:U:E:e:d:nFqhV",
	.help_val = 'h',
	.print_help = print_help,
	.parse_option = parse_option,
};

/* One line: what is wrong, then where to look. */
#define usage_error(...) cli_usage_error(&tool, __VA_ARGS__)

static void image_error(const char *image, const char *reason, int err)
{
	if (err)
		cli_image_error(&tool, image, "%s: %s", reason, strerror(-err));
	else
		cli_image_error(&tool, image, "%s", reason);
}

static void print_help(void)
{
	printf("Usage: " PROG " [options] IMAGE [SIZE]\n"
	       "Make an ordfs filesystem in IMAGE (an image file or a block device).\n"
	       "\n"
	       "SIZE is in bytes, or with a suffix K, M, G or T (powers of 1024).  If\n"
	       "IMAGE does not exist it is created with that size (sparse); a smaller\n"
	       "existing file is extended.  Without SIZE the whole file or device is used.\n"
	       "\n"
	       "Options:\n"
	       "  -b BLOCKSIZE        block size in bytes: 1024..65536, a power of two\n"
	       "                      (default 4096)\n"
	       "  -N INODES           number of inodes (default one per 16 KiB)\n"
	       "  -J size=MIB         journal size in MiB (default chosen from the size)\n"
	       "  -L LABEL            volume label, at most 32 bytes\n"
	       "  -U UUID             filesystem UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)\n"
	       "                      or 'random' (default); a given UUID also fixes the\n"
	       "                      directory hash seed\n"
	       "  -E OPTION,...       extended options, separated by commas:\n"
	       "    root_owner[=UID:GID]\n"
	       "                      owner of the root directory (alone: the caller's\n"
	       "                      uid and gid, which is also the default)\n"
	       "    mount_opts=OPTS   default mount options stored in the superblock\n"
	       "                      (at most 64 bytes; takes the rest of the argument,\n"
	       "                      commas included, so it comes last)\n"
	       "  -e BEHAVIOUR        on metadata errors: continue (default), remount-ro\n"
	       "                      or abort (panic is accepted as abort)\n"
	       "  -d DIR              copy the tree DIR into the new filesystem (files,\n"
	       "                      holes, links, devices, modes, times, xattrs, ACLs;\n"
	       "                      owners when run as root)\n"
	       "  -n                  print what would be made, write nothing\n"
	       "  -F                  overwrite an existing filesystem or signature\n"
	       "  -q                  quiet\n"
	       "  -h, --help          this help\n"
	       "  -V, --version       print the version\n");
}

/* ---- parsing ---------------------------------------------------------- */

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, case-insensitive. */
static bool parse_uuid(const char *s, uint8_t uuid[ORDFS_UUID_LEN])
{
	if (strlen(s) != 36)
		return false;
	size_t byte = 0;
	for (size_t i = 0; i < 36;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			i++;
			continue;
		}
		int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		uuid[byte++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return byte == ORDFS_UUID_LEN;
}

static int parse_block_size(const char *arg, struct mkfs_options *o)
{
	uint64_t v;
	if (!cli_parse_u64(arg, &v) || v < 1024 || v > 65536 || (v & (v - 1))) {
		usage_error("invalid block size '%s' (a power of two from 1024 to 65536)",
			    arg);
		return -1;
	}
	o->params.block_size = (uint32_t)v;
	return 0;
}

static int parse_inodes(const char *arg, struct mkfs_options *o)
{
	uint64_t v;
	if (!cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX) {
		usage_error("invalid inode count '%s'", arg);
		return -1;
	}
	o->params.inode_count = (uint32_t)v;
	return 0;
}

static int parse_journal(const char *arg, struct mkfs_options *o)
{
	uint64_t v;
	if (strncmp(arg, "size=", 5) != 0) {
		usage_error("invalid journal option '%s' (only size=MIB is known)", arg);
		return -1;
	}
	if (!cli_parse_u64(arg + 5, &v) || v == 0 || v > (1u << 20)) {
		usage_error("invalid journal size '%s' (MiB, at least 1)", arg + 5);
		return -1;
	}
	o->journal_mib = v;
	return 0;
}

static int parse_label(const char *arg, struct mkfs_options *o)
{
	if (strlen(arg) > ORDFS_LABEL_LEN) {
		usage_error("label '%s' is longer than 32 bytes", arg);
		return -1;
	}
	strcpy(o->params.label, arg);
	return 0;
}

static int parse_uuid_option(const char *arg, struct mkfs_options *o)
{
	if (strcmp(arg, "random") == 0) {
		o->params.uuid_set = false;
		return 0;
	}
	if (!parse_uuid(arg, o->params.uuid)) {
		usage_error("invalid UUID '%s'", arg);
		return -1;
	}
	o->params.uuid_set = true;
	return 0;
}

/* -E option[,...] (extended.c); mount_opts= takes the rest of the
 * argument. */
static int parse_extended(const char *arg, struct mkfs_options *o)
{
	char why[256];
	if (mkfs_parse_extended(arg, (uint32_t)getuid(), (uint32_t)getgid(), mount_opts_validate,
				&o->ext, why, sizeof(why)) != 0) {
		usage_error("%s", why);
		return -1;
	}
	if (o->ext.mount_opts_set)
		strcpy(o->params.mount_opts, o->ext.mount_opts);
	return 0;
}

static int parse_option(int c, const char *arg, void *ctx)
{
	struct mkfs_options *o = ctx;
	switch (c) {
	case 'b': return parse_block_size(arg, o);
	case 'N': return parse_inodes(arg, o);
	case 'J': return parse_journal(arg, o);
	case 'L': return parse_label(arg, o);
	case 'U': return parse_uuid_option(arg, o);
	case 'E': return parse_extended(arg, o);
	case 'e': return cli_parse_errors(&tool, arg, &o->params.errors);
	case 'd': o->source = arg; return 0;
	case 'n': o->dry_run = true; return 0;
	case 'F': o->force = true; return 0;
	case 'q': o->quiet = true; return 0;
	default: return -1;
	}
}

static int parse_operands(int argc, char **argv, struct mkfs_options *o)
{
	if (cli_image_operand(&tool, argc, argv, &o->image))
		return -1;
	if (optind < argc) {
		o->size_arg = argv[optind++];
		if (!cli_parse_size(o->size_arg, &o->size)) {
			usage_error("invalid size '%s' (bytes, or with K, M, G, T)", o->size_arg);
			return -1;
		}
	}
	return cli_no_more_operands(&tool, argc, argv);
}

/* 0 to go on, 1 when --help/--version was served, -1 on a usage error
 * (already reported). */
static int parse_args(int argc, char **argv, struct mkfs_options *o)
{
	int r = cli_parse_options(&tool, argc, argv, o);
	return r ? r : parse_operands(argc, argv, o);
}

/* -J size=MiB becomes blocks once the block size is known. */
static void apply_journal_size(struct mkfs_options *o)
{
	uint32_t bs = o->params.block_size ? o->params.block_size : 4096u;
	if (o->journal_mib)
		o->params.journal_blocks = (uint32_t)((o->journal_mib << 20) / bs);
}

/* ---- looking at the image before writing ------------------------------ */

static int device_size(const char *path, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = ioctl(fd, BLKGETSIZE64, bytes) < 0 ? -errno : 0;
	close(fd);
	return err;
}

static int probe_target(const struct mkfs_options *o, struct target *t)
{
	struct stat st;
	memset(t, 0, sizeof(*t));
	if (blockdev_is_nbd_uri(o->image)) {
		char why[300];
		int err = blockdev_open_image(o->image, 0, 0, &t->nbd, why, sizeof(why));
		if (err) {
			fprintf(stderr, "mkfs.ordfs: %s: %s\n", o->image, why);
			return -1;
		}
		t->exists = true;
		t->is_blockdev = true; /* its size is the server's */
		/* The owner record needs the export's last 512 bytes outside
		 * the filesystem (with 1 KiB blocks it costs one block). */
		t->bytes = blockdev_size(t->nbd) - ORDFS_OWNER_SIZE;
		return 0;
	}
	if (stat(o->image, &st) < 0) {
		if (errno == ENOENT && o->size) {
			t->bytes = 0;
			return 0;
		}
		image_error(o->image, errno == ENOENT ? "does not exist (give a SIZE to create it)"
						      : "cannot stat",
			    errno == ENOENT ? 0 : -errno);
		return -1;
	}
	t->exists = true;
	if (S_ISREG(st.st_mode)) {
		t->bytes = (uint64_t)st.st_size;
		return 0;
	}
	if (!S_ISBLK(st.st_mode)) {
		image_error(o->image, "not a regular file or block device", 0);
		return -1;
	}
	t->is_blockdev = true;
	int err = device_size(o->image, &t->bytes);
	if (err) {
		image_error(o->image, "cannot read the device size", err);
		return -1;
	}
	return 0;
}

struct signature {
	uint64_t off;
	const char *magic;
	size_t len;
	const char *what;
};

/* Signatures of what mkfs would destroy.  Order matters only for the name
 * reported: the more specific ones come first. */
static const struct signature signatures[] = {
	{ 1080, "\x53\xef", 2, "an ext2/ext3/ext4 filesystem" },
	{ 0, "XFSB", 4, "an XFS filesystem" },
	{ 65600, "_BHRfS_M", 8, "a btrfs filesystem" },
	{ 0, "LUKS\xba\xbe", 6, "a LUKS encrypted volume" },
	{ 1024, "\x10\x20\xf5\xf2", 4, "an F2FS filesystem" },
	{ 0, "hsqs", 4, "a squashfs filesystem" },
	{ 512, "LABELONE", 8, "an LVM physical volume" },
	{ 3, "NTFS    ", 8, "an NTFS filesystem" },
	{ 3, "EXFAT   ", 8, "an exFAT filesystem" },
	{ 82, "FAT32   ", 8, "a FAT32 filesystem" },
	{ 54, "FAT16   ", 8, "a FAT16 filesystem" },
	{ 54, "FAT12   ", 8, "a FAT12 filesystem" },
	{ 4086, "SWAPSPACE2", 10, "swap space" },
	{ 8182, "SWAPSPACE2", 10, "swap space" },
	{ 16374, "SWAPSPACE2", 10, "swap space" },
	{ 65526, "SWAPSPACE2", 10, "swap space" },
	{ 4086, "SWAP-SPACE", 10, "swap space" },
	{ 510, "\x55\xaa", 2, "a partition table or boot sector" },
};

/* The name of the first signature found in the probe, or NULL.  An ordfs
 * superblock counts by its magic alone: a damaged one is still worth
 * keeping for fsck.ordfs. */
static const char *find_signature(const uint8_t *probe, size_t len)
{
	if (len >= 4 && le_get32(probe) == ORDFS_SB_MAGIC)
		return "an ordfs filesystem";
	for (size_t i = 0; i < sizeof(signatures) / sizeof(signatures[0]); i++) {
		const struct signature *s = &signatures[i];
		if (s->off + s->len <= len && memcmp(probe + s->off, s->magic, s->len) == 0)
			return s->what;
	}
	return NULL;
}

static ssize_t read_probe(const struct target *t, const char *path, uint8_t *buf, size_t len)
{
	if (t->nbd) {
		if (len > blockdev_size(t->nbd))
			len = (size_t)blockdev_size(t->nbd);
		int err = blockdev_read(t->nbd, buf, len, 0);
		return err ? err : (ssize_t)len;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)got;
}

/* Refuses (unless -F) to overwrite a filesystem or another signature.  A
 * dry run only says what it found. */
static int check_existing(const struct mkfs_options *o, const struct target *t)
{
	if (!t->exists || o->force)
		return 0;
	uint8_t *probe = malloc(SIGNATURE_PROBE_BYTES);
	if (!probe) {
		image_error(o->image, "out of memory", 0);
		return -1;
	}
	ssize_t n = read_probe(t, o->image, probe, SIGNATURE_PROBE_BYTES);
	if (n < 0) {
		image_error(o->image, "cannot read", (int)n);
		free(probe);
		return -1;
	}
	const char *what = find_signature(probe, (size_t)n);
	free(probe);
	if (!what)
		return 0;
	if (o->dry_run) {
		if (!o->quiet)
			printf("Note: %s contains %s; making ordfs on it needs -F.\n", o->image,
			       what);
		return 0;
	}
	char reason[128];
	snprintf(reason, sizeof(reason), "contains %s (use -F to overwrite it)", what);
	image_error(o->image, reason, 0);
	return -1;
}

/* ---- report ----------------------------------------------------------- */

static const char *errors_name(uint32_t errors)
{
	switch (errors) {
	case ORDFS_ERRORS_RO: return "remount-ro";
	case ORDFS_ERRORS_ABORT: return "abort";
	default: return "continue";
	}
}

static void print_plan(const struct mkfs_options *o, const struct ordfs_super *sb)
{
	uint32_t bs = ordfs_block_size(sb);
	char size[32], journal[32], uuid[37];
	cli_format_bytes(sb->block_count * bs, CLI_UP_TO_PIB, size, sizeof(size));
	cli_format_bytes((uint64_t)sb->journal_blocks * bs, CLI_UP_TO_PIB, journal,
			 sizeof(journal));
	cli_format_uuid(sb->uuid, uuid);

	printf("%s %s (%s)\n", o->dry_run ? "Would make ordfs on" : "Making ordfs on",
	       o->image, size);
	printf("Block size:            %" PRIu32 "\n", bs);
	printf("Blocks:                %" PRIu64 "\n", sb->block_count);
	printf("Inodes:                %" PRIu32 "\n", sb->inode_count);
	printf("Journal:               %" PRIu32 " blocks (%s) at block %" PRIu64 "\n",
	       sb->journal_blocks, journal, sb->journal_start);
	printf("Block bitmap:          %" PRIu32 " blocks at block %" PRIu64 "\n",
	       sb->block_bitmap_blocks, sb->block_bitmap_start);
	printf("Inode bitmap:          %" PRIu32 " blocks at block %" PRIu64 "\n",
	       sb->inode_bitmap_blocks, sb->inode_bitmap_start);
	printf("Inode table:           %" PRIu32 " blocks at block %" PRIu64 "\n",
	       sb->inode_table_blocks, sb->inode_table_start);
	printf("Data blocks:           %" PRIu64 " from block %" PRIu64 "\n",
	       sb->block_count - sb->data_start - 1, sb->data_start);
	printf("Backup superblock:     block %" PRIu64 "\n", sb->block_count - 1);
	printf("UUID:                  %s\n", uuid);
	printf("Label:                 %s\n", sb->label[0] ? sb->label : "(none)");
	printf("Default mount options: %s\n", sb->mount_opts[0] ? sb->mount_opts : "(none)");
	printf("Errors behaviour:      %s\n", errors_name(sb->errors));
	fflush(stdout);
}

/* ---- writing ---------------------------------------------------------- */

/* Creates the image file (it must not exist) or extends an existing one to
 * SIZE.  *created tells the caller to remove it on failure. */
static int prepare_file(const struct mkfs_options *o, const struct target *t, bool *created)
{
	*created = false;
	if (t->is_blockdev || (t->exists && t->bytes >= o->size))
		return 0;
	int fd = open(o->image, O_WRONLY | O_CLOEXEC | (t->exists ? 0 : O_CREAT | O_EXCL),
		      0666);
	if (fd < 0) {
		image_error(o->image, t->exists ? "cannot open" : "cannot create", -errno);
		return -1;
	}
	*created = !t->exists;
	int err = ftruncate(fd, (off_t)o->size) < 0 ? -errno : 0;
	if (!err && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (err) {
		/* A refused mkfs leaves no file it created (a host filesystem
		 * whose files cannot be that large: EFBIG). */
		if (*created)
			unlink(o->image);
		*created = false;
		image_error(o->image, err == -EFBIG ? "cannot set the image size (larger than "
						      "a file on this host filesystem may be)"
						    : "cannot set the image size", err);
		return -1;
	}
	return 0;
}

/* Asks the host to allocate the metadata areas now (regular files), so a
 * later commit never fails or stalls allocating host space: all of them up
 * to the inode table, and at most PREALLOC_INODE_TABLE of that (a 16 TiB
 * image has 256 GiB of inode table, most of which may never be used: the
 * rest is allocated by the host as inodes are written). */
#define PREALLOC_INODE_TABLE (1ull << 30)
static int preallocate_metadata(struct blockdev *bd, const struct ordfs_super *sb)
{
	uint64_t bs = ordfs_block_size(sb);
	uint64_t table = (uint64_t)sb->inode_table_blocks * bs;
	if (table > PREALLOC_INODE_TABLE)
		table = PREALLOC_INODE_TABLE;
	off_t len = (off_t)(sb->inode_table_start * bs + table);
	if (fallocate(blockdev_file_fd(bd), 0, 0, len) < 0 && errno != EOPNOTSUPP &&
	    errno != ENOSYS)
		return -errno;
	return 0;
}

/* The root directory's owner: -E root_owner, else the caller's real ids
 * (root's for root, as mke2fs; a user's own for a user). */
static struct ordfs_cred root_owner(const struct mkfs_options *o)
{
	if (o->ext.root_owner_set)
		return (struct ordfs_cred){ o->ext.root_uid, o->ext.root_gid };
	return (struct ordfs_cred){ (uint32_t)getuid(), (uint32_t)getgid() };
}

/* -d DIR into the filesystem just written on bd.  0, or -1 after one line
 * naming what could not be copied. */
static int fill_from_source(const struct mkfs_options *o, const struct target *t,
			    struct blockdev *bd)
{
	struct mkfs_populate p = {
		.source = o->source,
		.keep_owners = geteuid() == 0,
		.owner = { (uint32_t)getuid(), (uint32_t)getgid() },
		.root_owner_set = o->ext.root_owner_set,
		.root_owner = root_owner(o),
	};
	struct stat st;
	if (!t->nbd && !t->is_blockdev && stat(o->image, &st) == 0) {
		p.skip_set = true; /* the image, if it lies inside DIR */
		p.skip_dev = st.st_dev;
		p.skip_ino = st.st_ino;
	}
	struct mkfs_populate_stats stats;
	char *why = NULL;
	int err = ordfs_mkfs_populate(bd, &p, &stats, &why);
	if (err) {
		fprintf(stderr, PROG ": %s\n", why ? why : strerror(-err));
		free(why);
		return -1;
	}
	if (!o->quiet) {
		char bytes[32];
		cli_format_bytes(stats.data_bytes, CLI_UP_TO_PIB, bytes, sizeof(bytes));
		printf("Copied %s: %" PRIu64 " files and directories, %" PRIu64
		       " more hard links, %s of data.\n",
		       o->source, stats.inodes, stats.links, bytes);
	}
	return 0;
}

static int write_filesystem(const struct mkfs_options *o, const struct target *t,
			    const struct ordfs_super *sb)
{
	struct blockdev *bd = t->nbd;
	const char *why = "";
	int err = 0;
	if (!bd && (err = blockdev_file_open(o->image, 0, &bd)) != 0) {
		image_error(o->image, "cannot open for writing", err);
		return -1;
	}
	/* Held while the filesystem is written: a daemon or fsck that opens
	 * the image meanwhile (over NBD, where no flock reaches) is refused. */
	struct owner_claim *claim = NULL;
	char claim_why[300];
	struct owner_opts oo = { .program = "mkfs.ordfs" };
	err = owner_take(bd, sb->block_count, ordfs_block_size(sb), &oo, true, &claim,
			 claim_why, sizeof(claim_why));
	if (err)
		why = claim_why;
	bool written = false;
	if (!err) {
		const struct ordfs_cred owner = root_owner(o);
		err = ordfs_mkfs_write_owned(bd, sb, &owner, &why);
		written = true;
	}
	/* After the write: zeroing may have punched holes in them. */
	if (!err && !t->is_blockdev) {
		err = preallocate_metadata(bd, sb);
		if (err)
			why = "cannot allocate space for the metadata areas";
	}
	bool copy_failed = false;
	if (!err && o->source && fill_from_source(o, t, bd) != 0) {
		/* Reported; a half-filled filesystem must not look made. */
		copy_failed = true;
		err = -EIO;
		if (ordfs_mkfs_unmake(bd, sb) != 0)
			fprintf(stderr, PROG ": %s: cannot zero the superblocks of the unfinished filesystem\n",
				o->image);
	}
	if (written)
		owner_release(claim);
	else
		owner_undo(claim);
	if (bd != t->nbd)
		blockdev_destroy(bd);
	if (copy_failed)
		return -1;
	if (err) {
		image_error(o->image, why, err == -EBUSY ? 0 : err);
		return -1;
	}
	return 0;
}

/* True if a running ordfs daemon (or fsck.ordfs) holds the image's lock.
 * A file that does not exist yet is not in use. */
static bool image_in_use(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd); /* drops our lock, if we got it */
	return busy;
}

static int make_filesystem(const struct mkfs_options *o, const struct target *t,
			   const struct ordfs_super *sb)
{
	bool created;
	if (!t->nbd && image_in_use(o->image)) {
		fprintf(stderr, "mkfs.ordfs: %s: image is in use (mounted by ordfs?)\n", o->image);
		return -1;
	}
	if (prepare_file(o, t, &created))
		return -1;
	if (write_filesystem(o, t, sb)) {
		if (created)
			unlink(o->image);
		return -1;
	}
	if (!o->quiet)
		printf("Filesystem written (superblocks, journal, bitmaps, root, lost+found%s).\n",
		       o->source ? ", and the copy" : "");
	return 0;
}

/* -d DIR: a directory this run can open, before anything is written. */
static int check_source(const struct mkfs_options *o)
{
	if (!o->source)
		return 0;
	int fd = open(o->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": cannot read %s: %s\n", o->source, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct mkfs_options o;
	struct target t;
	struct ordfs_super sb;
	const char *why = "";

	memset(&o, 0, sizeof(o));
	int r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : EXIT_FAILED;
	apply_journal_size(&o);
	if (check_source(&o))
		return EXIT_FAILED;
	if (probe_target(&o, &t))
		return EXIT_FAILED;

	uint64_t device_bytes = t.bytes;
	if (!t.is_blockdev && o.size > device_bytes)
		device_bytes = o.size; /* the file will be extended to SIZE */
	o.params.size_bytes = o.size;
	int status = EXIT_FAILED;
	int err = ordfs_mkfs_plan(&o.params, device_bytes, &sb, &why);
	if (err)
		image_error(o.image, why, 0);
	else if (!check_existing(&o, &t)) {
		if (!o.quiet)
			print_plan(&o, &sb);
		status = o.dry_run ? 0 : make_filesystem(&o, &t, &sb) ? EXIT_FAILED : 0;
	}
	blockdev_destroy(t.nbd);
	return status;
}
