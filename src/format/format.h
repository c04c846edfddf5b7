/*
 * format.h - the ordfs on-disk format, declared once.
 *
 * Owns: every on-disk structure, its byte offsets, its encode/decode pair and
 * its checksum verify/set pair.  docs/FORMAT.md describes the same layout in
 * prose; keep the two in step.
 *
 * Rules:
 *  - All integers are little-endian and are converted only here (endian_le.h).
 *  - Decoded structs are plain host structs; nothing overlays a disk block.
 *  - Every metadata block carries a CRC32C: the superblock and inodes in their
 *    last 4 bytes, all other metadata blocks in the common block header,
 *    journal blocks in their own tail.  Checksums are seeded with the
 *    filesystem's checksum seed (crc32c of the UUID) so a block copied from
 *    another ordfs image never verifies.
 *  - Decoders validate: they return -EUCLEAN (corrupt) or -EINVAL and never
 *    trust a length, count or block number before bounds-checking it.
 *
 * Image layout (block numbers, block size B = 1 << log_block_size):
 *
 *   0                      primary superblock (first 1024 bytes used)
 *   [journal_start, +journal_blocks)        the journal (first block: journal sb)
 *   [block_bitmap_start, +block_bitmap_blocks)
 *   [inode_bitmap_start, +inode_bitmap_blocks)
 *   [inode_table_start, +inode_table_blocks)
 *   [data_start, block_count - 1)           data, directory, extent, xattr blocks
 *                                           (and, with GROUP_BITMAPS, the bitmap
 *                                           blocks of the groups past the area)
 *   block_count - 1                         backup superblock
 *
 * Design: docs/FORMAT.md, the same format byte by byte; docs/design/checker.md
 * (what each decoder refuses of an image from outside).
 */
#ifndef ORDFS_FORMAT_H
#define ORDFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "endian_le.h"
#include "base/time.h"

/* ---- global constants ------------------------------------------------- */

#define ORDFS_SB_MAGIC 0x5344524fu /* "ORDS" read as little-endian bytes */
#define ORDFS_VERSION 1u
#define ORDFS_SB_SIZE 1024u      /* the superblock area: two sector copies */
#define ORDFS_SB_COPY_SIZE 512u  /* one copy: one 512-byte sector */
#define ORDFS_MIN_BLOCK_LOG 10u /* 1 KiB */
#define ORDFS_MAX_BLOCK_LOG 16u /* 64 KiB */
#define ORDFS_INODE_SIZE 256u
#define ORDFS_NAME_MAX 255u
#define ORDFS_LABEL_LEN 32u
#define ORDFS_UUID_LEN 16u
#define ORDFS_MOUNT_OPTS_LEN 64u

#define ORDFS_ROOT_INO 2u     /* inode 0 is "none", 1 is reserved */
#define ORDFS_FIRST_INO 3u    /* first inode the allocator hands out */
#define ORDFS_MIN_JOURNAL_BLOCKS 64u

/* Feature flags, with ext4's meaning: an unknown incompat bit refuses the
 * mount, an unknown ro_compat bit allows only a read-only mount, an unknown
 * compat bit is ignored. */
#define ORDFS_FEATURE_COMPAT_SUPPORTED 0u
#define ORDFS_FEATURE_INCOMPAT_RECOVER 0x1u  /* journal needs replay */
/* Block-bitmap groups past the block bitmap area keep their bitmap block
 * in their own first block (see "block-bitmap groups" below): an ordfs
 * that does not know it would read those groups' bits from the inode
 * bitmap's blocks, so it may not even read the image. */
#define ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS 0x2u
#define ORDFS_FEATURE_INCOMPAT_SUPPORTED \
	(ORDFS_FEATURE_INCOMPAT_RECOVER | ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS)
/* Some inode has file flags (chattr) in its attr_flags word (offset 108):
 * an ordfs that does not know them would ignore them (write to an
 * immutable file) and drop them from every inode it rewrites, so it may
 * only mount read-only.  Set in the handle that first stores a flag, never
 * cleared. */
#define ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS 0x1u
#define ORDFS_FEATURE_RO_COMPAT_SUPPORTED (ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS)

/* Superblock state bits (s_state). */
#define ORDFS_STATE_CLEAN 0x1u  /* unmounted cleanly */
#define ORDFS_STATE_ERROR 0x2u  /* an error was detected; fsck needed */

/* errors= behaviour recorded by mkfs (s_errors). */
#define ORDFS_ERRORS_CONTINUE 1u
#define ORDFS_ERRORS_RO 2u
#define ORDFS_ERRORS_ABORT 3u

/* ---- checksums -------------------------------------------------------- */

uint32_t ordfs_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven path, whatever the CPU has (tests compare the two). */
uint32_t ordfs_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* ---- superblock (block 0, bytes 0..1023; backup in the last block) ----- */
/*
 * The 1024 bytes hold two identical 512-byte copies, each in its own
 * sector with its own checksum: copy 0 at 0, copy 1 at 512.  A power cut
 * that tears the write of block 0 leaves each sector old or new (or one
 * sector garbage), so at least one copy is whole; decode takes copy 0 if
 * it is valid, else copy 1.  Offsets below are within a copy.
 *
 *   off size field
 *     0  4  magic                ORDFS_SB_MAGIC
 *     4  4  version              ORDFS_VERSION
 *     8  4  feature_compat
 *    12  4  feature_incompat
 *    16  4  feature_ro_compat
 *    20  4  log_block_size       10..16
 *    24  8  block_count
 *    32  4  inode_count
 *    36  4  inode_size           256
 *    40  8  journal_start        block
 *    48  4  journal_blocks
 *    52  4  block_bitmap_blocks
 *    56  8  block_bitmap_start
 *    64  8  inode_bitmap_start
 *    72  4  inode_bitmap_blocks
 *    76  4  inode_table_blocks
 *    80  8  inode_table_start
 *    88  8  data_start
 *    96  8  free_blocks          advisory; bitmaps are authoritative
 *   104  4  free_inodes          advisory
 *   108  4  state                ORDFS_STATE_*
 *   112  4  errors               ORDFS_ERRORS_*
 *   116  4  orphan_head          first inode on the orphan list, 0 = none
 *   120 16  uuid
 *   136 32  label                NUL-padded
 *   168 64  mount_opts           default mount options, NUL-padded
 *   232  8  mkfs_time            seconds since the epoch
 *   240  8  mount_time
 *   248  8  write_time
 *   256  8  check_time           last fsck
 *   264  4  mount_count
 *   268  4  hash_seed            seed of the directory name hash
 *   272  4  csum_seed            crc32c(~0, uuid); seeds every metadata csum
 *   276  4  last_error_code      errno of the last recorded error, 0 = none
 *   280  8  last_error_time
 *   288 ..507 reserved, zero
 *   508  4  checksum             crc32c(~0, bytes 0..507 of this copy)
 */
struct ordfs_super {
	uint32_t magic;
	uint32_t version;
	uint32_t feature_compat;
	uint32_t feature_incompat;
	uint32_t feature_ro_compat;
	uint32_t log_block_size;
	uint64_t block_count;
	uint32_t inode_count;
	uint32_t inode_size;
	uint64_t journal_start;
	uint32_t journal_blocks;
	uint32_t block_bitmap_blocks;
	uint64_t block_bitmap_start;
	uint64_t inode_bitmap_start;
	uint32_t inode_bitmap_blocks;
	uint32_t inode_table_blocks;
	uint64_t inode_table_start;
	uint64_t data_start;
	uint64_t free_blocks;
	uint32_t free_inodes;
	uint32_t state;
	uint32_t errors;
	uint32_t orphan_head;
	uint8_t uuid[ORDFS_UUID_LEN];
	char label[ORDFS_LABEL_LEN + 1];          /* NUL-terminated in memory */
	char mount_opts[ORDFS_MOUNT_OPTS_LEN + 1]; /* NUL-terminated in memory */
	uint64_t mkfs_time;
	uint64_t mount_time;
	uint64_t write_time;
	uint64_t check_time;
	uint32_t mount_count;
	uint32_t hash_seed;
	uint32_t csum_seed;
	uint32_t last_error_code;
	uint64_t last_error_time;
};

/* Writes both copies. */
void ordfs_super_encode(const struct ordfs_super *sb, uint8_t out[ORDFS_SB_SIZE]);
/* Sets the checksum of each copy over that copy's own bytes. */
void ordfs_super_csum_set(uint8_t raw[ORDFS_SB_SIZE]);
/* Decodes and fully validates (magic, checksum, geometry, features) copy
 * 0, or copy 1 if copy 0 fails.  On failure of both returns copy 0's
 * negative errno and, if why != NULL, a static one-line reason ("bad
 * superblock checksum", ...). */
int ordfs_super_decode(const uint8_t in[ORDFS_SB_SIZE], struct ordfs_super *sb,
		       const char **why);
/* True when the two copies are byte for byte the same (after a torn write
 * they may not be; the next superblock write makes them so again). */
bool ordfs_super_copies_agree(const uint8_t in[ORDFS_SB_SIZE]);

/* ---- owner record (the exclusive-use lock of shared storage) ----------
 *
 * The last 512 bytes of the device (not of the filesystem), where they lie
 * past the backup superblock's 1024 bytes (always with blocks of 2 KiB and
 * more).  Written directly, never through the journal, by whoever holds
 * the image read-write (super/owner.c).  A sector without the magic and a
 * valid checksum means "nobody holds it".
 *
 *   off size field
 *     0  4  magic            ORDFS_OWNER_MAGIC
 *     4  4  state            0 free, 1 held
 *     8  8  seq              changes at every heartbeat while held
 *    16  8  nonce            random, per claim
 *    24  4  pid              the holder's process id
 *    28  4  interval_ms      its heartbeat interval
 *    32  8  time             seconds since the epoch, last heartbeat
 *    40 16  program          NUL-padded ("ordfs", "fsck.ordfs", ...)
 *    56 64  host             NUL-padded host name
 *   120 388 reserved, zero
 *   508  4  checksum         crc32c(~0, bytes 0..507)
 */
#define ORDFS_OWNER_SIZE 512u
#define ORDFS_OWNER_MAGIC 0x524e574fu /* "OWNR" */
#define ORDFS_OWNER_PROGRAM_LEN 16u
#define ORDFS_OWNER_HOST_LEN 64u
enum ordfs_owner_state { ORDFS_OWNER_FREE = 0, ORDFS_OWNER_HELD = 1 };

struct ordfs_owner {
	uint32_t state;
	uint64_t seq;
	uint64_t nonce;
	uint32_t pid;
	uint32_t interval_ms;
	uint64_t time;
	char program[ORDFS_OWNER_PROGRAM_LEN + 1]; /* NUL-terminated */
	char host[ORDFS_OWNER_HOST_LEN + 1];
};

void ordfs_owner_encode(const struct ordfs_owner *o, uint8_t out[ORDFS_OWNER_SIZE]);
/* 0, or -EUCLEAN for a sector that is not a valid record (never written,
 * torn, or anything else: the caller decides what that means). */
int ordfs_owner_decode(const uint8_t in[ORDFS_OWNER_SIZE], struct ordfs_owner *o);
/* Geometry checks only (used by decode and by mkfs before writing). */
int ordfs_super_check_geometry(const struct ordfs_super *sb, const char **why);

static inline uint32_t ordfs_block_size(const struct ordfs_super *sb)
{
	return 1u << sb->log_block_size;
}

/* ---- common header of every metadata block outside the journal ------- */
/*
 *   off size field
 *     0  4  magic     ORDFS_BLOCK_MAGIC
 *     4  2  type      ORDFS_BT_*
 *     6  2  reserved  zero
 *     8  4  checksum  crc32c(csum_seed, whole block with this field zeroed)
 *    12  4  owner     inode number owning the block (0 for bitmaps)
 *    16  8  blockno   the block's own number (catches misdirected writes)
 *    24     payload
 */
#define ORDFS_BLOCK_MAGIC 0x4b4c424fu /* "OBLK" */
#define ORDFS_BLOCK_HDR_SIZE 24u

enum ordfs_block_type {
	ORDFS_BT_BLOCK_BITMAP = 1,
	ORDFS_BT_INODE_BITMAP = 2,
	ORDFS_BT_EXTENT = 3,
	ORDFS_BT_DIR_LEAF = 4,
	ORDFS_BT_DIR_INDEX = 5,
	ORDFS_BT_XATTR = 6,
	ORDFS_BT_SYMLINK = 7, /* reserved: long symlink blocks carry no header */
};

void ordfs_block_hdr_init(uint8_t *blk, enum ordfs_block_type type, uint32_t owner,
			  uint64_t blockno);
/* Recomputes the checksum; call after the last change before a block is
 * handed to the journal or written. */
void ordfs_block_csum_set(uint8_t *blk, uint32_t block_size, uint32_t csum_seed);
/* 0, or -EUCLEAN if magic, type, block number or checksum is wrong. */
int ordfs_block_verify(const uint8_t *blk, uint32_t block_size, uint32_t csum_seed,
		       enum ordfs_block_type type, uint64_t blockno);

static inline uint32_t ordfs_block_owner(const uint8_t *blk)
{
	return le_get32(blk + 12);
}

/* Bits one bitmap block holds. */
static inline uint32_t ordfs_bits_per_bitmap_block(uint32_t block_size)
{
	return (block_size - ORDFS_BLOCK_HDR_SIZE) * 8u;
}

/* Bit i of a bitmap block's payload (after the common header). */
static inline bool ordfs_bitmap_bit(const uint8_t *blk, uint32_t i)
{
	return (blk[ORDFS_BLOCK_HDR_SIZE + i / 8] >> (i % 8)) & 1;
}

static inline void ordfs_bitmap_put(uint8_t *blk, uint32_t i, bool on)
{
	uint8_t *p = &blk[ORDFS_BLOCK_HDR_SIZE + i / 8];
	if (on)
		*p |= (uint8_t)(1u << (i % 8));
	else
		*p &= (uint8_t)~(1u << (i % 8));
}

/* ---- block-bitmap groups ------------------------------------------------
 *
 * The bits of one bitmap block are a *group*: group g covers blocks
 * [g * per, (g + 1) * per), per = ordfs_bits_per_bitmap_block(B); there
 * are ordfs_block_groups(sb) = ceil(block_count / per) of them (no
 * superblock field).  Group g < block_bitmap_blocks has its bitmap block
 * in the block bitmap area, at block_bitmap_start + g.  With
 * ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS, the groups past the area
 * (g >= block_bitmap_blocks, wholly in space a grow added) keep theirs in
 * their own first block, g * per, a *group bitmap block*, whose own bit
 * (bit 0 of its payload) is set.  Geometry (ordfs_super_check_geometry):
 * without the flag block_bitmap_blocks == ceil(block_count / per); with
 * it, block_bitmap_blocks <= that, the area covers every block before
 * data_start, and the last block (backup superblock) is no group bitmap
 * block.
 *
 * Every reader of the block bitmap finds a group's block through
 * ordfs_block_bitmap_block.
 */
uint64_t ordfs_block_groups(const struct ordfs_super *sb);
/* Where group `group`'s bitmap block is (group < ordfs_block_groups). */
uint64_t ordfs_block_bitmap_block(const struct ordfs_super *sb, uint64_t group);
/* Is blockno a group bitmap block (one past the area)? */
bool ordfs_is_group_bitmap_block(const struct ordfs_super *sb, uint64_t blockno);
/* Does [start, start + len) hold a group bitmap block? */
bool ordfs_range_has_group_bitmap(const struct ordfs_super *sb, uint64_t start, uint64_t len);
/* Does [start, start + len) hold the first block of a group past the
 * area, where a group's bitmap block is once the filesystem has that
 * group?  With [start, start + len) inside the filesystem it answers as
 * ordfs_range_has_group_bitmap (without the feature no group past the
 * area lies inside it), but it reads only block_bitmap_blocks and the
 * block size, which a mounted filesystem never changes: an online grow
 * changes block_count and the feature bits, so code that holds no lock
 * on the superblock asks this. */
bool ordfs_range_has_group_start(const struct ordfs_super *sb, uint64_t start, uint64_t len);
/* May a file or tree map [start, start + len) in a filesystem of
 * block_count blocks (the size now: a grow may be under way)?  Past
 * data_start, before the backup superblock, and on no group's first block
 * (a group bitmap block is metadata, as the area before data_start is).
 * The one rule of the extent verifier and the online scrub. */
static inline bool ordfs_in_data_area(const struct ordfs_super *sb, uint64_t block_count,
				      uint64_t start, uint64_t len)
{
	uint64_t end = block_count - 1; /* the backup superblock */
	return start >= sb->data_start && start < end && len <= end - start &&
	       !ordfs_range_has_group_start(sb, start, len);
}
/* A block-bitmap block as read from the device: 0, or -EUCLEAN if its
 * header or checksum is wrong (ordfs_block_verify) or, for a group
 * bitmap block, its own bit is clear. */
int ordfs_block_bitmap_verify(const struct ordfs_super *sb, uint64_t group, const uint8_t *blk);

/* ---- extents (in the inode root and in ORDFS_BT_EXTENT blocks) -------- */
/*
 * Node header (8 bytes), then `entries` records of 24 bytes:
 *   node header:  0 u16 magic ORDFS_EXTENT_MAGIC, 2 u16 entries,
 *                 4 u16 max_entries, 6 u16 depth (0 = leaf)
 *   leaf record:  0 u64 logical block, 8 u64 physical block,
 *                16 u32 length in blocks, 20 u32 flags (ORDFS_EXT_*)
 *   index record: 0 u64 first logical block covered, 8 u64 child block,
 *                16 u64 reserved (zero)
 * In an extent block the node starts after the common block header.
 */
#define ORDFS_EXTENT_MAGIC 0xf30au
#define ORDFS_EXTENT_NODE_HDR 8u
#define ORDFS_EXTENT_REC 24u
#define ORDFS_EXT_UNWRITTEN 0x1u /* allocated, reads as zeros (fallocate) */
#define ORDFS_EXT_MAX_LEN 0x8000000u /* 2^27 blocks per record */

struct ordfs_extent {
	uint64_t logical;
	uint64_t physical;
	uint32_t len;
	uint32_t flags;
};

/* ---- inode (256 bytes in the inode table) ----------------------------- */
/*
 *   off size field
 *     0  2  mode          S_IFMT | permission bits; 0 = free slot
 *     2  2  reserved
 *     4  4  uid
 *     8  4  gid
 *    12  4  links
 *    16  8  size          bytes (i_disksize: what the extents cover)
 *    24  8  blocks        filesystem blocks charged (data + extent + xattr)
 *    32  8  atime_sec     signed
 *    40  8  mtime_sec
 *    48  8  ctime_sec
 *    56  8  crtime_sec
 *    64  4  atime_nsec
 *    68  4  mtime_nsec
 *    72  4  ctime_nsec
 *    76  4  crtime_nsec
 *    80  4  generation
 *    84  4  flags         ORDFS_INODE_*
 *    88  8  xattr_block   0 = none
 *    96  4  next_orphan   next inode on the orphan list
 *   100  4  rdev          device number for block/char nodes
 *   104  4  parent        directories: inode of ".."
 *   108  4  attr_flags    file flags (chattr): ORDFS_FL_*, the Linux
 *                         FS_*_FL values; other bits must be zero
 *   112 128 data          extent root node (8 + 5 * 24 bytes), or the
 *                         target of a fast symlink (< 128 bytes)
 *   240 12  reserved
 *   252  4  checksum      crc32c(csum_seed, ino(le32) + bytes 0..251)
 */
#define ORDFS_INODE_DATA_OFF 112u
#define ORDFS_INODE_DATA_LEN 128u
#define ORDFS_INODE_ROOT_EXTENTS \
	((ORDFS_INODE_DATA_LEN - ORDFS_EXTENT_NODE_HDR) / ORDFS_EXTENT_REC)
#define ORDFS_FAST_SYMLINK_MAX (ORDFS_INODE_DATA_LEN - 1u)
#define ORDFS_SYMLINK_MAX 4095u /* PATH_MAX - 1 */
#define ORDFS_LINK_MAX 65000u   /* as ext4 */

#define ORDFS_INODE_FAST_SYMLINK 0x1u /* target stored in data[] */
#define ORDFS_INODE_ORPHAN 0x2u       /* on the orphan list */
#define ORDFS_INODE_FLAGS_KNOWN (ORDFS_INODE_FAST_SYMLINK | ORDFS_INODE_ORPHAN)

/* File flags (attr_flags, offset 108): what chattr sets and lsattr shows,
 * stored as the Linux FS_*_FL values (linux/fs.h; src/inode/iflags.c
 * checks that they agree), so the on-disk word is what FS_IOC_GETFLAGS
 * answers.  Which ones an inode of a given type may carry, and what each
 * refuses, is src/inode/iflags.h's.  Any of them sets the superblock's
 * ORDFS_FEATURE_RO_COMPAT_FILE_FLAGS. */
#define ORDFS_FL_SYNC 0x00000008u         /* S: changes durable before they return */
#define ORDFS_FL_IMMUTABLE 0x00000010u    /* i: no change at all */
#define ORDFS_FL_APPEND 0x00000020u       /* a: data only appended */
#define ORDFS_FL_NODUMP 0x00000040u       /* d: kept and shown only */
#define ORDFS_FL_NOATIME 0x00000080u      /* A: reads leave atime alone */
#define ORDFS_FL_JOURNAL_DATA 0x00004000u /* j: the file's data goes through the log */
#define ORDFS_FL_DIRSYNC 0x00010000u      /* D: name changes durable before they return */
#define ORDFS_FL_KNOWN                                                                 \
	(ORDFS_FL_SYNC | ORDFS_FL_IMMUTABLE | ORDFS_FL_APPEND | ORDFS_FL_NODUMP |       \
	 ORDFS_FL_NOATIME | ORDFS_FL_JOURNAL_DATA | ORDFS_FL_DIRSYNC)

struct ordfs_inode {
	uint16_t mode;
	uint32_t uid;
	uint32_t gid;
	uint32_t links;
	uint64_t size;
	uint64_t blocks;
	struct ordfs_timespec atime, mtime, ctime, crtime;
	uint32_t generation;
	uint32_t flags;
	uint64_t xattr_block;
	uint32_t next_orphan;
	uint32_t rdev;
	uint32_t parent;
	uint32_t attr_flags; /* ORDFS_FL_* */
	uint8_t data[ORDFS_INODE_DATA_LEN];
};

void ordfs_inode_encode(const struct ordfs_inode *ino, uint32_t inum, uint32_t csum_seed,
			uint8_t out[ORDFS_INODE_SIZE]);
/* An empty extent root (no records, depth 0) in an inode's data[]. */
void ordfs_extent_root_init(uint8_t data[ORDFS_INODE_DATA_LEN]);
/* Sets the checksum of a raw inode slot (bytes 252..255). */
void ordfs_inode_csum_set(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum, uint32_t csum_seed);
/* Rewrites only next_orphan (offset 96) of an encoded slot, and its checksum. */
void ordfs_inode_patch_next_orphan(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum,
				   uint32_t csum_seed, uint32_t next);
/* 0, or -EUCLEAN (bad checksum, nsec >= 10^9, unknown flags or file
 * flags, ...). */
int ordfs_inode_decode(const uint8_t in[ORDFS_INODE_SIZE], uint32_t inum,
		       uint32_t csum_seed, struct ordfs_inode *ino);
/* For the checker: as ordfs_inode_decode, but file-flag bits no ordfs
 * defines do not fail the slot: they are left out of ino->attr_flags and
 * returned in *unknown (0: none), so a slot whose only fault they are can
 * be repaired without losing the file. */
int ordfs_inode_decode_check(const uint8_t in[ORDFS_INODE_SIZE], uint32_t inum,
			     uint32_t csum_seed, struct ordfs_inode *ino, uint32_t *unknown);

/* A slot whose checksum verifies but whose reserved bytes (2..3,
 * 240..251) are not all zero, which the decoders refuse: the reserved
 * bytes zeroed and the checksum set again (fsck's repair keeps the rest
 * of the inode).  1 if it changed the slot, 0 if they were zero,
 * -EUCLEAN if the checksum fails. */
int ordfs_inode_clear_reserved(uint8_t raw[ORDFS_INODE_SIZE], uint32_t inum, uint32_t csum_seed);

/* The rule a symbolic link keeps (FORMAT.md, "Symbolic links"): size 1 ..
 * ORDFS_SYMLINK_MAX, and at most ORDFS_FAST_SYMLINK_MAX for a fast one.
 * 0, or -EUCLEAN with a one-line reason in *why.  The one validator of a
 * link's fields: the daemon's readlink refuses what it refuses, and
 * fsck.ordfs reports and repairs the same (ino must be a symlink). */
int ordfs_symlink_check(const struct ordfs_inode *ino, const char **why);

/* Where inode `inum` lives: block number and byte offset in that block. */
static inline void ordfs_inode_location(const struct ordfs_super *sb, uint32_t inum,
					uint64_t *block, uint32_t *offset)
{
	uint32_t per_block = ordfs_block_size(sb) / ORDFS_INODE_SIZE;
	uint32_t idx = inum - 1; /* inode numbers start at 1 */

	*block = sb->inode_table_start + idx / per_block;
	*offset = (idx % per_block) * ORDFS_INODE_SIZE;
}

/* ---- directories (blocks of the directory file, mapped by its extents) --- */
/*
 * Logical block 0 of a non-empty directory is the root of a B+tree keyed by
 * the 64-bit name hash; "." and ".." are not stored (".." is inode.parent).
 *
 * Index block (type ORDFS_BT_DIR_INDEX), after the common header:
 *   24 u16 count, 26 u16 level (1 = children are leaves), 28 u32 reserved,
 *   32 records of 16 bytes: u64 lowest hash in child, u64 child logical block
 * Leaf block (type ORDFS_BT_DIR_LEAF), after the common header:
 *   24 u16 count, 26 u16 used bytes of the entry area, 28 u32 next leaf
 *   (logical block, 0 = last), 32 entries, sorted by (hash, name bytes,
 *   shorter name first):
 *     0 u64 hash, 8 u32 inode, 12 u8 file type (DT_*), 13 u8 name length,
 *     14 name bytes; each entry padded to a multiple of 8 bytes.
 * Buckets: all entries whose hashes agree in the top 56 bits (hash >> 8)
 * live in one leaf (so equal hashes do too).  Index keys are bucket starts
 * (low 8 bits zero) and strictly increasing; record 0's key equals the key
 * the parent holds for the node (0 in the root); children are logical
 * blocks >= 1 (block 0 is always the root).  readdir cookies are derived
 * from buckets (src/dir/dir_readdir.c).
 */
#define ORDFS_DIR_NODE_HDR 32u
#define ORDFS_DIR_INDEX_REC 16u
#define ORDFS_DIR_ENTRY_FIXED 14u

static inline uint32_t ordfs_dir_entry_size(uint32_t namelen)
{
	return (ORDFS_DIR_ENTRY_FIXED + namelen + 7u) & ~7u;
}

/* 64-bit keyed hash of a directory entry name. */
uint64_t ordfs_name_hash(uint32_t seed, const char *name, size_t len);

/* ---- extended attributes (one ORDFS_BT_XATTR block per inode) --------- */
/*
 * inode.xattr_block points at the block (0 = no attributes).  After the
 * common header:
 *   24 u16 count, 26 u16 used bytes of the entry area, 28 u32 reserved,
 *   32 entries, sorted by (namespace, name):
 *     0 u8 namespace (ORDFS_XATTR_NS_*), 1 u8 name length (1..255),
 *     2 u16 value length, 4 name bytes (without the namespace prefix),
 *     then the value; each entry padded to a multiple of 4 bytes.
 * All of an inode's attributes fit in one block (E2BIG / ENOSPC beyond).
 */
#define ORDFS_XATTR_HDR 32u
#define ORDFS_XATTR_ENTRY_FIXED 4u
enum ordfs_xattr_namespace {
	ORDFS_XATTR_NS_USER = 1,
	ORDFS_XATTR_NS_TRUSTED = 2,
	ORDFS_XATTR_NS_SECURITY = 3,
	ORDFS_XATTR_NS_POSIX_ACL_ACCESS = 4,  /* "system.posix_acl_access", no name */
	ORDFS_XATTR_NS_POSIX_ACL_DEFAULT = 5, /* "system.posix_acl_default", no name */
	/* (the values of 4 and 5 are ordfs's compact ACL form: acl.h) */
};

/* ---- symbolic links ----------------------------------------------------- */
/*
 * A target shorter than 128 bytes is stored in inode.data (flag
 * ORDFS_INODE_FAST_SYMLINK, NUL-padded).  A longer one (up to 4095 bytes)
 * is stored as raw bytes in the link's logical blocks, mapped by its extent
 * tree and written through the journal like other metadata (no block
 * header: ORDFS_BT_SYMLINK is reserved); size is the target length.
 */

/* ---- journal (blocks [journal_start, +journal_blocks)) ----------------- */
/*
 * Every journal block except data copies starts with a 16-byte header:
 *   0 u32 magic ORDFS_JOURNAL_MAGIC, 4 u32 type (ORDFS_JB_*), 8 u64 sequence
 * and ends with a u32 crc32c(csum_seed, block with the tail zeroed).
 *
 * Journal superblock (log block 0) is the exception to the tail checksum:
 * like the filesystem superblock it is two identical 512-byte copies (at 0
 * and 512, rest of the block zero), each ending in u32 crc32c(csum_seed,
 * bytes 0..507 of the copy) at 508, so a torn write leaves one whole.
 *   0 header (type ORDFS_JB_SUPER, sequence 0), 16 u32 block_size, 20 u32 total log blocks (== journal_blocks),
 *   24 u32 first (first usable log block, 1), 28 u32 start (log block of the
 *   oldest live transaction, 0 = log empty), 32 u64 sequence (of the
 *   transaction at `start`, or the next one when empty), 40 i32 errno
 *   (journal aborted with this error, 0 = fine), 44 u8[16] uuid
 *
 * Descriptor block: 16 u32 tag count, 20 u32 reserved, then tags of 16 bytes:
 *   0 u64 target block, 8 u32 flags (ORDFS_JTAG_*), 12 u32 crc32c(csum_seed,
 *   sequence(le64) + the block as it will be written home)
 *   Each tag's block copy follows the descriptor in the log, in tag order.
 * Revoke block: 16 u32 record count, 20 u32 reserved, then u64 block numbers.
 * Commit block: 16 u32 blocks in this transaction (descriptors, copies and
 *   revokes, not counting the commit block), 20 u32 crc32c over those blocks
 *   in log order, 24 u64 commit time sec, 32 u32 nsec
 */
#define ORDFS_JOURNAL_MAGIC 0x4c4e524au /* "JRNL" */
/* Journal sequence numbers.  The journal superblock's sequence is in
 * [1, ORDFS_JSEQ_LIMIT): the reader refuses anything else.  ordfs never
 * writes one it would refuse: a transaction is committed only while its
 * sequence + 1 is below the limit, and a log found empty with a sequence
 * at or past ORDFS_JSEQ_RENEW starts a new run at 1 when it is next opened
 * for writing (every log block zeroed first, so no old block can match a
 * new sequence).  2^61 commits lie between the two: no mount gets from
 * one to the other. */
#define ORDFS_JSEQ_LIMIT (1ull << 62)
#define ORDFS_JSEQ_RENEW (1ull << 61)
#define ORDFS_JB_HDR 16u
#define ORDFS_JB_TAIL 4u
#define ORDFS_JTAG_SIZE 16u
#define ORDFS_JTAG_ESCAPED 0x1u /* copy began with the journal magic; zeroed */

enum ordfs_journal_block_type {
	ORDFS_JB_SUPER = 1,
	ORDFS_JB_DESCRIPTOR = 2,
	ORDFS_JB_COMMIT = 3,
	ORDFS_JB_REVOKE = 4,
};

struct ordfs_journal_super {
	uint32_t block_size;
	uint32_t total_blocks;
	uint32_t first;
	uint32_t start;
	uint64_t sequence;
	int32_t err;
	uint8_t uuid[ORDFS_UUID_LEN];
};

static inline uint32_t ordfs_jtags_per_descriptor(uint32_t block_size)
{
	return (block_size - ORDFS_JB_HDR - 8u - ORDFS_JB_TAIL) / ORDFS_JTAG_SIZE;
}

static inline uint32_t ordfs_jrevokes_per_block(uint32_t block_size)
{
	return (block_size - ORDFS_JB_HDR - 8u - ORDFS_JB_TAIL) / 8u;
}

void ordfs_jblock_hdr_init(uint8_t *blk, enum ordfs_journal_block_type type,
			   uint64_t sequence);
void ordfs_jblock_csum_set(uint8_t *blk, uint32_t block_size, uint32_t csum_seed);
/* True if the block has the journal magic, the given type and sequence and a
 * valid tail checksum. */
bool ordfs_jblock_valid(const uint8_t *blk, uint32_t block_size, uint32_t csum_seed,
			enum ordfs_journal_block_type type, uint64_t sequence);

/* Writes both copies (blk is js->block_size bytes). */
void ordfs_journal_super_encode(const struct ordfs_journal_super *js, uint32_t csum_seed,
				uint8_t *blk);
/* Sets the checksum of each copy over that copy's own bytes. */
void ordfs_journal_super_csum_set(uint8_t *blk, uint32_t csum_seed);
/* Decodes copy 0, or copy 1 if copy 0 fails; both failing gives copy 0's
 * error. */
int ordfs_journal_super_decode(const uint8_t *blk, uint32_t block_size,
			       uint32_t csum_seed, struct ordfs_journal_super *js,
			       const char **why);

#endif
