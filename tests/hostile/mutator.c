/*
 * mutator.c - the structure-aware mutator of the hostile-image harness:
 * one damage per case to one structure of docs/FORMAT.md, chosen by seed,
 * with every checksum the damage touched set again (the superblock's two
 * copies, inode slots, block headers, journal blocks, journal tags and
 * the commit block's chained CRC), so the structure checks are reached.
 *
 * Owns: where each structure is found in an image (read from the image
 * itself: the superblock's areas, block headers, inode slots, the
 * journal's transactions from its superblock's start) and the values
 * tried per field.  Rules: the same image and seed always give the same
 * damage and the same description; a mutation whose target the image does
 * not have returns -ENOENT and changes nothing; every description says
 * the structure, the place (inode, block, log block) and the field with
 * its old and new values, so a failure can be read without replaying it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "hostile.h"
#include "format/endian_le.h"

static const char *const struct_names[HS_COUNT] = {
	"super", "block-bitmap", "inode-bitmap", "inode", "extent", "dir", "xattr",
	"journal-super", "journal-block", "owner", "loop",
};

const char *h_struct_name(enum h_struct s)
{
	return (unsigned)s < HS_COUNT ? struct_names[s] : "?";
}

int h_struct_parse(const char *name)
{
	for (int i = 0; i < HS_COUNT; i++)
		if (strcmp(name, struct_names[i]) == 0)
			return i;
	return -1;
}

struct m {
	uint8_t *img;
	size_t size;
	const struct ordfs_super *sb;
	uint32_t bs, seed;
	uint64_t rng;
	char *desc;
	size_t dlen;
};

static uint64_t pick(struct m *m, uint64_t n)
{
	return n ? h_rand(&m->rng) % n : 0;
}

static void say(struct m *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct m *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->desc, m->dlen, fmt, ap);
	va_end(ap);
}

static uint8_t *block(struct m *m, uint64_t n)
{
	return m->img + n * m->bs;
}

/* ---- fields: read, write, interesting values --------------------------- */

static uint64_t get_field(const uint8_t *p, unsigned size)
{
	switch (size) {
	case 1: return p[0];
	case 2: return le_get16(p);
	case 4: return le_get32(p);
	default: return le_get64(p);
	}
}

static void put_field(uint8_t *p, unsigned size, uint64_t v)
{
	switch (size) {
	case 1: p[0] = (uint8_t)v; break;
	case 2: le_put16(p, (uint16_t)v); break;
	case 4: le_put32(p, (uint32_t)v); break;
	default: le_put64(p, v); break;
	}
}

static uint64_t field_max(unsigned size)
{
	return size >= 8 ? UINT64_MAX : (1ull << (size * 8)) - 1;
}

/* A value for a field of size bytes that held old: the edges, neighbours,
 * one bit flipped, or anything. */
static uint64_t interesting(struct m *m, unsigned size, uint64_t old)
{
	uint64_t max = field_max(size);
	switch (pick(m, 10)) {
	case 0: return 0;
	case 1: return max;
	case 2: return (old + 1) & max;
	case 3: return (old - 1) & max;
	case 4: return old ^ (1ull << pick(m, size * 8));
	case 5: return max >> 1;
	case 6: return (max >> 1) + 1;
	case 7: return (old * 2 + 1) & max;
	case 8: return 1;
	default: return h_rand(&m->rng) & max;
	}
}

/* ---- the image's map ------------------------------------------------------ */

static uint8_t *inode_slot(struct m *m, uint32_t inum)
{
	uint64_t blk;
	uint32_t off;
	ordfs_inode_location(m->sb, inum, &blk, &off);
	return block(m, blk) + off;
}

static uint16_t inode_mode(struct m *m, uint32_t inum)
{
	return le_get16(inode_slot(m, inum));
}

static void fix_inode(struct m *m, uint32_t inum)
{
	ordfs_inode_csum_set(inode_slot(m, inum), inum, m->seed);
}

static void fix_block(struct m *m, uint64_t n)
{
	ordfs_block_csum_set(block(m, n), m->bs, m->seed);
}

/* In-use inodes (mode != 0) whose type matches fmt (0: any). */
static uint32_t list_inodes(struct m *m, unsigned fmt, uint32_t *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t i = 2; i <= m->sb->inode_count && n < max; i++) {
		uint16_t mode = inode_mode(m, i);
		if (mode && (!fmt || (mode & S_IFMT) == fmt))
			out[n++] = i;
	}
	return n;
}

static uint32_t pick_inode(struct m *m, unsigned fmt)
{
	uint32_t list[512];
	uint32_t n = list_inodes(m, fmt, list, 512);
	return n ? list[pick(m, n)] : 0;
}

static uint32_t free_inode(struct m *m)
{
	for (uint32_t i = m->sb->inode_count; i > ORDFS_FIRST_INO; i--)
		if (!inode_mode(m, i))
			return i;
	return 0;
}

static bool is_block(struct m *m, uint64_t n, enum ordfs_block_type type)
{
	if (n < m->sb->data_start || n >= m->sb->block_count - 1)
		return false;
	const uint8_t *b = block(m, n);
	return le_get32(b) == ORDFS_BLOCK_MAGIC && le_get16(b + 4) == type &&
	       le_get64(b + 16) == n;
}

static uint32_t list_blocks(struct m *m, enum ordfs_block_type type, uint64_t *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint64_t b = m->sb->data_start; b < m->sb->block_count - 1 && n < max; b++)
		if (is_block(m, b, type))
			out[n++] = b;
	return n;
}

static bool block_bit(struct m *m, uint64_t n)
{
	uint32_t per = ordfs_bits_per_bitmap_block(m->bs);
	return ordfs_bitmap_bit(block(m, m->sb->block_bitmap_start + n / per), (uint32_t)(n % per));
}

/* A block number worth pointing a field at. */
static uint64_t interesting_block(struct m *m, uint64_t old, const char **what)
{
	const struct ordfs_super *sb = m->sb;
	switch (pick(m, 12)) {
	case 0: *what = "superblock"; return 0;
	case 1: *what = "journal"; return sb->journal_start + pick(m, sb->journal_blocks);
	case 2: *what = "block bitmap"; return sb->block_bitmap_start;
	case 3: *what = "inode bitmap"; return sb->inode_bitmap_start;
	case 4: *what = "inode table"; return sb->inode_table_start + pick(m, sb->inode_table_blocks);
	case 5: *what = "backup superblock"; return sb->block_count - 1;
	case 6: *what = "past the end"; return sb->block_count + pick(m, 4);
	case 7: *what = "huge"; return (1ull << 62) + pick(m, 4);
	case 8: {
		for (int t = 0; t < 64; t++) {
			uint64_t b = sb->data_start + pick(m, sb->block_count - 1 - sb->data_start);
			if (!block_bit(m, b)) {
				*what = "a free block";
				return b;
			}
		}
		*what = "a data block";
		return sb->data_start + pick(m, sb->block_count - 1 - sb->data_start);
	}
	case 9: {
		for (int t = 0; t < 64; t++) {
			uint64_t b = sb->data_start + pick(m, sb->block_count - 1 - sb->data_start);
			if (block_bit(m, b) && b != old) {
				*what = "a block in use";
				return b;
			}
		}
		*what = "a data block";
		return sb->data_start + pick(m, 64);
	}
	case 10: *what = "the next block"; return old + 1;
	default: *what = "zero-based"; return old ^ (1ull << pick(m, 40));
	}
}

/* An inode number worth pointing a field at; self and parent given. */
static uint32_t interesting_inode(struct m *m, uint32_t self, uint32_t parent, const char **what)
{
	switch (pick(m, 10)) {
	case 0: *what = "itself"; return self;
	case 1: *what = "the root"; return ORDFS_ROOT_INO;
	case 2: *what = "the parent"; return parent;
	case 3: *what = "a directory"; return pick_inode(m, S_IFDIR);
	case 4: *what = "an unused inode"; return free_inode(m);
	case 5: *what = "zero"; return 0;
	case 6: *what = "reserved inode 1"; return 1;
	case 7: *what = "past inode_count"; return m->sb->inode_count + 1 + (uint32_t)pick(m, 3);
	case 8: *what = "a regular file"; return pick_inode(m, S_IFREG);
	default: *what = "lost+found"; return 3;
	}
}

/* ---- superblock ------------------------------------------------------------ */

struct field {
	const char *name;
	uint16_t off;
	uint8_t size;
};

static const struct field super_fields[] = {
	{ "magic", 0, 4 }, { "version", 4, 4 }, { "feature_compat", 8, 4 },
	{ "feature_incompat", 12, 4 }, { "feature_ro_compat", 16, 4 },
	{ "log_block_size", 20, 4 }, { "block_count", 24, 8 }, { "inode_count", 32, 4 },
	{ "inode_size", 36, 4 }, { "journal_start", 40, 8 }, { "journal_blocks", 48, 4 },
	{ "block_bitmap_blocks", 52, 4 }, { "block_bitmap_start", 56, 8 },
	{ "inode_bitmap_start", 64, 8 }, { "inode_bitmap_blocks", 72, 4 },
	{ "inode_table_blocks", 76, 4 }, { "inode_table_start", 80, 8 },
	{ "data_start", 88, 8 }, { "free_blocks", 96, 8 }, { "free_inodes", 104, 4 },
	{ "state", 108, 4 }, { "errors", 112, 4 }, { "orphan_head", 116, 4 },
	{ "mount_time", 240, 8 }, { "mount_count", 264, 4 }, { "hash_seed", 268, 4 },
	{ "last_error_code", 276, 4 }, { "reserved", 288, 4 }, { "reserved+216", 504, 4 },
};

static int mutate_super(struct m *m)
{
	uint8_t *raw = block(m, 0);
	const struct field *f = &super_fields[pick(m, sizeof(super_fields) / sizeof(super_fields[0]))];
	uint64_t old = get_field(raw + f->off, f->size), v;
	switch (pick(m, 4)) {
	case 0: /* the field's own bits: a feature or state bit */
		v = old | (1ull << pick(m, f->size * 8));
		break;
	case 1:
		if (strcmp(f->name, "orphan_head") == 0) {
			v = pick_inode(m, 0);
			break;
		}
		/* fall through */
	default:
		v = interesting(m, f->size, old);
	}
	if (v == old)
		v = old ^ 1;
	put_field(raw + f->off, f->size, v);
	memcpy(raw + ORDFS_SB_COPY_SIZE, raw, ORDFS_SB_COPY_SIZE);
	ordfs_super_csum_set(raw);
	say(m, "superblock %s 0x%llx -> 0x%llx", f->name, (unsigned long long)old,
	    (unsigned long long)v);
	return 0;
}

/* ---- bitmaps ----------------------------------------------------------------- */

static int mutate_bitmap(struct m *m, bool inodes)
{
	const struct ordfs_super *sb = m->sb;
	uint64_t start = inodes ? sb->inode_bitmap_start : sb->block_bitmap_start;
	uint32_t count = inodes ? sb->inode_bitmap_blocks : sb->block_bitmap_blocks;
	uint32_t per = ordfs_bits_per_bitmap_block(m->bs);
	uint64_t total = inodes ? sb->inode_count : sb->block_count;
	uint64_t first = inodes ? 0 : sb->data_start; /* bits worth clearing */
	const char *name = inodes ? "inode bitmap" : "block bitmap";
	unsigned how = (unsigned)pick(m, 8);
	if (how <= 3) {
		/* an in-use bit cleared: the allocator's trust (findings 2, 3);
		 * for inodes, one with a live slot, or reserved inode 1 */
		uint64_t bits[4096];
		uint32_t n = 0;
		for (uint64_t i = first; i < total - (inodes ? 0 : 1) && n < 4096; i++) {
			if (!ordfs_bitmap_bit(block(m, start + i / per), (uint32_t)(i % per)))
				continue;
			if (inodes && i >= 1 && !inode_mode(m, (uint32_t)i + 1))
				continue;
			bits[n++] = i;
		}
		if (!n)
			return -ENOENT;
		uint64_t i = bits[pick(m, n)];
		if (how == 3 && inodes)
			i = pick(m, 3); /* inode 1, 2 or 3 */
		uint64_t blk = start + i / per;
		ordfs_bitmap_put(block(m, blk), (uint32_t)(i % per), false);
		fix_block(m, blk);
		if (inodes)
			say(m, "%s: bit of in-use inode %llu cleared", name, (unsigned long long)i + 1);
		else
			say(m, "%s: bit of in-use block %llu cleared", name, (unsigned long long)i);
		return 0;
	}
	uint64_t blk = start + pick(m, count);
	uint8_t *b = block(m, blk);
	if (how == 4) { /* a free bit set: a leak */
		for (int t = 0; t < 256; t++) {
			uint32_t i = (uint32_t)pick(m, per);
			if (!ordfs_bitmap_bit(b, i)) {
				ordfs_bitmap_put(b, i, true);
				fix_block(m, blk);
				say(m, "%s block %llu: free bit %u set", name,
				    (unsigned long long)blk, i);
				return 0;
			}
		}
		return -ENOENT;
	}
	if (how == 5) { /* the header: owner, reserved, blockno, type */
		static const struct field hf[] = { { "type", 4, 2 }, { "reserved", 6, 2 },
						   { "owner", 12, 4 }, { "blockno", 16, 8 } };
		const struct field *f = &hf[pick(m, 4)];
		uint64_t old = get_field(b + f->off, f->size), v = interesting(m, f->size, old);
		if (v == old)
			v ^= 1;
		put_field(b + f->off, f->size, v);
		fix_block(m, blk);
		say(m, "%s block %llu header %s 0x%llx -> 0x%llx", name, (unsigned long long)blk,
		    f->name, (unsigned long long)old, (unsigned long long)v);
		return 0;
	}
	if (how == 6) { /* a whole byte of bits (8 neighbours) cleared */
		uint32_t byte = (uint32_t)(first / 8 % per / 8 + pick(m, 16));
		if (blk != start)
			byte = (uint32_t)pick(m, per / 8);
		uint8_t old = b[ORDFS_BLOCK_HDR_SIZE + byte];
		b[ORDFS_BLOCK_HDR_SIZE + byte] = 0;
		fix_block(m, blk);
		say(m, "%s block %llu payload byte %u 0x%02x -> 0", name, (unsigned long long)blk,
		    byte, old);
		return 0;
	}
	/* the tail bits (past the count) cleared */
	uint64_t last = start + count - 1;
	b = block(m, last);
	uint32_t i = per - 1 - (uint32_t)pick(m, 8);
	ordfs_bitmap_put(b, i, false);
	fix_block(m, last);
	say(m, "%s block %llu: tail bit %u cleared", name, (unsigned long long)last, i);
	return 0;
}

/* ---- inode slots ---------------------------------------------------------------- */

static const struct field inode_fields[] = {
	{ "mode", 0, 2 }, { "reserved", 2, 2 }, { "uid", 4, 4 }, { "links", 12, 4 },
	{ "size", 16, 8 }, { "blocks", 24, 8 }, { "atime_nsec", 64, 4 },
	{ "generation", 80, 4 }, { "flags", 84, 4 }, { "xattr_block", 88, 8 },
	{ "next_orphan", 96, 4 }, { "rdev", 100, 4 }, { "parent", 104, 4 },
	{ "attr_flags", 108, 4 }, { "reserved240", 240, 4 },
};

static int mutate_inode(struct m *m)
{
	uint32_t inum = pick(m, 4) == 0 ? pick_inode(m, S_IFLNK) : pick_inode(m, 0);
	if (!inum)
		return -ENOENT;
	uint8_t *slot = inode_slot(m, inum);
	uint16_t mode = le_get16(slot);
	const struct field *f = &inode_fields[pick(m, sizeof(inode_fields) / sizeof(inode_fields[0]))];
	uint64_t old = get_field(slot + f->off, f->size), v;
	const char *what = "";
	if (strcmp(f->name, "mode") == 0) {
		static const uint16_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR, S_IFIFO,
						  S_IFSOCK, 0170000, 0 };
		v = (old & 07777) | types[pick(m, 8)];
		if (pick(m, 4) == 0)
			v = 0;
	} else if (strcmp(f->name, "parent") == 0 || strcmp(f->name, "next_orphan") == 0) {
		v = interesting_inode(m, inum, le_get32(slot + 104), &what);
	} else if (strcmp(f->name, "xattr_block") == 0) {
		uint64_t xb[64];
		uint32_t n = list_blocks(m, ORDFS_BT_XATTR, xb, 64);
		if (n && pick(m, 3) == 0) {
			v = xb[pick(m, n)];
			what = "an xattr block";
		} else {
			v = interesting_block(m, old, &what);
		}
	} else if (strcmp(f->name, "size") == 0 && S_ISLNK(mode) && pick(m, 2)) {
		v = pick(m, 2) ? 0 : 128 + pick(m, 200); /* finding 7 */
		what = "symlink size";
	} else if (strcmp(f->name, "size") == 0 && pick(m, 3) == 0) {
		v = pick(m, 2) ? (1ull << 62) : (1ull << 62) + 1;
	} else if (strcmp(f->name, "flags") == 0) {
		v = old ^ (1ull << pick(m, 3)); /* FAST_SYMLINK, ORPHAN, unknown */
	} else if (strcmp(f->name, "attr_flags") == 0 && pick(m, 2)) {
		static const uint32_t fl[] = { 0x10, 0x20, 0x4000, 0x10000, 0x8, 0x80000000u };
		v = old | fl[pick(m, 6)];
	} else {
		v = interesting(m, f->size, old);
	}
	if (v == old)
		v ^= 1;
	put_field(slot + f->off, f->size, v);
	fix_inode(m, inum);
	say(m, "inode %u (mode 0%o) %s 0x%llx -> 0x%llx%s%s", inum, mode, f->name,
	    (unsigned long long)old, (unsigned long long)v, *what ? " " : "", what);
	return 0;
}

/* ---- extent trees ------------------------------------------------------------------ */

/* A node: the inode's root (data[]) or an EXTENT block. */
static int mutate_extent(struct m *m)
{
	uint8_t *node;
	uint32_t inum;
	uint64_t blk = 0;
	uint64_t eb[256];
	uint32_t n = list_blocks(m, ORDFS_BT_EXTENT, eb, 256);
	if (n && pick(m, 2) == 0) {
		blk = eb[pick(m, n)];
		node = block(m, blk) + ORDFS_BLOCK_HDR_SIZE;
		inum = ordfs_block_owner(block(m, blk));
	} else {
		uint32_t list[512], k = 0, all[512];
		uint32_t na = list_inodes(m, 0, all, 512);
		for (uint32_t i = 0; i < na; i++) {
			uint8_t *s = inode_slot(m, all[i]);
			if (!(le_get32(s + 84) & ORDFS_INODE_FAST_SYMLINK) &&
			    le_get16(s + ORDFS_INODE_DATA_OFF + 2) > 0)
				list[k++] = all[i];
		}
		if (!k)
			return -ENOENT;
		inum = list[pick(m, k)];
		node = inode_slot(m, inum) + ORDFS_INODE_DATA_OFF;
	}
	uint16_t entries = le_get16(node + 2), depth = le_get16(node + 6);
	const char *where_fmt = blk ? "extent block %llu (inode %u)" : "extent root%.0llu of inode %u";
	char where[96];
	snprintf(where, sizeof(where), where_fmt, (unsigned long long)blk, inum);
	unsigned how = (unsigned)pick(m, 10);
	uint64_t old, v;
	const char *fname, *what = "";
	if (how <= 2 || entries == 0) {
		static const struct field hf[] = { { "magic", 0, 2 }, { "entries", 2, 2 },
						   { "max_entries", 4, 2 }, { "depth", 6, 2 } };
		const struct field *f = &hf[pick(m, 4)];
		old = get_field(node + f->off, 2);
		v = interesting(m, 2, old);
		if (v == old)
			v ^= 1;
		put_field(node + f->off, 2, v);
		fname = f->name;
	} else {
		uint32_t e = (uint32_t)pick(m, entries);
		uint8_t *rec = node + ORDFS_EXTENT_NODE_HDR + e * ORDFS_EXTENT_REC;
		unsigned which = (unsigned)pick(m, 4);
		if (which == 0) {
			fname = "logical";
			old = le_get64(rec);
			switch (pick(m, 4)) {
			case 0: v = 1ull << 62; what = "2^62"; break;
			case 1: v = e ? le_get64(rec - ORDFS_EXTENT_REC) : old + 1; what = "overlap"; break;
			case 2: v = UINT64_MAX - pick(m, 3); break;
			default: v = interesting(m, 8, old);
			}
			le_put64(rec, v);
		} else if (which == 1) {
			fname = depth ? "child" : "physical";
			old = le_get64(rec + 8);
			if (depth && pick(m, 3) == 0 && blk) {
				v = blk;
				what = "its own block";
			} else {
				v = interesting_block(m, old, &what);
			}
			le_put64(rec + 8, v);
		} else if (which == 2) {
			fname = depth ? "reserved" : "length";
			old = le_get32(rec + 16);
			v = pick(m, 2) ? interesting(m, 4, old) : old + 1 + pick(m, 1000);
			le_put32(rec + 16, (uint32_t)v);
		} else {
			fname = depth ? "reserved+4" : "flags";
			old = le_get32(rec + 20);
			v = old ^ (1u << pick(m, 3));
			le_put32(rec + 20, (uint32_t)v);
		}
		char rn[40];
		snprintf(rn, sizeof(rn), "record %u %s", e, fname);
		if (blk)
			fix_block(m, blk);
		else
			fix_inode(m, inum);
		say(m, "%s %s 0x%llx -> 0x%llx%s%s", where, rn, (unsigned long long)old,
		    (unsigned long long)v, *what ? " " : "", what);
		return 0;
	}
	if (blk)
		fix_block(m, blk);
	else
		fix_inode(m, inum);
	say(m, "%s header %s 0x%llx -> 0x%llx", where, fname, (unsigned long long)old,
	    (unsigned long long)v);
	return 0;
}

/* ---- directories ------------------------------------------------------------------------ */

struct dent {
	uint64_t blk;
	uint32_t off;  /* of the entry in the block */
	uint32_t dir;  /* the block's owner */
	uint32_t ino;
	uint8_t type, namelen;
};

static uint32_t list_dents(struct m *m, struct dent *out, uint32_t max, uint32_t only_dir)
{
	uint64_t lb[512];
	uint32_t nl = list_blocks(m, ORDFS_BT_DIR_LEAF, lb, 512), n = 0;
	for (uint32_t i = 0; i < nl && n < max; i++) {
		uint8_t *b = block(m, lb[i]);
		uint32_t dir = ordfs_block_owner(b);
		if (only_dir && dir != only_dir)
			continue;
		uint32_t count = le_get16(b + 24), off = ORDFS_DIR_NODE_HDR;
		for (uint32_t e = 0; e < count && n < max; e++) {
			if (off + ORDFS_DIR_ENTRY_FIXED > m->bs)
				break;
			uint8_t nlen = b[off + 13];
			struct dent d = { lb[i], off, dir, le_get32(b + off + 8), b[off + 12], nlen };
			out[n++] = d;
			off += ordfs_dir_entry_size(nlen);
		}
	}
	return n;
}

static uint32_t parent_of(struct m *m, uint32_t dir)
{
	return dir >= 1 && dir <= m->sb->inode_count ? le_get32(inode_slot(m, dir) + 104) : 0;
}

static int mutate_dir(struct m *m)
{
	unsigned how = (unsigned)pick(m, 10);
	if (how >= 8) { /* an index node or a leaf's header */
		uint64_t ib[64];
		uint32_t n = list_blocks(m, ORDFS_BT_DIR_INDEX, ib, 64);
		bool index = n && how == 8;
		if (!index)
			n = list_blocks(m, ORDFS_BT_DIR_LEAF, ib, 64);
		if (!n)
			return -ENOENT;
		uint64_t blk = ib[pick(m, n)];
		uint8_t *b = block(m, blk);
		uint32_t count = le_get16(b + 24);
		uint32_t off;
		unsigned size;
		const char *fname;
		uint64_t old, v;
		unsigned f = (unsigned)pick(m, 5);
		if (f == 0) { off = 24; size = 2; fname = "count"; }
		else if (f == 1) { off = 26; size = 2; fname = index ? "level" : "used"; }
		else if (f == 2) { off = 28; size = 4; fname = index ? "reserved" : "next"; }
		else if (index && count) {
			uint32_t r = (uint32_t)pick(m, count);
			off = ORDFS_DIR_NODE_HDR + r * ORDFS_DIR_INDEX_REC + (f == 3 ? 0 : 8);
			size = 8;
			fname = f == 3 ? "record key" : "record child";
		} else { off = 28; size = 4; fname = index ? "reserved" : "next"; }
		old = get_field(b + off, size);
		if (strcmp(fname, "next") == 0 && pick(m, 2))
			v = pick(m, 4); /* itself or an earlier leaf: a cycle of leaves */
		else if (strcmp(fname, "record child") == 0 && pick(m, 2))
			v = pick(m, 3);
		else
			v = interesting(m, size, old);
		if (v == old)
			v ^= 1;
		put_field(b + off, size, v);
		fix_block(m, blk);
		say(m, "dir %s block %llu (inode %u) %s 0x%llx -> 0x%llx", index ? "index" : "leaf",
		    (unsigned long long)blk, ordfs_block_owner(b), fname, (unsigned long long)old,
		    (unsigned long long)v);
		return 0;
	}
	struct dent d[512];
	uint32_t n = list_dents(m, d, 512, 0);
	if (!n)
		return -ENOENT;
	struct dent *e = &d[pick(m, n)];
	uint8_t *b = block(m, e->blk), *p = b + e->off;
	char name[24];
	snprintf(name, sizeof(name), "%.*s", e->namelen < 16 ? e->namelen : 16, (const char *)p + 14);
	const char *what = "";
	uint64_t old, v;
	const char *fname;
	if (how <= 3) { /* the inode field (finding 1: itself) */
		fname = "inode";
		old = e->ino;
		v = interesting_inode(m, e->dir, parent_of(m, e->dir), &what);
		if (v && v <= m->sb->inode_count && S_ISDIR(inode_mode(m, (uint32_t)v)) && pick(m, 2))
			p[12] = DT_DIR; /* with the type that goes with it */
		le_put32(p + 8, (uint32_t)v);
	} else if (how == 4) { /* the type (finding 6: regular file naming a directory) */
		static const uint8_t types[] = { DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_UNKNOWN, 13 };
		fname = "type";
		old = p[12];
		v = types[pick(m, 6)];
		if (v == old)
			v = old == DT_REG ? DT_DIR : DT_REG;
		p[12] = (uint8_t)v;
	} else if (how == 5) {
		fname = "name_len";
		old = p[13];
		v = pick(m, 2) ? 0 : interesting(m, 1, old);
		if (v == old)
			v ^= 1;
		p[13] = (uint8_t)v;
	} else if (how == 6) { /* a name byte: '/', NUL, "." or ".." */
		fname = "name";
		old = p[14];
		switch (pick(m, 4)) {
		case 0: p[14] = '/'; v = '/'; break;
		case 1: p[14] = 0; v = 0; break;
		case 2: p[13] = 1; p[14] = '.'; v = '.'; what = "\".\""; break;
		default: p[13] = 2; p[14] = '.'; p[15] = '.'; v = '.'; what = "\"..\""; break;
		}
	} else { /* the hash */
		fname = "hash";
		old = le_get64(p);
		v = pick(m, 2) ? old + 1 : interesting(m, 8, old);
		le_put64(p, v);
	}
	fix_block(m, e->blk);
	say(m, "dir %u entry \"%s\" (block %llu) %s 0x%llx -> 0x%llx%s%s", e->dir, name,
	    (unsigned long long)e->blk, fname, (unsigned long long)old, (unsigned long long)v,
	    *what ? " " : "", what);
	return 0;
}

/* ---- xattr blocks ----------------------------------------------------------------------- */

static int mutate_xattr(struct m *m)
{
	uint64_t xb[64];
	uint32_t n = list_blocks(m, ORDFS_BT_XATTR, xb, 64);
	if (!n)
		return -ENOENT;
	uint64_t blk = xb[pick(m, n)];
	uint8_t *b = block(m, blk);
	uint32_t count = le_get16(b + 24);
	uint32_t off;
	unsigned size;
	const char *fname;
	unsigned how = (unsigned)pick(m, 7);
	if (how == 0) { off = 24; size = 2; fname = "count"; }
	else if (how == 1) { off = 26; size = 2; fname = "used"; }
	else if (how == 2) { off = 28; size = 4; fname = "reserved"; }
	else if (how == 3) { off = 12; size = 4; fname = "owner"; }
	else {
		/* an entry's namespace, name length or value length */
		uint32_t e = count ? (uint32_t)pick(m, count) : 0, p = ORDFS_XATTR_HDR;
		for (uint32_t i = 0; i < e && p + 4 <= m->bs; i++)
			p += (4u + b[p + 1] + le_get16(b + p + 2) + 3u) & ~3u;
		if (p + 4 > m->bs)
			p = ORDFS_XATTR_HDR;
		if (how == 4) { off = p; size = 1; fname = "namespace"; }
		else if (how == 5) { off = p + 1; size = 1; fname = "name_len"; }
		else { off = p + 2; size = 2; fname = "value_len"; }
	}
	uint64_t old = get_field(b + off, size), v = interesting(m, size, old);
	if (strcmp(fname, "namespace") == 0 && pick(m, 2))
		v = 1 + pick(m, 6); /* another namespace: an ACL value that is not one */
	if (v == old)
		v ^= 1;
	put_field(b + off, size, v);
	fix_block(m, blk);
	say(m, "xattr block %llu (inode %u) %s 0x%llx -> 0x%llx", (unsigned long long)blk,
	    ordfs_block_owner(b), fname, (unsigned long long)old, (unsigned long long)v);
	return 0;
}

/* ---- the journal ---------------------------------------------------------------------------- */

static int mutate_jsuper(struct m *m)
{
	uint8_t *b = block(m, m->sb->journal_start);
	static const struct field jf[] = { { "block_size", 16, 4 }, { "total", 20, 4 },
					   { "first", 24, 4 }, { "start", 28, 4 },
					   { "sequence", 32, 8 }, { "errno", 40, 4 },
					   { "uuid", 44, 4 }, { "type", 4, 4 },
					   { "header sequence", 8, 8 }, { "reserved", 60, 4 } };
	const struct field *f = &jf[pick(m, sizeof(jf) / sizeof(jf[0]))];
	uint64_t old = get_field(b + f->off, f->size), v;
	const char *what = "";
	if (strcmp(f->name, "sequence") == 0 && pick(m, 2)) {
		static const uint64_t seqs[] = { (1ull << 62) - 1, (1ull << 62) - 2, 1ull << 62,
						 0, UINT64_MAX, (1ull << 63) };
		v = seqs[pick(m, 6)];
		what = "(near 2^62)";
	} else if (strcmp(f->name, "errno") == 0 && pick(m, 2)) {
		static const uint32_t errs[] = { 0x80000000u, (uint32_t)-5, (uint32_t)-117, 5 };
		v = errs[pick(m, 4)];
	} else if (strcmp(f->name, "start") == 0 && pick(m, 2)) {
		v = pick(m, m->sb->journal_blocks + 2);
	} else {
		v = interesting(m, f->size, old);
	}
	if (v == old)
		v ^= 1;
	put_field(b + f->off, f->size, v);
	memcpy(b + ORDFS_SB_COPY_SIZE, b, ORDFS_SB_COPY_SIZE);
	ordfs_journal_super_csum_set(b, m->seed);
	say(m, "journal superblock %s 0x%llx -> 0x%llx%s%s", f->name, (unsigned long long)old,
	    (unsigned long long)v, *what ? " " : "", what);
	return 0;
}

/* The log's live transactions, from the journal superblock's start. */
struct jtx {
	uint64_t seq;
	uint32_t blocks[64]; /* log blocks before the commit, in order */
	uint8_t kind[64];    /* ORDFS_JB_* or 0 for a copy */
	uint32_t desc_of[64]; /* a copy's descriptor index in blocks[], and tag */
	uint32_t tag_of[64];
	uint32_t n;
	uint32_t commit;
};

static uint32_t log_next(struct m *m, uint32_t lb)
{
	return lb + 1 >= m->sb->journal_blocks ? 1 : lb + 1;
}

static uint8_t *log_block(struct m *m, uint32_t lb)
{
	return block(m, m->sb->journal_start + lb);
}

static uint32_t scan_log(struct m *m, struct jtx *tx, uint32_t max)
{
	uint8_t *js = block(m, m->sb->journal_start);
	uint32_t lb = le_get32(js + 28);
	uint64_t seq = le_get64(js + 32);
	uint32_t ntx = 0;
	if (!lb || lb >= m->sb->journal_blocks)
		return 0;
	while (ntx < max) {
		struct jtx *t = &tx[ntx];
		memset(t, 0, sizeof(*t));
		t->seq = seq;
		uint32_t guard = 0;
		for (;;) {
			uint8_t *b = log_block(m, lb);
			if (le_get32(b) != ORDFS_JOURNAL_MAGIC || le_get64(b + 8) != seq ||
			    ++guard > m->sb->journal_blocks)
				return ntx;
			uint32_t type = le_get32(b + 4);
			if (type == ORDFS_JB_COMMIT) {
				t->commit = lb;
				lb = log_next(m, lb);
				break;
			}
			if (t->n >= 64 || (type != ORDFS_JB_DESCRIPTOR && type != ORDFS_JB_REVOKE))
				return ntx;
			uint32_t di = t->n;
			t->blocks[t->n] = lb;
			t->kind[t->n++] = (uint8_t)type;
			lb = log_next(m, lb);
			if (type == ORDFS_JB_DESCRIPTOR) {
				uint32_t tags = le_get32(b + 16);
				for (uint32_t i = 0; i < tags && t->n < 64; i++) {
					t->blocks[t->n] = lb;
					t->kind[t->n] = 0;
					t->desc_of[t->n] = di;
					t->tag_of[t->n++] = i;
					lb = log_next(m, lb);
				}
			}
		}
		ntx++;
		seq++;
	}
	return ntx;
}

/* Sets the commit block's count and chained CRC over the transaction. */
static void fix_commit(struct m *m, struct jtx *t)
{
	uint32_t crc = m->seed;
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->kind[i])
			ordfs_jblock_csum_set(log_block(m, t->blocks[i]), m->bs, m->seed);
		crc = ordfs_crc32c(crc, log_block(m, t->blocks[i]), m->bs);
	}
	uint8_t *c = log_block(m, t->commit);
	le_put32(c + 16, t->n);
	le_put32(c + 20, crc);
	ordfs_jblock_csum_set(c, m->bs, m->seed);
}

/* A copy's tag checksum, over the block as it will be written home. */
static void fix_tag(struct m *m, struct jtx *t, uint32_t i)
{
	uint8_t *d = log_block(m, t->blocks[t->desc_of[i]]);
	uint8_t *tag = d + 24 + t->tag_of[i] * ORDFS_JTAG_SIZE;
	uint8_t home[65536];
	memcpy(home, log_block(m, t->blocks[i]), m->bs);
	if (le_get32(tag + 8) & ORDFS_JTAG_ESCAPED)
		le_put32(home, ORDFS_JOURNAL_MAGIC);
	uint8_t le_seq[8];
	le_put64(le_seq, t->seq);
	le_put32(tag + 12, ordfs_crc32c(ordfs_crc32c(m->seed, le_seq, 8), home, m->bs));
}

/* Damages a journaled copy as the structure its target is: the
 * superblock (a feature bit: finding 4), a bitmap (an in-use bit
 * cleared), an inode table block (a slot's field), a metadata block. */
static void damage_copy(struct m *m, uint8_t *copy, uint64_t target, char *what, size_t wlen)
{
	const struct ordfs_super *sb = m->sb;
	if (target == 0) {
		static const struct field sf[] = { { "feature_ro_compat", 16, 4 },
						   { "feature_incompat", 12, 4 },
						   { "orphan_head", 116, 4 }, { "state", 108, 4 },
						   { "block_count", 24, 8 }, { "hash_seed", 268, 4 } };
		const struct field *f = &sf[pick(m, 6)];
		uint64_t old = get_field(copy + f->off, f->size);
		uint64_t v = f->off == 16 ? (old | 0x80) : f->off == 12 ? (old | 0x100)
							 : interesting(m, f->size, old);
		put_field(copy + f->off, f->size, v);
		memcpy(copy + ORDFS_SB_COPY_SIZE, copy, ORDFS_SB_COPY_SIZE);
		ordfs_super_csum_set(copy);
		snprintf(what, wlen, "superblock %s 0x%llx -> 0x%llx", f->name,
			 (unsigned long long)old, (unsigned long long)v);
	} else if (target >= sb->inode_table_start && target < sb->data_start) {
		uint32_t per = m->bs / ORDFS_INODE_SIZE;
		uint32_t s = (uint32_t)pick(m, per);
		uint32_t inum = (uint32_t)((target - sb->inode_table_start) * per + s + 1);
		uint8_t *slot = copy + s * ORDFS_INODE_SIZE;
		static const struct field fs_[] = { { "mode", 0, 2 }, { "links", 12, 4 },
						    { "size", 16, 8 }, { "parent", 104, 4 },
						    { "flags", 84, 4 } };
		const struct field *f = &fs_[pick(m, 5)];
		uint64_t old = get_field(slot + f->off, f->size), v = interesting(m, f->size, old);
		put_field(slot + f->off, f->size, v);
		ordfs_inode_csum_set(slot, inum, m->seed);
		snprintf(what, wlen, "inode %u %s 0x%llx -> 0x%llx", inum, f->name,
			 (unsigned long long)old, (unsigned long long)v);
	} else if (le_get32(copy) == ORDFS_BLOCK_MAGIC) {
		uint32_t type = le_get16(copy + 4);
		if (type == ORDFS_BT_BLOCK_BITMAP || type == ORDFS_BT_INODE_BITMAP) {
			uint32_t per = ordfs_bits_per_bitmap_block(m->bs);
			uint32_t i = 0;
			for (int t = 0; t < 512; t++) {
				i = (uint32_t)pick(m, per / 4);
				if (ordfs_bitmap_bit(copy, i))
					break;
			}
			ordfs_bitmap_put(copy, i, false);
			snprintf(what, wlen, "bitmap bit %u cleared", i);
		} else {
			uint32_t off = ORDFS_BLOCK_HDR_SIZE + (uint32_t)pick(m, 64);
			uint8_t old = copy[off];
			copy[off] ^= (uint8_t)(1u << pick(m, 8));
			snprintf(what, wlen, "block type %u byte %u 0x%02x -> 0x%02x", type, off, old,
				 copy[off]);
		}
		ordfs_block_csum_set(copy, m->bs, m->seed);
	} else {
		uint32_t off = (uint32_t)pick(m, m->bs);
		copy[off] ^= 0xff;
		snprintf(what, wlen, "raw byte %u flipped", off);
	}
}

static int mutate_jblock(struct m *m)
{
	struct jtx tx[8];
	uint32_t ntx = scan_log(m, tx, 8);
	if (!ntx)
		return -ENOENT;
	struct jtx *t = &tx[pick(m, ntx)];
	unsigned how = (unsigned)pick(m, 8);
	char what[160] = "";
	/* the copies of this transaction */
	uint32_t copies[64], nc = 0, descs[64], nd = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		if (!t->kind[i])
			copies[nc++] = i;
		else if (t->kind[i] == ORDFS_JB_DESCRIPTOR)
			descs[nd++] = i;
	}
	if (how <= 2 && nc) { /* a copy's content, every checksum fixed */
		uint32_t i = copies[pick(m, nc)];
		uint8_t *d = log_block(m, t->blocks[t->desc_of[i]]);
		uint8_t *tag = d + 24 + t->tag_of[i] * ORDFS_JTAG_SIZE;
		uint64_t target = le_get64(tag);
		uint8_t *copy = log_block(m, t->blocks[i]);
		if (how == 2) { /* retarget the copy at block 0 (finding 4) */
			memcpy(copy, block(m, 0), m->bs);
			le_put64(tag, 0);
			le_put32(tag + 8, 0);
			target = 0;
		}
		bool esc = le_get32(tag + 8) & ORDFS_JTAG_ESCAPED;
		if (esc)
			le_put32(copy, ORDFS_JOURNAL_MAGIC);
		damage_copy(m, copy, target, what, sizeof(what));
		if (esc)
			le_put32(copy, 0);
		fix_tag(m, t, i);
		fix_commit(m, t);
		say(m, "journal tx %llu log block %u: copy of block %llu%s: %s",
		    (unsigned long long)t->seq, t->blocks[i], (unsigned long long)target,
		    how == 2 ? " (retargeted)" : "", what);
		return 0;
	}
	if (how <= 4 && nd) { /* a descriptor's tag or count */
		uint32_t di = descs[pick(m, nd)];
		uint8_t *d = log_block(m, t->blocks[di]);
		uint32_t tags = le_get32(d + 16);
		const char *fname;
		uint64_t old, v;
		if (!tags || pick(m, 4) == 0) {
			fname = "tag count";
			old = tags;
			v = interesting(m, 4, old);
			le_put32(d + 16, (uint32_t)v);
		} else {
			uint32_t k = (uint32_t)pick(m, tags);
			uint8_t *tag = d + 24 + k * ORDFS_JTAG_SIZE;
			if (pick(m, 3)) {
				fname = "tag target";
				old = le_get64(tag);
				v = interesting_block(m, old, (const char **)&(const char *){ "" });
				if (pick(m, 3) == 0)
					v = m->sb->journal_start + pick(m, m->sb->journal_blocks);
				le_put64(tag, v);
				/* the tag's checksum follows its copy, as a writer's would */
				for (uint32_t i = 0; i < t->n; i++)
					if (!t->kind[i] && t->desc_of[i] == di && t->tag_of[i] == k)
						fix_tag(m, t, i);
			} else {
				fname = "tag flags";
				old = le_get32(tag + 8);
				v = old ^ (1u << pick(m, 3));
				le_put32(tag + 8, (uint32_t)v);
			}
		}
		fix_commit(m, t);
		say(m, "journal tx %llu descriptor (log block %u) %s 0x%llx -> 0x%llx",
		    (unsigned long long)t->seq, t->blocks[di], fname, (unsigned long long)old,
		    (unsigned long long)v);
		return 0;
	}
	if (how == 5 && nc) { /* a revoke of a block this transaction logs */
		/* turn the first descriptor's last tag's copy into nothing by
		 * revoking its target in a later transaction's revoke block, if
		 * one exists; else change the commit's time */
		for (uint32_t k = 0; k < ntx; k++) {
			for (uint32_t i = 0; i < tx[k].n; i++) {
				if (tx[k].kind[i] != ORDFS_JB_REVOKE)
					continue;
				uint8_t *r = log_block(m, tx[k].blocks[i]);
				uint32_t cnt = le_get32(r + 16);
				if (!cnt)
					continue;
				uint32_t j = (uint32_t)pick(m, cnt);
				uint64_t old = le_get64(r + 24 + 8 * j);
				const char *w = "";
				uint64_t v = interesting_block(m, old, &w);
				le_put64(r + 24 + 8 * j, v);
				fix_commit(m, &tx[k]);
				say(m, "journal tx %llu revoke (log block %u) record %u 0x%llx -> "
				    "0x%llx %s", (unsigned long long)tx[k].seq, tx[k].blocks[i], j,
				    (unsigned long long)old, (unsigned long long)v, w);
				return 0;
			}
		}
	}
	/* the commit block: its time, or its sequence (the log ends early) */
	uint8_t *c = log_block(m, t->commit);
	static const struct field cf[] = { { "time", 24, 8 }, { "nsec", 32, 4 },
					   { "reserved", 36, 4 } };
	const struct field *f = &cf[pick(m, 3)];
	uint64_t old = get_field(c + f->off, f->size), v = interesting(m, f->size, old);
	if (v == old)
		v ^= 1;
	put_field(c + f->off, f->size, v);
	ordfs_jblock_csum_set(c, m->bs, m->seed);
	say(m, "journal tx %llu commit (log block %u) %s 0x%llx -> 0x%llx",
	    (unsigned long long)t->seq, t->commit, f->name, (unsigned long long)old,
	    (unsigned long long)v);
	return 0;
}

/* ---- the owner record ------------------------------------------------------------------------- */

static int mutate_owner(struct m *m)
{
	if (m->size < (m->sb->block_count) * m->bs + ORDFS_OWNER_SIZE)
		return -ENOENT;
	uint8_t *rec = m->img + m->size - ORDFS_OWNER_SIZE;
	struct ordfs_owner o;
	memset(&o, 0, sizeof(o));
	o.state = pick(m, 4) ? ORDFS_OWNER_HELD : (uint32_t)pick(m, 1000);
	o.seq = h_rand(&m->rng);
	o.nonce = h_rand(&m->rng);
	o.pid = (uint32_t)pick(m, 2) ? 1 : (uint32_t)h_rand(&m->rng);
	static const uint32_t ivals[] = { 0, 1, 1000, 0xffffffffu, 0x7fffffff };
	o.interval_ms = ivals[pick(m, 5)];
	o.time = pick(m, 2) ? 0 : UINT64_MAX - pick(m, 10);
	snprintf(o.program, sizeof(o.program), "%s", pick(m, 2) ? "ordfs" : "fsck.ordfs");
	snprintf(o.host, sizeof(o.host), "%s", pick(m, 2) ? "elsewhere.example" : "");
	ordfs_owner_encode(&o, rec);
	say(m, "owner record: state %u pid %u interval_ms %u time %llu program %s host \"%s\"",
	    o.state, o.pid, o.interval_ms, (unsigned long long)o.time, o.program, o.host);
	return 0;
}

/* ---- cross-structure loops -------------------------------------------------------------------- */

static int mutate_loop(struct m *m)
{
	uint32_t dirs[256];
	uint32_t nd = list_inodes(m, S_IFDIR, dirs, 256);
	unsigned how = (unsigned)pick(m, 6);
	if (how == 0 && nd >= 3) { /* two directories' '..' naming each other */
		uint32_t a = dirs[1 + pick(m, nd - 1)], b = dirs[1 + pick(m, nd - 1)];
		if (a == b)
			return -ENOENT;
		le_put32(inode_slot(m, a) + 104, b);
		le_put32(inode_slot(m, b) + 104, a);
		fix_inode(m, a);
		fix_inode(m, b);
		say(m, "loop: '..' of directories %u and %u name each other", a, b);
		return 0;
	}
	struct dent d[512];
	uint32_t n = list_dents(m, d, 512, 0);
	if (!n)
		return -ENOENT;
	if (how <= 3) { /* an entry naming its own directory, or an ancestor */
		struct dent *e = &d[pick(m, n)];
		uint32_t target = e->dir;
		const char *what = "its own directory";
		if (how == 2) {
			uint32_t up = parent_of(m, e->dir);
			for (uint32_t k = (uint32_t)pick(m, 3); k && up > ORDFS_ROOT_INO; k--)
				up = parent_of(m, up);
			target = up;
			what = "an ancestor";
		} else if (how == 3) {
			target = dirs[pick(m, nd)];
			what = "another directory (a second name)";
		}
		uint8_t *p = block(m, e->blk) + e->off;
		le_put32(p + 8, target);
		p[12] = DT_DIR;
		fix_block(m, e->blk);
		say(m, "loop: dir %u entry \"%.*s\" -> inode %u, DT_DIR: %s", e->dir,
		    e->namelen < 16 ? e->namelen : 16, (const char *)p + 14, target, what);
		return 0;
	}
	if (how == 4) { /* the orphan list a cycle */
		uint32_t x = pick_inode(m, S_IFREG);
		if (!x)
			return -ENOENT;
		uint8_t *s = inode_slot(m, x);
		le_put32(s + 96, x);
		le_put32(s + 84, le_get32(s + 84) | ORDFS_INODE_ORPHAN);
		fix_inode(m, x);
		uint8_t *raw = block(m, 0);
		le_put32(raw + 116, x);
		memcpy(raw + ORDFS_SB_COPY_SIZE, raw, ORDFS_SB_COPY_SIZE);
		ordfs_super_csum_set(raw);
		say(m, "loop: orphan list head %u whose next_orphan is itself", x);
		return 0;
	}
	/* a directory entry naming a file of another directory's subtree as a
	 * directory ('..' of a file) */
	struct dent *e = &d[pick(m, n)];
	uint32_t f = pick_inode(m, S_IFREG);
	uint32_t dir = dirs[pick(m, nd)];
	if (!f || dir == ORDFS_ROOT_INO)
		return -ENOENT;
	le_put32(inode_slot(m, dir) + 104, f);
	fix_inode(m, dir);
	(void)e;
	say(m, "loop: '..' of directory %u names regular file %u", dir, f);
	return 0;
}

int h_mutate(uint8_t *img, size_t size, const struct ordfs_super *sb, uint64_t seed, int want,
	     enum h_struct *which, char *desc, size_t desc_len)
{
	struct m m = { img, size, sb, ordfs_block_size(sb), sb->csum_seed, seed * 2654435761u + 1,
		       desc, desc_len };
	enum h_struct s = want >= 0 ? (enum h_struct)want : (enum h_struct)pick(&m, HS_COUNT);
	*which = s;
	desc[0] = 0;
	switch (s) {
	case HS_SUPER: return mutate_super(&m);
	case HS_BBITMAP: return mutate_bitmap(&m, false);
	case HS_IBITMAP: return mutate_bitmap(&m, true);
	case HS_INODE: return mutate_inode(&m);
	case HS_EXTENT: return mutate_extent(&m);
	case HS_DIR: return mutate_dir(&m);
	case HS_XATTR: return mutate_xattr(&m);
	case HS_JSUPER: return mutate_jsuper(&m);
	case HS_JBLOCK: return mutate_jblock(&m);
	case HS_OWNER: return mutate_owner(&m);
	case HS_LOOP: return mutate_loop(&m);
	default: return -ENOENT;
	}
}
