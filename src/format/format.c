/*
 * format.c - encode, decode and verify the on-disk structures of format.h.
 *
 * Owns: byte-offset encoding of the superblock, inodes, the common metadata
 * block header, journal block headers and the journal superblock, the
 * directory name hash, and the block-bitmap groups (where each group's
 * bitmap block is: the one answer every reader of the block bitmap asks).
 * Rules: decoders bounds-check every field and return -EUCLEAN with a
 * one-line reason for anything a correct ordfs never writes.
 */
#include <errno.h>
#include <string.h>

#include "format.h"
#include "base/ordfs_assert.h"

/* ---- superblock ------------------------------------------------------- */

#define COPY_CSUM_OFF (ORDFS_SB_COPY_SIZE - 4u) /* 508, in both superblocks */
#define SB_RESERVED_OFF 288u /* 288 .. 507: reserved, zero */

void ordfs_super_csum_set(uint8_t raw[ORDFS_SB_SIZE])
{
	for (uint32_t c = 0; c < ORDFS_SB_SIZE; c += ORDFS_SB_COPY_SIZE)
		le_put32(raw + c + COPY_CSUM_OFF, ordfs_crc32c(~0u, raw + c, COPY_CSUM_OFF));
}

bool ordfs_super_copies_agree(const uint8_t in[ORDFS_SB_SIZE])
{
	return memcmp(in, in + ORDFS_SB_COPY_SIZE, ORDFS_SB_COPY_SIZE) == 0;
}

void ordfs_super_encode(const struct ordfs_super *sb, uint8_t out[ORDFS_SB_SIZE])
{
	memset(out, 0, ORDFS_SB_SIZE);
	le_put32(out + 0, sb->magic);
	le_put32(out + 4, sb->version);
	le_put32(out + 8, sb->feature_compat);
	le_put32(out + 12, sb->feature_incompat);
	le_put32(out + 16, sb->feature_ro_compat);
	le_put32(out + 20, sb->log_block_size);
	le_put64(out + 24, sb->block_count);
	le_put32(out + 32, sb->inode_count);
	le_put32(out + 36, sb->inode_size);
	le_put64(out + 40, sb->journal_start);
	le_put32(out + 48, sb->journal_blocks);
	le_put32(out + 52, sb->block_bitmap_blocks);
	le_put64(out + 56, sb->block_bitmap_start);
	le_put64(out + 64, sb->inode_bitmap_start);
	le_put32(out + 72, sb->inode_bitmap_blocks);
	le_put32(out + 76, sb->inode_table_blocks);
	le_put64(out + 80, sb->inode_table_start);
	le_put64(out + 88, sb->data_start);
	le_put64(out + 96, sb->free_blocks);
	le_put32(out + 104, sb->free_inodes);
	le_put32(out + 108, sb->state);
	le_put32(out + 112, sb->errors);
	le_put32(out + 116, sb->orphan_head);
	memcpy(out + 120, sb->uuid, ORDFS_UUID_LEN);
	memcpy(out + 136, sb->label, strnlen(sb->label, ORDFS_LABEL_LEN));
	memcpy(out + 168, sb->mount_opts, strnlen(sb->mount_opts, ORDFS_MOUNT_OPTS_LEN));
	le_put64(out + 232, sb->mkfs_time);
	le_put64(out + 240, sb->mount_time);
	le_put64(out + 248, sb->write_time);
	le_put64(out + 256, sb->check_time);
	le_put32(out + 264, sb->mount_count);
	le_put32(out + 268, sb->hash_seed);
	le_put32(out + 272, sb->csum_seed);
	le_put32(out + 276, sb->last_error_code);
	le_put64(out + 280, sb->last_error_time);
	le_put32(out + COPY_CSUM_OFF, ordfs_crc32c(~0u, out, COPY_CSUM_OFF));
	memcpy(out + ORDFS_SB_COPY_SIZE, out, ORDFS_SB_COPY_SIZE);
}

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EUCLEAN;
}

static uint64_t div_round_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

int ordfs_super_check_geometry(const struct ordfs_super *sb, const char **why)
{
	if (sb->log_block_size < ORDFS_MIN_BLOCK_LOG || sb->log_block_size > ORDFS_MAX_BLOCK_LOG)
		return fail(why, "block size out of range (1 KiB .. 64 KiB)");
	uint32_t bs = ordfs_block_size(sb);
	if (sb->inode_size != ORDFS_INODE_SIZE)
		return fail(why, "unsupported inode size");
	if (sb->block_count < 16 || sb->block_count > (1ull << 48))
		return fail(why, "block count out of range");
	if (sb->inode_count < ORDFS_FIRST_INO + 1 || sb->inode_count > 0xfffffff0u)
		return fail(why, "inode count out of range");
	if (sb->journal_blocks < ORDFS_MIN_JOURNAL_BLOCKS)
		return fail(why, "journal too small");

	uint32_t bits = ordfs_bits_per_bitmap_block(bs);
	uint64_t groups = div_round_up(sb->block_count, bits);
	bool group_bitmaps = sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	if (group_bitmaps ? sb->block_bitmap_blocks > groups : sb->block_bitmap_blocks != groups)
		return fail(why, "block bitmap size does not match block count");
	if (sb->inode_bitmap_blocks != div_round_up(sb->inode_count, bits))
		return fail(why, "inode bitmap size does not match inode count");
	if (sb->inode_table_blocks !=
	    div_round_up((uint64_t)sb->inode_count * ORDFS_INODE_SIZE, bs))
		return fail(why, "inode table size does not match inode count");

	/* The areas follow each other in a fixed order (see format.h). */
	if (sb->journal_start != 1)
		return fail(why, "journal does not start at block 1");
	if (sb->block_bitmap_start != sb->journal_start + sb->journal_blocks ||
	    sb->inode_bitmap_start != sb->block_bitmap_start + sb->block_bitmap_blocks ||
	    sb->inode_table_start != sb->inode_bitmap_start + sb->inode_bitmap_blocks ||
	    sb->data_start != sb->inode_table_start + sb->inode_table_blocks)
		return fail(why, "metadata areas are not laid out contiguously");
	if (sb->data_start + 2 > sb->block_count)
		return fail(why, "no room for data blocks");
	/* Groups past the area (GROUP_BITMAPS) lie wholly in the data area,
	 * and each holds a block besides its bitmap block: the backup
	 * superblock is never one. */
	if ((uint64_t)sb->block_bitmap_blocks * bits < sb->data_start)
		return fail(why, "block bitmap does not cover the metadata areas");
	if (groups > sb->block_bitmap_blocks && (sb->block_count - 1) % bits == 0)
		return fail(why, "the backup superblock falls on a group bitmap block");
	if (sb->free_blocks > sb->block_count || sb->free_inodes > sb->inode_count)
		return fail(why, "free counts larger than totals");
	if (sb->orphan_head >= sb->inode_count + 1 ||
	    (sb->orphan_head != 0 && sb->orphan_head < ORDFS_ROOT_INO))
		return fail(why, "orphan list head out of range");
	return 0;
}

/* ---- block-bitmap groups ------------------------------------------------ */

static uint32_t bits_per_group(const struct ordfs_super *sb)
{
	return ordfs_bits_per_bitmap_block(ordfs_block_size(sb));
}

static bool has_group_bitmaps(const struct ordfs_super *sb)
{
	return sb->feature_incompat & ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
}

uint64_t ordfs_block_groups(const struct ordfs_super *sb)
{
	return div_round_up(sb->block_count, bits_per_group(sb));
}

uint64_t ordfs_block_bitmap_block(const struct ordfs_super *sb, uint64_t group)
{
	ORDFS_ASSERT(group < ordfs_block_groups(sb));
	if (group < sb->block_bitmap_blocks)
		return sb->block_bitmap_start + group;
	/* Past the area: only with the feature (the geometry says so). */
	ORDFS_ASSERT(has_group_bitmaps(sb));
	return group * bits_per_group(sb);
}

bool ordfs_is_group_bitmap_block(const struct ordfs_super *sb, uint64_t blockno)
{
	uint32_t per = bits_per_group(sb);
	return has_group_bitmaps(sb) && blockno < sb->block_count && blockno % per == 0 &&
	       blockno / per >= sb->block_bitmap_blocks;
}

/* The first group past the area starting at or after `start`. */
static uint64_t first_group_from(const struct ordfs_super *sb, uint64_t start)
{
	uint32_t per = bits_per_group(sb);
	uint64_t g = start / per + (start % per != 0);
	return g < sb->block_bitmap_blocks ? sb->block_bitmap_blocks : g;
}

bool ordfs_range_has_group_start(const struct ordfs_super *sb, uint64_t start, uint64_t len)
{
	if (len == 0 || start >= (1ull << 48))
		return false;
	uint64_t g = first_group_from(sb, start);
	return g <= (1ull << 48) / bits_per_group(sb) && g * bits_per_group(sb) - start < len;
}

bool ordfs_range_has_group_bitmap(const struct ordfs_super *sb, uint64_t start, uint64_t len)
{
	if (!has_group_bitmaps(sb) || len == 0)
		return false;
	uint64_t g = first_group_from(sb, start);
	if (g >= ordfs_block_groups(sb))
		return false;
	return g * bits_per_group(sb) - start < len; /* g * per >= start, < 2^48 */
}

int ordfs_block_bitmap_verify(const struct ordfs_super *sb, uint64_t group, const uint8_t *blk)
{
	uint64_t blockno = ordfs_block_bitmap_block(sb, group);
	int err = ordfs_block_verify(blk, ordfs_block_size(sb), sb->csum_seed,
				     ORDFS_BT_BLOCK_BITMAP, blockno);
	if (!err && group >= sb->block_bitmap_blocks && !ordfs_bitmap_bit(blk, 0))
		err = -EUCLEAN; /* a group bitmap block marked free */
	return err;
}

/* One 512-byte copy. */
static int super_decode_copy(const uint8_t *in, struct ordfs_super *sb, const char **why)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = le_get32(in + 0);
	if (sb->magic != ORDFS_SB_MAGIC)
		return fail(why, "not an ordfs image (bad magic)");
	if (le_get32(in + COPY_CSUM_OFF) != ordfs_crc32c(~0u, in, COPY_CSUM_OFF))
		return fail(why, "bad superblock checksum");
	sb->version = le_get32(in + 4);
	sb->feature_compat = le_get32(in + 8);
	sb->feature_incompat = le_get32(in + 12);
	sb->feature_ro_compat = le_get32(in + 16);
	sb->log_block_size = le_get32(in + 20);
	sb->block_count = le_get64(in + 24);
	sb->inode_count = le_get32(in + 32);
	sb->inode_size = le_get32(in + 36);
	sb->journal_start = le_get64(in + 40);
	sb->journal_blocks = le_get32(in + 48);
	sb->block_bitmap_blocks = le_get32(in + 52);
	sb->block_bitmap_start = le_get64(in + 56);
	sb->inode_bitmap_start = le_get64(in + 64);
	sb->inode_bitmap_blocks = le_get32(in + 72);
	sb->inode_table_blocks = le_get32(in + 76);
	sb->inode_table_start = le_get64(in + 80);
	sb->data_start = le_get64(in + 88);
	sb->free_blocks = le_get64(in + 96);
	sb->free_inodes = le_get32(in + 104);
	sb->state = le_get32(in + 108);
	sb->errors = le_get32(in + 112);
	sb->orphan_head = le_get32(in + 116);
	memcpy(sb->uuid, in + 120, ORDFS_UUID_LEN);
	memcpy(sb->label, in + 136, ORDFS_LABEL_LEN);
	sb->label[ORDFS_LABEL_LEN] = '\0';
	memcpy(sb->mount_opts, in + 168, ORDFS_MOUNT_OPTS_LEN);
	sb->mount_opts[ORDFS_MOUNT_OPTS_LEN] = '\0';
	sb->mkfs_time = le_get64(in + 232);
	sb->mount_time = le_get64(in + 240);
	sb->write_time = le_get64(in + 248);
	sb->check_time = le_get64(in + 256);
	sb->mount_count = le_get32(in + 264);
	sb->hash_seed = le_get32(in + 268);
	sb->csum_seed = le_get32(in + 272);
	sb->last_error_code = le_get32(in + 276);
	sb->last_error_time = le_get64(in + 280);

	if (sb->version != ORDFS_VERSION)
		return fail(why, "unsupported ordfs version");
	for (uint32_t off = SB_RESERVED_OFF; off < COPY_CSUM_OFF; off++)
		if (in[off])
			return fail(why, "reserved superblock bytes not zero");
	if (sb->feature_incompat & ~ORDFS_FEATURE_INCOMPAT_SUPPORTED) {
		if (why)
			*why = "image uses incompatible features this ordfs does not know";
		return -EOPNOTSUPP;
	}
	if (sb->csum_seed != ordfs_crc32c(~0u, sb->uuid, ORDFS_UUID_LEN))
		return fail(why, "checksum seed does not match the UUID");
	if (sb->errors < ORDFS_ERRORS_CONTINUE || sb->errors > ORDFS_ERRORS_ABORT)
		return fail(why, "bad errors= behaviour in superblock");
	return ordfs_super_check_geometry(sb, why);
}

int ordfs_super_decode(const uint8_t in[ORDFS_SB_SIZE], struct ordfs_super *sb,
		       const char **why)
{
	const char *why1;
	int err = super_decode_copy(in, sb, why);
	if (err && super_decode_copy(in + ORDFS_SB_COPY_SIZE, sb, &why1) == 0)
		return 0;
	if (err) /* both failed: report copy 0, the primary */
		(void)super_decode_copy(in, sb, why);
	return err;
}

/* ---- owner record ------------------------------------------------------- */

void ordfs_owner_encode(const struct ordfs_owner *o, uint8_t out[ORDFS_OWNER_SIZE])
{
	memset(out, 0, ORDFS_OWNER_SIZE);
	le_put32(out + 0, ORDFS_OWNER_MAGIC);
	le_put32(out + 4, o->state);
	le_put64(out + 8, o->seq);
	le_put64(out + 16, o->nonce);
	le_put32(out + 24, o->pid);
	le_put32(out + 28, o->interval_ms);
	le_put64(out + 32, o->time);
	memcpy(out + 40, o->program, strnlen(o->program, ORDFS_OWNER_PROGRAM_LEN));
	memcpy(out + 56, o->host, strnlen(o->host, ORDFS_OWNER_HOST_LEN));
	le_put32(out + 508, ordfs_crc32c(~0u, out, 508));
}

int ordfs_owner_decode(const uint8_t in[ORDFS_OWNER_SIZE], struct ordfs_owner *o)
{
	if (le_get32(in) != ORDFS_OWNER_MAGIC || le_get32(in + 508) != ordfs_crc32c(~0u, in, 508))
		return -EUCLEAN;
	memset(o, 0, sizeof(*o));
	o->state = le_get32(in + 4);
	if (o->state != ORDFS_OWNER_FREE && o->state != ORDFS_OWNER_HELD)
		return -EUCLEAN;
	o->seq = le_get64(in + 8);
	o->nonce = le_get64(in + 16);
	o->pid = le_get32(in + 24);
	o->interval_ms = le_get32(in + 28);
	o->time = le_get64(in + 32);
	memcpy(o->program, in + 40, ORDFS_OWNER_PROGRAM_LEN);
	memcpy(o->host, in + 56, ORDFS_OWNER_HOST_LEN);
	return 0;
}

/* ---- common metadata block header ------------------------------------- */

void ordfs_block_hdr_init(uint8_t *blk, enum ordfs_block_type type, uint32_t owner,
			  uint64_t blockno)
{
	le_put32(blk + 0, ORDFS_BLOCK_MAGIC);
	le_put16(blk + 4, (uint16_t)type);
	le_put16(blk + 6, 0);
	le_put32(blk + 8, 0);
	le_put32(blk + 12, owner);
	le_put64(blk + 16, blockno);
}

static uint32_t block_csum(const uint8_t *blk, uint32_t block_size, uint32_t seed)
{
	static const uint8_t zero[4];
	uint32_t crc = ordfs_crc32c(seed, blk, 8);
	crc = ordfs_crc32c(crc, zero, 4);
	return ordfs_crc32c(crc, blk + 12, block_size - 12);
}

void ordfs_block_csum_set(uint8_t *blk, uint32_t block_size, uint32_t csum_seed)
{
	le_put32(blk + 8, block_csum(blk, block_size, csum_seed));
}

int ordfs_block_verify(const uint8_t *blk, uint32_t block_size, uint32_t csum_seed,
		       enum ordfs_block_type type, uint64_t blockno)
{
	if (le_get32(blk) != ORDFS_BLOCK_MAGIC || le_get16(blk + 4) != type ||
	    le_get16(blk + 6) != 0 || le_get64(blk + 16) != blockno)
		return -EUCLEAN; /* reserved (6) is zero, as everything never written */
	if (le_get32(blk + 8) != block_csum(blk, block_size, csum_seed))
		return -EUCLEAN;
	return 0;
}

/* ---- inodes ------------------------------------------------------------ */

static void put_time(uint8_t *sec, uint8_t *nsec, struct ordfs_timespec t)
{
	le_put64(sec, (uint64_t)t.sec);
	le_put32(nsec, t.nsec);
}

static struct ordfs_timespec get_time(const uint8_t *sec, const uint8_t *nsec)
{
	struct ordfs_timespec t = { (int64_t)le_get64(sec), le_get32(nsec) };
	return t;
}

static uint32_t inode_csum(const uint8_t *raw, uint32_t inum, uint32_t seed)
{
	uint8_t num[4];
	le_put32(num, inum);
	return ordfs_crc32c(ordfs_crc32c(seed, num, 4), raw, ORDFS_INODE_SIZE - 4);
}

void ordfs_extent_root_init(uint8_t data[ORDFS_INODE_DATA_LEN])
{
	memset(data, 0, ORDFS_INODE_DATA_LEN);
	le_put16(data + 0, ORDFS_EXTENT_MAGIC);
	le_put16(data + 2, 0);
	le_put16(data + 4, ORDFS_INODE_ROOT_EXTENTS);
	le_put16(data + 6, 0);
}

void ordfs_inode_csum_set(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum, uint32_t csum_seed)
{
	le_put32(raw + 252, inode_csum(raw, inum, csum_seed));
}

void ordfs_inode_encode(const struct ordfs_inode *ino, uint32_t inum, uint32_t csum_seed,
			uint8_t out[ORDFS_INODE_SIZE])
{
	memset(out, 0, ORDFS_INODE_SIZE);
	le_put16(out + 0, ino->mode);
	le_put32(out + 4, ino->uid);
	le_put32(out + 8, ino->gid);
	le_put32(out + 12, ino->links);
	le_put64(out + 16, ino->size);
	le_put64(out + 24, ino->blocks);
	put_time(out + 32, out + 64, ino->atime);
	put_time(out + 40, out + 68, ino->mtime);
	put_time(out + 48, out + 72, ino->ctime);
	put_time(out + 56, out + 76, ino->crtime);
	le_put32(out + 80, ino->generation);
	le_put32(out + 84, ino->flags);
	le_put64(out + 88, ino->xattr_block);
	le_put32(out + 96, ino->next_orphan);
	le_put32(out + 100, ino->rdev);
	le_put32(out + 104, ino->parent);
	le_put32(out + 108, ino->attr_flags);
	memcpy(out + ORDFS_INODE_DATA_OFF, ino->data, ORDFS_INODE_DATA_LEN);
	ordfs_inode_csum_set(out, inum, csum_seed);
}

void ordfs_inode_patch_next_orphan(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum,
				   uint32_t csum_seed, uint32_t next)
{
	le_put32(raw + 96, next);
	ordfs_inode_csum_set(raw, inum, csum_seed);
}

int ordfs_inode_decode(const uint8_t in[ORDFS_INODE_SIZE], uint32_t inum,
		       uint32_t csum_seed, struct ordfs_inode *ino)
{
	uint32_t unknown;
	int err = ordfs_inode_decode_check(in, inum, csum_seed, ino, &unknown);
	return err ? err : unknown ? -EUCLEAN : 0;
}

/* The reserved bytes of an inode slot (FORMAT.md: zero). */
#define INODE_RESERVED_A 2u   /* 2 bytes after mode */
#define INODE_RESERVED_B 240u /* 12 bytes before the checksum */

static bool inode_reserved_zero(const uint8_t in[ORDFS_INODE_SIZE])
{
	if (in[INODE_RESERVED_A] || in[INODE_RESERVED_A + 1])
		return false;
	for (uint32_t off = INODE_RESERVED_B; off < 252; off++)
		if (in[off])
			return false;
	return true;
}

int ordfs_inode_clear_reserved(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum, uint32_t csum_seed)
{
	if (le_get32(raw + 252) != inode_csum(raw, inum, csum_seed))
		return -EUCLEAN;
	if (inode_reserved_zero(raw))
		return 0;
	memset(raw + INODE_RESERVED_A, 0, 2);
	memset(raw + INODE_RESERVED_B, 0, 252 - INODE_RESERVED_B);
	ordfs_inode_csum_set(raw, inum, csum_seed);
	return 1;
}

int ordfs_inode_decode_check(const uint8_t in[ORDFS_INODE_SIZE], uint32_t inum,
			     uint32_t csum_seed, struct ordfs_inode *ino, uint32_t *unknown)
{
	memset(ino, 0, sizeof(*ino));
	*unknown = 0;
	if (le_get32(in + 252) != inode_csum(in, inum, csum_seed))
		return -EUCLEAN;
	if (!inode_reserved_zero(in))
		return -EUCLEAN;
	ino->mode = le_get16(in + 0);
	ino->uid = le_get32(in + 4);
	ino->gid = le_get32(in + 8);
	ino->links = le_get32(in + 12);
	ino->size = le_get64(in + 16);
	ino->blocks = le_get64(in + 24);
	ino->atime = get_time(in + 32, in + 64);
	ino->mtime = get_time(in + 40, in + 68);
	ino->ctime = get_time(in + 48, in + 72);
	ino->crtime = get_time(in + 56, in + 76);
	ino->generation = le_get32(in + 80);
	ino->flags = le_get32(in + 84);
	ino->xattr_block = le_get64(in + 88);
	ino->next_orphan = le_get32(in + 96);
	ino->rdev = le_get32(in + 100);
	ino->parent = le_get32(in + 104);
	uint32_t attr = le_get32(in + 108);
	ino->attr_flags = attr & ORDFS_FL_KNOWN;
	memcpy(ino->data, in + ORDFS_INODE_DATA_OFF, ORDFS_INODE_DATA_LEN);

	if (ino->atime.nsec >= 1000000000u || ino->mtime.nsec >= 1000000000u ||
	    ino->ctime.nsec >= 1000000000u || ino->crtime.nsec >= 1000000000u)
		return -EUCLEAN;
	if (ino->flags & ~ORDFS_INODE_FLAGS_KNOWN)
		return -EUCLEAN;
	/* only a symlink keeps its target in data[]: on anything else the
	 * flag would hide the extent tree (a slot freed as mode 0 is free,
	 * whatever its flags) */
	if ((ino->flags & ORDFS_INODE_FAST_SYMLINK) && ino->mode != 0 &&
	    (ino->mode & 0170000) != 0120000)
		return -EUCLEAN;
	if (ino->size > (1ull << 62))
		return -EUCLEAN;
	*unknown = attr & ~ORDFS_FL_KNOWN;
	return 0;
}

int ordfs_symlink_check(const struct ordfs_inode *ino, const char **why)
{
	if (ino->size == 0)
		return fail(why, "symlink with an empty target");
	if (ino->size > ORDFS_SYMLINK_MAX)
		return fail(why, "symlink target longer than 4095 bytes");
	if ((ino->flags & ORDFS_INODE_FAST_SYMLINK) && ino->size > ORDFS_FAST_SYMLINK_MAX)
		return fail(why, "fast symlink longer than the 127 bytes its inode holds");
	return 0;
}

/* ---- directory name hash ---------------------------------------------- */

/* Two CRC32C lanes with different seeds, folded through a 64-bit mixer
 * (splitmix64 finaliser) so that neighbouring names spread evenly. */
uint64_t ordfs_name_hash(uint32_t seed, const char *name, size_t len)
{
	uint64_t lo = ordfs_crc32c(seed ^ 0x9e3779b9u, name, len);
	uint64_t hi = ordfs_crc32c(~seed, name, len);
	uint64_t h = (hi << 32) | lo;
	h ^= (uint64_t)len * 0x9e3779b97f4a7c15ull;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* ---- journal blocks ---------------------------------------------------- */

void ordfs_jblock_hdr_init(uint8_t *blk, enum ordfs_journal_block_type type,
			   uint64_t sequence)
{
	le_put32(blk + 0, ORDFS_JOURNAL_MAGIC);
	le_put32(blk + 4, (uint32_t)type);
	le_put64(blk + 8, sequence);
}

static uint32_t jblock_csum(const uint8_t *blk, uint32_t block_size, uint32_t seed)
{
	return ordfs_crc32c(seed, blk, block_size - ORDFS_JB_TAIL);
}

void ordfs_jblock_csum_set(uint8_t *blk, uint32_t block_size, uint32_t csum_seed)
{
	le_put32(blk + block_size - ORDFS_JB_TAIL, jblock_csum(blk, block_size, csum_seed));
}

bool ordfs_jblock_valid(const uint8_t *blk, uint32_t block_size, uint32_t csum_seed,
			enum ordfs_journal_block_type type, uint64_t sequence)
{
	return le_get32(blk) == ORDFS_JOURNAL_MAGIC && le_get32(blk + 4) == (uint32_t)type &&
	       le_get64(blk + 8) == sequence &&
	       le_get32(blk + block_size - ORDFS_JB_TAIL) ==
		       jblock_csum(blk, block_size, csum_seed);
}

void ordfs_journal_super_csum_set(uint8_t *blk, uint32_t csum_seed)
{
	for (uint32_t c = 0; c < ORDFS_SB_SIZE; c += ORDFS_SB_COPY_SIZE)
		le_put32(blk + c + COPY_CSUM_OFF, ordfs_crc32c(csum_seed, blk + c, COPY_CSUM_OFF));
}

void ordfs_journal_super_encode(const struct ordfs_journal_super *js, uint32_t csum_seed,
				uint8_t *blk)
{
	memset(blk, 0, js->block_size);
	ordfs_jblock_hdr_init(blk, ORDFS_JB_SUPER, 0);
	le_put32(blk + 16, js->block_size);
	le_put32(blk + 20, js->total_blocks);
	le_put32(blk + 24, js->first);
	le_put32(blk + 28, js->start);
	le_put64(blk + 32, js->sequence);
	le_put32(blk + 40, (uint32_t)js->err);
	memcpy(blk + 44, js->uuid, ORDFS_UUID_LEN);
	le_put32(blk + COPY_CSUM_OFF, ordfs_crc32c(csum_seed, blk, COPY_CSUM_OFF));
	memcpy(blk + ORDFS_SB_COPY_SIZE, blk, ORDFS_SB_COPY_SIZE);
}

/* One 512-byte copy. */
static int journal_super_decode_copy(const uint8_t *blk, uint32_t block_size,
				     uint32_t csum_seed, struct ordfs_journal_super *js,
				     const char **why)
{
	if (le_get32(blk) != ORDFS_JOURNAL_MAGIC || le_get32(blk + 4) != ORDFS_JB_SUPER ||
	    le_get64(blk + 8) != 0 ||
	    le_get32(blk + COPY_CSUM_OFF) != ordfs_crc32c(csum_seed, blk, COPY_CSUM_OFF))
		return fail(why, "bad journal superblock (magic or checksum)");
	js->block_size = le_get32(blk + 16);
	js->total_blocks = le_get32(blk + 20);
	js->first = le_get32(blk + 24);
	js->start = le_get32(blk + 28);
	js->sequence = le_get64(blk + 32);
	js->err = (int32_t)le_get32(blk + 40);
	memcpy(js->uuid, blk + 44, ORDFS_UUID_LEN);
	if (js->block_size != block_size)
		return fail(why, "journal block size differs from the filesystem's");
	if (js->total_blocks < ORDFS_MIN_JOURNAL_BLOCKS || js->first != 1)
		return fail(why, "journal geometry out of range");
	if (js->start != 0 && (js->start < js->first || js->start >= js->total_blocks))
		return fail(why, "journal start out of range");
	/* mkfs starts at 1 and every number after is one more: 0 (whose
	 * predecessor wraps to 2^64 - 1) or a number near the wrap is damage. */
	if (js->sequence == 0 || js->sequence >= ORDFS_JSEQ_LIMIT)
		return fail(why, "journal sequence out of range");
	return 0;
}

int ordfs_journal_super_decode(const uint8_t *blk, uint32_t block_size,
			       uint32_t csum_seed, struct ordfs_journal_super *js,
			       const char **why)
{
	const char *why1;
	if (block_size < ORDFS_SB_SIZE)
		return fail(why, "journal block size out of range");
	int err = journal_super_decode_copy(blk, block_size, csum_seed, js, why);
	if (err && journal_super_decode_copy(blk + ORDFS_SB_COPY_SIZE, block_size, csum_seed, js,
					     &why1) == 0)
		return 0;
	if (err) /* both failed: report copy 0 */
		(void)journal_super_decode_copy(blk, block_size, csum_seed, js, why);
	return err;
}
