/*
 * mkfs.c - choose the geometry of a new ordfs and write it onto a device.
 *
 * Owns: the defaults (block size, inode count, journal size, chosen like
 * mke2fs does), the planned superblock, and the first writes of an image.
 *
 * Rules kept here:
 *  - Plan, validate with ordfs_super_check_geometry(), then write.  The plan
 *    is pure apart from the clock and random bytes: nothing is written.
 *  - Write order: the old superblocks (block 0 and the last block) are
 *    destroyed first, then the metadata areas [1, data_start) are written
 *    (the journal superblock, the bitmaps and the root inode's block; the
 *    rest of the journal and of the inode table is zeroed the device's
 *    way: blockdev_write_zeroes), then a flush, then the superblocks, then
 *    a flush.  So an image whose mkfs stopped half way never looks valid.
 *  - lost+found is created through the ordinary mount/mkdir/unmount path;
 *    mkfs knows nothing about directory blocks.  It is root's, 0700, whoever
 *    owns the root directory (mke2fs's root_owner changes only the root).
 *  - Unmaking (a later step failed) zeroes both superblocks, flushed, as
 *    the first step of a write does.
 *  - Every on-disk field goes through the format.h encoders or le_put*.
 *
 * Layout written (block numbers; see format.h):
 *   0                      superblock (the rest of the block zero)
 *   1 .. journal_blocks    journal: log block 0 = journal superblock, empty
 *   block bitmap           blocks [0, data_start) and the last block in use;
 *                          bits past block_count set (never allocatable)
 *   inode bitmap           inodes 1 (reserved) and 2 (root) in use; bits past
 *                          inode_count set
 *   inode table            zero, except inode 2: the root directory
 *   data                   untouched
 *   block_count - 1        backup superblock
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "mkfs.h"
#include "../blockdev/blockdev.h"
#include "../fs.h"
#include "inode/inode.h"
#include "../ops.h"

#define DEFAULT_BLOCK_SIZE 4096u
#define BYTES_PER_INODE 16384u
#define MIN_INODES 16u
#define MIN_BLOCKS 64u
#define MIN_DATA_BLOCKS 16u         /* room for at least a few files */
#define MAX_INODE_TABLE_SHARE 4u    /* inode table at most 1/4 of the image */
#define MAX_INODES 0xfffffff0u      /* ordfs_super_check_geometry's limit */
#define WRITE_CHUNK (4u << 20)      /* bytes per write of the metadata areas */
#define HASH_SEED_SALT 0x68736168u  /* "hash": derives hash_seed from a UUID */

/* The messages below name these numbers. */
_Static_assert(ORDFS_MIN_JOURNAL_BLOCKS == 64, "update the journal size messages");
_Static_assert(ORDFS_LABEL_LEN == 32 && ORDFS_MOUNT_OPTS_LEN == 64,
	       "update the label and mount_opts messages");

/* ---- planning ---------------------------------------------------------- */

static int refuse(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* log2 of a power-of-two block size in the supported range, or 0. */
static uint32_t block_size_log(uint32_t block_size)
{
	for (uint32_t lg = ORDFS_MIN_BLOCK_LOG; lg <= ORDFS_MAX_BLOCK_LOG; lg++)
		if (block_size == 1u << lg)
			return lg;
	return 0;
}

/* The journal mke2fs would choose for a filesystem of this many blocks. */
static uint32_t default_journal_blocks(uint64_t block_count)
{
	uint64_t j;

	if (block_count < 32768)
		j = 1024;
	else if (block_count < 256 * 1024)
		j = 4096;
	else if (block_count < 512 * 1024)
		j = 8192;
	else if (block_count < 4096 * 1024)
		j = 16384;
	else
		j = 32768;
	if (j > block_count / 4)
		j = block_count / 4;
	if (j < ORDFS_MIN_JOURNAL_BLOCKS)
		j = ORDFS_MIN_JOURNAL_BLOCKS;
	return (uint32_t)j;
}

static int choose_journal(const struct mkfs_params *p, uint64_t block_count,
			  uint32_t *journal_blocks, const char **why)
{
	if (p->journal_blocks == 0) {
		*journal_blocks = default_journal_blocks(block_count);
		return 0;
	}
	if (p->journal_blocks < ORDFS_MIN_JOURNAL_BLOCKS)
		return refuse(why, "journal too small (at least 64 blocks)");
	if (p->journal_blocks > block_count / 2)
		return refuse(why, "journal too big for this image (at most half of it)");
	*journal_blocks = p->journal_blocks;
	return 0;
}

/* Inodes: one per BYTES_PER_INODE by default, rounded up to fill the last
 * inode table block, never so many that the table outgrows its share. */
static int choose_inodes(const struct mkfs_params *p, uint64_t block_count,
			 uint32_t block_size, uint32_t *inode_count, const char **why)
{
	uint32_t per_block = block_size / ORDFS_INODE_SIZE;
	uint64_t max_table = block_count / MAX_INODE_TABLE_SHARE;
	uint64_t max = max_table * per_block;
	if (max > MAX_INODES / per_block * per_block)
		max = MAX_INODES / per_block * per_block;

	uint64_t want = p->inode_count;
	if (want == 0) {
		/* bytes / 16 KiB, without overflowing at 2^48 blocks of 64 KiB */
		want = block_count * (block_size / 1024u) / (BYTES_PER_INODE / 1024u);
		if (want < MIN_INODES)
			want = MIN_INODES;
		want = div_up(want, per_block) * per_block;
		if (want > max)
			want = max;
	} else {
		if (want < MIN_INODES)
			return refuse(why, "too few inodes (at least 16)");
		want = div_up(want, per_block) * per_block;
		if (want > max)
			return refuse(why, "too many inodes for this image size");
	}
	if (want < MIN_INODES)
		return refuse(why, "image too small for the inode table");
	*inode_count = (uint32_t)want;
	return 0;
}

/* Lays the metadata areas out one after the other (format.h order). */
static void lay_out(struct ordfs_super *sb)
{
	uint32_t bs = ordfs_block_size(sb);
	uint32_t bits = ordfs_bits_per_bitmap_block(bs);

	sb->journal_start = 1;
	sb->block_bitmap_blocks = (uint32_t)div_up(sb->block_count, bits);
	sb->inode_bitmap_blocks = (uint32_t)div_up(sb->inode_count, bits);
	sb->inode_table_blocks = (uint32_t)div_up((uint64_t)sb->inode_count * ORDFS_INODE_SIZE, bs);
	sb->block_bitmap_start = sb->journal_start + sb->journal_blocks;
	sb->inode_bitmap_start = sb->block_bitmap_start + sb->block_bitmap_blocks;
	sb->inode_table_start = sb->inode_bitmap_start + sb->inode_bitmap_blocks;
	sb->data_start = sb->inode_table_start + sb->inode_table_blocks;
}

static int random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* UUID and the seeds derived from it.  A given UUID makes every seed
 * reproducible; otherwise the UUID (RFC 4122 version 4) and the hash seed
 * are random. */
static int choose_identity(const struct mkfs_params *p, struct ordfs_super *sb,
			   const char **why)
{
	if (p->uuid_set) {
		memcpy(sb->uuid, p->uuid, ORDFS_UUID_LEN);
		sb->hash_seed = ordfs_crc32c(HASH_SEED_SALT, sb->uuid, ORDFS_UUID_LEN);
	} else {
		uint8_t seed[4];
		int err = random_bytes(sb->uuid, ORDFS_UUID_LEN);
		if (!err)
			err = random_bytes(seed, sizeof(seed));
		if (err) {
			if (why)
				*why = "cannot get random bytes for the UUID";
			return err;
		}
		sb->uuid[6] = (uint8_t)((sb->uuid[6] & 0x0f) | 0x40);
		sb->uuid[8] = (uint8_t)((sb->uuid[8] & 0x3f) | 0x80);
		sb->hash_seed = le_get32(seed);
	}
	sb->csum_seed = ordfs_crc32c(~0u, sb->uuid, ORDFS_UUID_LEN);
	return 0;
}

static int copy_strings(const struct mkfs_params *p, struct ordfs_super *sb,
			const char **why)
{
	if (strnlen(p->label, sizeof(p->label)) > ORDFS_LABEL_LEN)
		return refuse(why, "label longer than 32 bytes");
	if (strnlen(p->mount_opts, sizeof(p->mount_opts)) > ORDFS_MOUNT_OPTS_LEN)
		return refuse(why, "default mount options longer than 64 bytes");
	memcpy(sb->label, p->label, ORDFS_LABEL_LEN);
	sb->label[ORDFS_LABEL_LEN] = '\0';
	memcpy(sb->mount_opts, p->mount_opts, ORDFS_MOUNT_OPTS_LEN);
	sb->mount_opts[ORDFS_MOUNT_OPTS_LEN] = '\0';
	return 0;
}

/* Block size and block count from the parameters and the device size. */
static int choose_size(const struct mkfs_params *p, uint64_t device_bytes,
		       struct ordfs_super *sb, const char **why)
{
	uint32_t bs = p->block_size ? p->block_size : DEFAULT_BLOCK_SIZE;
	sb->log_block_size = block_size_log(bs);
	if (sb->log_block_size == 0)
		return refuse(why, "block size must be a power of two from 1024 to 65536");

	uint64_t bytes = p->size_bytes ? p->size_bytes : device_bytes;
	if (bytes > device_bytes)
		return refuse(why, "requested size is larger than the device");
	sb->block_count = bytes / bs;
	if (sb->block_count < MIN_BLOCKS)
		return refuse(why, "image too small (at least 64 blocks)");
	if (sb->block_count > (1ull << 48))
		return refuse(why, "image too large (at most 2^48 blocks)");
	return 0;
}

int ordfs_mkfs_plan(const struct mkfs_params *p, uint64_t device_bytes,
		    struct ordfs_super *sb, const char **why)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = ORDFS_SB_MAGIC;
	sb->version = ORDFS_VERSION;
	sb->inode_size = ORDFS_INODE_SIZE;
	sb->state = ORDFS_STATE_CLEAN;

	int err = choose_size(p, device_bytes, sb, why);
	if (!err)
		err = choose_journal(p, sb->block_count, &sb->journal_blocks, why);
	if (!err)
		err = choose_inodes(p, sb->block_count, ordfs_block_size(sb), &sb->inode_count,
				    why);
	if (!err)
		err = copy_strings(p, sb, why);
	if (err)
		return err;

	sb->errors = p->errors ? p->errors : ORDFS_ERRORS_CONTINUE;
	if (sb->errors > ORDFS_ERRORS_ABORT)
		return refuse(why, "unknown errors= behaviour");

	lay_out(sb);
	if (sb->data_start + MIN_DATA_BLOCKS + 1 > sb->block_count)
		return refuse(why, "image too small: no room for data after the journal and inode table");
	/* After mkfs: every data block free (the root directory is empty);
	 * inodes 1 (reserved) and 2 (root) used. */
	sb->free_blocks = sb->block_count - sb->data_start - 1;
	sb->free_inodes = sb->inode_count - 2;

	err = choose_identity(p, sb, why);
	if (err)
		return err;
	sb->mkfs_time = (uint64_t)ordfs_now().sec;
	sb->write_time = sb->mkfs_time;
	sb->check_time = sb->mkfs_time;

	const char *bad;
	if (ordfs_super_check_geometry(sb, &bad))
		return refuse(why, bad);
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

/* What one metadata block holds: fill writes it into blk (zeroed, one
 * block long).  Blocks nobody fills stay zero. */
struct area_writer {
	const struct ordfs_super *sb;
	uint32_t block_size;
	struct ordfs_cred root_owner;
	void (*fill)(const struct area_writer *w, uint64_t blockno, uint8_t *blk);
};

/* Sets bits [from, to) of a bitmap block's payload. */
static void set_bits(uint8_t *payload, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		payload[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Sets the bits of [lo, hi) that fall in the bitmap block covering
 * [first, first + nbits). */
static void set_bit_range(uint8_t *payload, uint64_t first, uint64_t nbits, uint64_t lo,
			  uint64_t hi)
{
	uint64_t from = lo > first ? lo - first : 0;
	uint64_t to = hi < first + nbits ? hi - first : nbits;
	if (hi <= first || lo >= first + nbits)
		return;
	set_bits(payload, from, to);
}

static void fill_block_bitmap(const struct area_writer *w, uint64_t blockno, uint8_t *blk)
{
	const struct ordfs_super *sb = w->sb;
	uint64_t nbits = ordfs_bits_per_bitmap_block(w->block_size);
	uint64_t first = (blockno - sb->block_bitmap_start) * nbits;
	uint8_t *payload = blk + ORDFS_BLOCK_HDR_SIZE;

	ordfs_block_hdr_init(blk, ORDFS_BT_BLOCK_BITMAP, 0, blockno);
	set_bit_range(payload, first, nbits, 0, sb->data_start);
	set_bit_range(payload, first, nbits, sb->block_count - 1, UINT64_MAX);
	ordfs_block_csum_set(blk, w->block_size, sb->csum_seed);
}

/* Bit i stands for inode i + 1 (inode numbers start at 1). */
static void fill_inode_bitmap(const struct area_writer *w, uint64_t blockno, uint8_t *blk)
{
	const struct ordfs_super *sb = w->sb;
	uint64_t nbits = ordfs_bits_per_bitmap_block(w->block_size);
	uint64_t first = (blockno - sb->inode_bitmap_start) * nbits;
	uint8_t *payload = blk + ORDFS_BLOCK_HDR_SIZE;

	ordfs_block_hdr_init(blk, ORDFS_BT_INODE_BITMAP, 0, blockno);
	set_bit_range(payload, first, nbits, 0, ORDFS_ROOT_INO);
	set_bit_range(payload, first, nbits, sb->inode_count, UINT64_MAX);
	ordfs_block_csum_set(blk, w->block_size, sb->csum_seed);
}

static void root_inode(const struct ordfs_super *sb, const struct ordfs_cred *owner,
		       struct ordfs_inode *ino)
{
	memset(ino, 0, sizeof(*ino));
	ino->mode = S_IFDIR | 0755;
	ino->uid = owner->uid;
	ino->gid = owner->gid;
	ino->links = 2;
	ino->parent = ORDFS_ROOT_INO;
	ino->atime.sec = (int64_t)sb->mkfs_time;
	ino->mtime = ino->ctime = ino->crtime = ino->atime;
	ordfs_extent_root_init(ino->data);
}

/* Inode 1 stays an all-zero slot (reserved, marked in use in the bitmap). */
static void fill_inode_table(const struct area_writer *w, uint64_t blockno, uint8_t *blk)
{
	uint64_t root_block;
	uint32_t root_off;
	ordfs_inode_location(w->sb, ORDFS_ROOT_INO, &root_block, &root_off);
	if (blockno != root_block)
		return;
	struct ordfs_inode root;
	root_inode(w->sb, &w->root_owner, &root);
	ordfs_inode_encode(&root, ORDFS_ROOT_INO, w->sb->csum_seed, blk + root_off);
}

/* Log block 0: an empty journal whose first transaction will be 1. */
static void fill_journal(const struct area_writer *w, uint64_t blockno, uint8_t *blk)
{
	if (blockno != w->sb->journal_start)
		return;
	struct ordfs_journal_super js = {
		.block_size = w->block_size,
		.total_blocks = w->sb->journal_blocks,
		.first = 1,
		.start = 0,
		.sequence = 1,
		.err = 0,
	};
	memcpy(js.uuid, w->sb->uuid, ORDFS_UUID_LEN);
	ordfs_journal_super_encode(&js, w->sb->csum_seed, blk);
}

/* Which area a metadata block belongs to decides what fills it. */
static void fill_metadata_block(const struct area_writer *w, uint64_t blockno, uint8_t *blk)
{
	const struct ordfs_super *sb = w->sb;
	if (blockno < sb->block_bitmap_start)
		fill_journal(w, blockno, blk);
	else if (blockno < sb->inode_bitmap_start)
		fill_block_bitmap(w, blockno, blk);
	else if (blockno < sb->inode_table_start)
		fill_inode_bitmap(w, blockno, blk);
	else
		fill_inode_table(w, blockno, blk);
}

/* Writes blocks [start, start + count) in chunks of up to WRITE_CHUNK
 * bytes, each block zeroed and then given to w->fill. */
static int write_area(struct blockdev *bd, const struct area_writer *w, uint64_t start,
		      uint64_t count)
{
	uint32_t per_chunk = WRITE_CHUNK / w->block_size;
	uint8_t *buf = malloc(WRITE_CHUNK);
	if (!buf)
		return -ENOMEM;
	int err = 0;
	for (uint64_t b = start; b < start + count && !err; b += per_chunk) {
		uint64_t n = start + count - b < per_chunk ? start + count - b : per_chunk;
		memset(buf, 0, n * w->block_size);
		for (uint64_t i = 0; i < n && w->fill; i++)
			w->fill(w, b + i, buf + i * w->block_size);
		err = blockdev_write(bd, buf, n * w->block_size, b * w->block_size);
	}
	free(buf);
	return err;
}

/* Zeroes block 0 and the last block so no old superblock survives while
 * the new filesystem is half written. */
static int destroy_old_supers(struct blockdev *bd, const struct ordfs_super *sb)
{
	struct area_writer zero = { .sb = sb, .block_size = ordfs_block_size(sb) };
	int err = write_area(bd, &zero, 0, 1);
	if (!err)
		err = write_area(bd, &zero, sb->block_count - 1, 1);
	if (!err)
		err = blockdev_flush(bd);
	return err;
}

/* The metadata areas [1, data_start): the journal superblock, the bitmaps
 * and the root inode's block are written; the rest of the journal and of
 * the inode table are made to read as zeros the device's own way (a hole,
 * WRITE_ZEROES), so a big image does not get its whole inode table sent
 * as zeros (a 16 TiB image has 256 GiB of it). */
static int write_metadata_areas(struct blockdev *bd, const struct ordfs_super *sb,
				const struct ordfs_cred *root_owner)
{
	uint32_t bs = ordfs_block_size(sb);
	struct area_writer meta = { .sb = sb, .block_size = bs, .root_owner = *root_owner,
				    .fill = fill_metadata_block };
	uint64_t root_block;
	uint32_t root_off;
	ordfs_inode_location(sb, ORDFS_ROOT_INO, &root_block, &root_off);

	int err = write_area(bd, &meta, sb->journal_start, 1);
	if (!err && sb->journal_blocks > 1)
		err = blockdev_write_zeroes(bd, (sb->journal_start + 1) * bs,
					    (uint64_t)(sb->journal_blocks - 1) * bs);
	if (!err)
		err = write_area(bd, &meta, sb->block_bitmap_start,
				 sb->inode_table_start - sb->block_bitmap_start);
	if (!err)
		err = blockdev_write_zeroes(bd, sb->inode_table_start * bs,
					    (uint64_t)sb->inode_table_blocks * bs);
	if (!err)
		err = write_area(bd, &meta, root_block, 1);
	return err;
}

static int create_lost_found(struct blockdev *bd, const char **why)
{
	struct ordfs_options opts;
	struct ordfs *fs;
	struct inode *root, *lf;
	const struct ordfs_cred cred = { 0, 0 };

	ordfs_options_default(&opts);
	opts.commit_interval_ms = 0;
	int err = ordfs_mount(bd, &opts, &fs, why);
	if (err)
		return err;
	err = inode_get(fs, ORDFS_ROOT_INO, &root);
	if (err) {
		*why = "cannot read the new root directory";
		goto out_unmount;
	}
	err = ordfs_mkdir(fs, root, "lost+found", 0700, &cred, &lf);
	inode_put(fs, root);
	if (err) {
		/* -E2BIG: one directory change needs more than the journal can
		 * hold in one transaction. */
		*why = err == -E2BIG ? "journal too small for one transaction (make it bigger)"
				     : "cannot create lost+found";
		goto out_unmount;
	}
	inode_put(fs, lf);
out_unmount:;
	int uerr = ordfs_unmount(fs);
	if (!err && uerr) {
		*why = "cannot unmount the new filesystem";
		err = uerr;
	}
	return err;
}

int ordfs_mkfs_write(struct blockdev *bd, const struct ordfs_super *sb, const char **why)
{
	const struct ordfs_cred root = { 0, 0 };
	return ordfs_mkfs_write_owned(bd, sb, &root, why);
}

int ordfs_mkfs_unmake(struct blockdev *bd, const struct ordfs_super *sb)
{
	return destroy_old_supers(bd, sb);
}

int ordfs_mkfs_write_owned(struct blockdev *bd, const struct ordfs_super *sb,
			   const struct ordfs_cred *root_owner, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	int err = ordfs_super_check_geometry(sb, why);
	if (err)
		return err;
	uint32_t bs = ordfs_block_size(sb);
	if (blockdev_size(bd) / bs < sb->block_count) {
		*why = "device is smaller than the planned filesystem";
		return -EINVAL;
	}

	err = destroy_old_supers(bd, sb);
	if (err) {
		*why = "cannot write to the device";
		return err;
	}
	err = write_metadata_areas(bd, sb, root_owner);
	if (!err)
		err = blockdev_flush(bd);
	if (!err)
		err = ordfs_write_super(bd, sb, true);
	if (!err)
		err = blockdev_flush(bd);
	if (err) {
		*why = err == -ENOMEM ? "out of memory" : "cannot write the metadata areas";
		return err;
	}
	return create_lost_found(bd, why);
}
