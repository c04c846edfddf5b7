/*
 * show_inode.c - dump.ordfs -i INODE (see show_inode.h): one inode slot,
 * decoded, one field a line in the superblock listing's layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blockdev/blockdev.h"
#include "inode/iflags.h"
#include "show_inode.h"
#include "show_super.h"

static const char *type_name(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "FIFO";
	case S_IFSOCK: return "socket";
	default: return "unknown type";
	}
}

static void show_ts(FILE *out, const char *label, struct ordfs_timespec t)
{
	char buf[64];
	show_time(t.sec < 0 ? 0 : (uint64_t)t.sec, buf, sizeof(buf));
	fprintf(out, SHOW_LINE_FMT "%s (%" PRId64 ".%09" PRIu32 ")\n", label, buf, t.sec, t.nsec);
}

/* "iA (0x90)", "- (0x0)", and the bits no ordfs defines, if any. */
static void show_file_flags(FILE *out, uint32_t flags, uint32_t unknown)
{
	char letters[IFLAGS_LETTERS_LEN];
	iflags_letters(flags, letters);
	fprintf(out, SHOW_LINE_FMT "%s (0x%" PRIx32 ")", "File flags:", letters, flags);
	if (unknown)
		fprintf(out, ", and bits no ordfs defines: 0x%" PRIx32, unknown);
	fprintf(out, "\n");
}

static void show_fields(FILE *out, uint32_t ino, const struct ordfs_inode *d, uint32_t unknown)
{
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Inode:", ino);
	fprintf(out, SHOW_LINE_FMT "%s\n", "Type:", type_name(d->mode));
	fprintf(out, SHOW_LINE_FMT "%04o\n", "Mode:", (unsigned)(d->mode & 07777));
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Links:", d->links);
	fprintf(out, SHOW_LINE_FMT "uid %" PRIu32 ", gid %" PRIu32 "\n", "Owner:", d->uid, d->gid);
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 "\n", "Size:", d->size);
	fprintf(out, SHOW_LINE_FMT "%" PRIu64 "\n", "Blocks:", d->blocks);
	show_file_flags(out, d->attr_flags, unknown);
	if (d->attr_flags & ~iflags_allowed(d->mode))
		fprintf(out, SHOW_LINE_FMT "some of them are not for a %s (fsck.ordfs clears "
			"them)\n", "", type_name(d->mode));
	fprintf(out, SHOW_LINE_FMT "%s%s%s\n", "Inode flags:",
		d->flags & ORDFS_INODE_FAST_SYMLINK ? "fast_symlink " : "",
		d->flags & ORDFS_INODE_ORPHAN ? "orphan " : "", d->flags ? "" : "(none)");
	fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Generation:", d->generation);
	if (S_ISDIR(d->mode))
		fprintf(out, SHOW_LINE_FMT "%" PRIu32 "\n", "Parent:", d->parent);
	if (S_ISCHR(d->mode) || S_ISBLK(d->mode))
		fprintf(out, SHOW_LINE_FMT "0x%" PRIx32 "\n", "Device:", d->rdev);
	if (d->xattr_block)
		fprintf(out, SHOW_LINE_FMT "%" PRIu64 "\n", "Xattr block:", d->xattr_block);
	show_ts(out, "Access time:", d->atime);
	show_ts(out, "Modify time:", d->mtime);
	show_ts(out, "Change time:", d->ctime);
	show_ts(out, "Creation time:", d->crtime);
}

int show_inode(FILE *out, struct blockdev *bd, const struct ordfs_super *sb, uint32_t ino)
{
	if (ino == 0 || ino > sb->inode_count) {
		fprintf(out, SHOW_LINE_FMT "out of range (1..%" PRIu32 ")\n", "Inode:",
			sb->inode_count);
		return -EINVAL;
	}
	uint32_t bs = ordfs_block_size(sb);
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(sb, ino, &blk, &off);
	uint8_t *b = malloc(bs);
	int err = b ? blockdev_read(bd, b, bs, blk * bs) : -ENOMEM;
	struct ordfs_inode d;
	uint32_t unknown = 0;
	bool zero = true;
	for (uint32_t i = 0; !err && i < ORDFS_INODE_SIZE && zero; i++)
		zero = b[off + i] == 0;
	if (!err && !zero)
		err = ordfs_inode_decode_check(b + off, ino, sb->csum_seed, &d, &unknown);
	free(b);
	if (!err && (zero || d.mode == 0))
		err = -ENOENT;
	if (err) {
		fprintf(out, SHOW_LINE_FMT "%" PRIu32 ": %s\n", "Inode:", ino,
			err == -ENOENT	  ? "free"
			: err == -EUCLEAN ? "fails its checksum or decode (fsck.ordfs repairs it)"
					  : strerror(-err));
		return err;
	}
	show_fields(out, ino, &d, unknown);
	return 0;
}
