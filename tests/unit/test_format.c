/*
 * test_format.c - encoders, decoders and checksums of format.h.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"

static void sample_super(struct ordfs_super *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = ORDFS_SB_MAGIC;
	sb->version = ORDFS_VERSION;
	sb->log_block_size = 12;
	sb->block_count = 4096;
	sb->inode_count = 1024;
	sb->inode_size = ORDFS_INODE_SIZE;
	sb->journal_start = 1;
	sb->journal_blocks = 256;
	uint32_t bits = ordfs_bits_per_bitmap_block(4096);
	sb->block_bitmap_start = 257;
	sb->block_bitmap_blocks = (4096 + bits - 1) / bits;
	sb->inode_bitmap_start = sb->block_bitmap_start + sb->block_bitmap_blocks;
	sb->inode_bitmap_blocks = 1;
	sb->inode_table_start = sb->inode_bitmap_start + 1;
	sb->inode_table_blocks = 1024 * 256 / 4096;
	sb->data_start = sb->inode_table_start + sb->inode_table_blocks;
	sb->free_blocks = 100;
	sb->free_inodes = 1000;
	sb->state = ORDFS_STATE_CLEAN;
	sb->errors = ORDFS_ERRORS_CONTINUE;
	memcpy(sb->uuid, "uuid-uuid-uuid-1", 16);
	strcpy(sb->label, "label");
	strcpy(sb->mount_opts, "data=writeback,noatime");
	sb->csum_seed = ordfs_crc32c(~0u, sb->uuid, 16);
	sb->hash_seed = 77;
}

START_TEST(test_crc32c_known_values)
{
	/* The standard check value of CRC32C over "123456789" is 0xE3069283
	 * (with the usual ~0 start and final xor). */
	ck_assert_uint_eq(~ordfs_crc32c(~0u, "123456789", 9), 0xE3069283u);
	/* Chaining equals one pass. */
	uint32_t a = ordfs_crc32c(ordfs_crc32c(~0u, "1234", 4), "56789", 5);
	ck_assert_uint_eq(a, ordfs_crc32c(~0u, "123456789", 9));
	uint8_t buf[1000];
	for (int i = 0; i < 1000; i++)
		buf[i] = (uint8_t)(i * 7);
	uint32_t whole = ordfs_crc32c(~0u, buf, 1000);
	ck_assert_uint_eq(ordfs_crc32c(ordfs_crc32c(~0u, buf, 333), buf + 333, 667), whole);
}
END_TEST

/* Bit-at-a-time CRC32C: the definition, to check both fast paths. */
static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc;
}

START_TEST(test_crc32c_paths_agree)
{
	uint8_t buf[300];
	for (int i = 0; i < 300; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t off = 0; off < 9; off++) {
		for (size_t len = 0; len + off <= 300; len += 7) {
			uint32_t ref = crc32c_bitwise(0x12345678u, buf + off, len);
			ck_assert_uint_eq(ordfs_crc32c(0x12345678u, buf + off, len), ref);
			ck_assert_uint_eq(ordfs_crc32c_portable(0x12345678u, buf + off, len), ref);
		}
	}
}
END_TEST

START_TEST(test_super_round_trip)
{
	struct ordfs_super sb, out;
	uint8_t raw[ORDFS_SB_SIZE];
	const char *why = NULL;
	sample_super(&sb);
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), 0);
	ck_assert_mem_eq(&sb, &out, sizeof(sb));
	ck_assert_uint_eq(le_get32(raw), ORDFS_SB_MAGIC);
	ck_assert_uint_eq(le_get64(raw + 24), 4096);
}
END_TEST

START_TEST(test_super_rejects_damage)
{
	struct ordfs_super sb, out;
	uint8_t raw[ORDFS_SB_SIZE];
	const char *why = NULL;
	sample_super(&sb);
	ordfs_super_encode(&sb, raw);

	/* A bit flip in one copy is caught and the other copy is used; the
	 * same flip in both copies is refused. */
	for (int byte = 0; byte < (int)ORDFS_SB_COPY_SIZE; byte += 13) {
		for (int copy = 0; copy < 2; copy++) {
			raw[copy * ORDFS_SB_COPY_SIZE + byte] ^= 0x10;
			ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), 0);
			ck_assert_uint_eq(out.block_count, sb.block_count);
			ck_assert(!ordfs_super_copies_agree(raw));
			raw[copy * ORDFS_SB_COPY_SIZE + byte] ^= 0x10;
		}
		raw[byte] ^= 0x10;
		raw[ORDFS_SB_COPY_SIZE + byte] ^= 0x10;
		why = NULL;
		ck_assert_int_ne(ordfs_super_decode(raw, &out, &why), 0);
		ck_assert_ptr_nonnull(why);
		raw[byte] ^= 0x10;
		raw[ORDFS_SB_COPY_SIZE + byte] ^= 0x10;
	}
	ck_assert(ordfs_super_copies_agree(raw));
	/* Copy 0 wins when both are valid (a torn write: either is a state
	 * the crash may leave). */
	struct ordfs_super other = sb;
	other.mount_count = 77;
	uint8_t raw2[ORDFS_SB_SIZE];
	ordfs_super_encode(&other, raw2);
	memcpy(raw + ORDFS_SB_COPY_SIZE, raw2 + ORDFS_SB_COPY_SIZE, ORDFS_SB_COPY_SIZE);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), 0);
	ck_assert_uint_eq(out.mount_count, sb.mount_count);
	memset(raw, 0xa5, ORDFS_SB_COPY_SIZE); /* a garbage sector */
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), 0);
	ck_assert_uint_eq(out.mount_count, 77);
	/* An unknown incompat feature is refused with its own error. */
	sb.feature_incompat = 0x80;
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), -EOPNOTSUPP);
	/* Geometry that overlaps is refused even with a valid checksum. */
	sample_super(&sb);
	sb.data_start -= 1;
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), -EUCLEAN);
	sample_super(&sb);
	sb.log_block_size = 20;
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), -EUCLEAN);
	sample_super(&sb);
	sb.orphan_head = sb.inode_count + 5;
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), -EUCLEAN);
}
END_TEST

START_TEST(test_inode_round_trip_and_checksum)
{
	struct ordfs_inode in, out;
	uint8_t raw[ORDFS_INODE_SIZE];
	memset(&in, 0, sizeof(in));
	in.mode = 0100644;
	in.uid = 1000;
	in.gid = 100;
	in.links = 3;
	in.size = 1ull << 40;
	in.blocks = 12345;
	in.atime = (struct ordfs_timespec){ -5, 999999999 };
	in.mtime = (struct ordfs_timespec){ 1700000000, 1 };
	in.ctime = (struct ordfs_timespec){ 1700000001, 2 };
	in.crtime = (struct ordfs_timespec){ 42, 3 };
	in.generation = 9;
	in.flags = ORDFS_INODE_ORPHAN;
	in.next_orphan = 17;
	in.parent = 2;
	for (uint32_t i = 0; i < ORDFS_INODE_DATA_LEN; i++)
		in.data[i] = (uint8_t)i;
	ordfs_inode_encode(&in, 33, 0xabcdef, raw);
	ck_assert_int_eq(ordfs_inode_decode(raw, 33, 0xabcdef, &out), 0);
	ck_assert_mem_eq(&in, &out, sizeof(in));
	/* The inode number is part of the checksum: a slot copied elsewhere
	 * fails. */
	ck_assert_int_eq(ordfs_inode_decode(raw, 34, 0xabcdef, &out), -EUCLEAN);
	raw[100] ^= 1;
	ck_assert_int_eq(ordfs_inode_decode(raw, 33, 0xabcdef, &out), -EUCLEAN);
	raw[100] ^= 1;
	/* Out-of-range nanoseconds are corrupt even with a right checksum. */
	in.mtime.nsec = 1000000000u;
	ordfs_inode_encode(&in, 33, 0xabcdef, raw);
	ck_assert_int_eq(ordfs_inode_decode(raw, 33, 0xabcdef, &out), -EUCLEAN);
}
END_TEST

START_TEST(test_block_header_verify)
{
	uint8_t *blk = calloc(1, 4096);
	ordfs_block_hdr_init(blk, ORDFS_BT_DIR_LEAF, 12, 500);
	memset(blk + ORDFS_BLOCK_HDR_SIZE, 0x3c, 100);
	ordfs_block_csum_set(blk, 4096, 7);
	ck_assert_int_eq(ordfs_block_verify(blk, 4096, 7, ORDFS_BT_DIR_LEAF, 500), 0);
	ck_assert_uint_eq(ordfs_block_owner(blk), 12);
	ck_assert_int_eq(ordfs_block_verify(blk, 4096, 8, ORDFS_BT_DIR_LEAF, 500), -EUCLEAN);
	ck_assert_int_eq(ordfs_block_verify(blk, 4096, 7, ORDFS_BT_EXTENT, 500), -EUCLEAN);
	ck_assert_int_eq(ordfs_block_verify(blk, 4096, 7, ORDFS_BT_DIR_LEAF, 501), -EUCLEAN);
	blk[4000] ^= 0x80;
	ck_assert_int_eq(ordfs_block_verify(blk, 4096, 7, ORDFS_BT_DIR_LEAF, 500), -EUCLEAN);
	free(blk);
}
END_TEST

START_TEST(test_journal_blocks)
{
	uint8_t blk[1024];
	struct ordfs_journal_super js = { 1024, 128, 1, 5, 99, 0, { 0 } }, out;
	memcpy(js.uuid, "abcdefghijklmnop", 16);
	ordfs_journal_super_encode(&js, 3, blk);
	ck_assert_int_eq(ordfs_journal_super_decode(blk, 1024, 3, &out, NULL), 0);
	ck_assert_uint_eq(out.block_size, 1024);
	ck_assert_uint_eq(out.total_blocks, 128);
	ck_assert_uint_eq(out.first, 1);
	ck_assert_uint_eq(out.start, 5);
	ck_assert_uint_eq(out.sequence, 99);
	ck_assert_int_eq(out.err, 0);
	ck_assert_mem_eq(out.uuid, js.uuid, 16);
	ck_assert_int_eq(ordfs_journal_super_decode(blk, 1024, 4, &out, NULL), -EUCLEAN);
	js.start = 500; /* past the log */
	ordfs_journal_super_encode(&js, 3, blk);
	ck_assert_int_eq(ordfs_journal_super_decode(blk, 1024, 3, &out, NULL), -EUCLEAN);

	memset(blk, 0, sizeof(blk));
	ordfs_jblock_hdr_init(blk, ORDFS_JB_COMMIT, 1ull << 40);
	ordfs_jblock_csum_set(blk, 1024, 3);
	ck_assert(ordfs_jblock_valid(blk, 1024, 3, ORDFS_JB_COMMIT, 1ull << 40));
	ck_assert(!ordfs_jblock_valid(blk, 1024, 3, ORDFS_JB_COMMIT, (1ull << 40) + 1));
	ck_assert(!ordfs_jblock_valid(blk, 1024, 3, ORDFS_JB_DESCRIPTOR, 1ull << 40));
	blk[700] = 1;
	ck_assert(!ordfs_jblock_valid(blk, 1024, 3, ORDFS_JB_COMMIT, 1ull << 40));
}
END_TEST

START_TEST(test_name_hash_spreads)
{
	/* Different seeds give different hashes; similar names spread. */
	ck_assert_uint_ne(ordfs_name_hash(1, "abc", 3), ordfs_name_hash(2, "abc", 3));
	ck_assert_uint_eq(ordfs_name_hash(1, "abc", 3), ordfs_name_hash(1, "abc", 3));
	unsigned buckets[16] = { 0 };
	char name[32];
	for (int i = 0; i < 16000; i++) {
		int n = snprintf(name, sizeof(name), "file%05d", i);
		buckets[ordfs_name_hash(99, name, (size_t)n) >> 60]++;
	}
	for (int b = 0; b < 16; b++)
		ck_assert_msg(buckets[b] > 800 && buckets[b] < 1200, "bucket %d: %u", b, buckets[b]);
}
END_TEST

/* sample_super's areas laid out again with a block bitmap of bbb blocks
 * and a journal of jblocks. */
static void relayout(struct ordfs_super *sb, uint32_t bbb, uint32_t jblocks)
{
	sb->journal_blocks = jblocks;
	sb->block_bitmap_start = 1 + jblocks;
	sb->block_bitmap_blocks = bbb;
	sb->inode_bitmap_start = sb->block_bitmap_start + bbb;
	sb->inode_table_start = sb->inode_bitmap_start + sb->inode_bitmap_blocks;
	sb->data_start = sb->inode_table_start + sb->inode_table_blocks;
}

static const char *geometry_why(const struct ordfs_super *sb)
{
	const char *why = NULL;
	return ordfs_super_check_geometry(sb, &why) == 0 ? "ok" : why;
}

/* Where each group's bitmap block is, and what the geometry allows with
 * and without INCOMPAT_GROUP_BITMAPS. */
START_TEST(test_group_bitmaps_geometry_and_lookup)
{
	const uint64_t per = ordfs_bits_per_bitmap_block(4096); /* 32576 */
	struct ordfs_super sb;
	sample_super(&sb);
	ck_assert_str_eq(geometry_why(&sb), "ok");
	ck_assert_uint_eq(ordfs_block_groups(&sb), 1);
	ck_assert_uint_eq(ordfs_block_bitmap_block(&sb, 0), 257);
	ck_assert(!ordfs_is_group_bitmap_block(&sb, 0));
	ck_assert(!ordfs_range_has_group_bitmap(&sb, sb.data_start, 100));

	/* Grown past the area's one block: four groups. */
	sb.block_count = 3 * per + 10;
	/* Without the flag, one bitmap block is too few. */
	ck_assert_str_eq(geometry_why(&sb), "block bitmap size does not match block count");
	sb.feature_incompat = ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	ck_assert_str_eq(geometry_why(&sb), "ok");
	ck_assert_uint_eq(ordfs_block_groups(&sb), 4);
	ck_assert_uint_eq(ordfs_block_bitmap_block(&sb, 0), 257);
	ck_assert_uint_eq(ordfs_block_bitmap_block(&sb, 1), per);
	ck_assert_uint_eq(ordfs_block_bitmap_block(&sb, 3), 3 * per);
	ck_assert(!ordfs_is_group_bitmap_block(&sb, 0));   /* group 0: in the area */
	ck_assert(!ordfs_is_group_bitmap_block(&sb, 257)); /* the area's block */
	ck_assert(ordfs_is_group_bitmap_block(&sb, per));
	ck_assert(ordfs_is_group_bitmap_block(&sb, 3 * per));
	ck_assert(!ordfs_is_group_bitmap_block(&sb, per + 1));
	ck_assert(!ordfs_is_group_bitmap_block(&sb, 4 * per)); /* past the end */
	ck_assert(!ordfs_range_has_group_bitmap(&sb, per - 5, 5));
	ck_assert(ordfs_range_has_group_bitmap(&sb, per - 5, 6));
	ck_assert(ordfs_range_has_group_bitmap(&sb, per, 1));
	ck_assert(!ordfs_range_has_group_bitmap(&sb, per + 1, per - 1));
	ck_assert(ordfs_range_has_group_bitmap(&sb, per + 1, per));
	ck_assert(ordfs_range_has_group_bitmap(&sb, sb.data_start, 3 * per));
	ck_assert(!ordfs_range_has_group_bitmap(&sb, 3 * per + 1, 8));
	ck_assert(!ordfs_range_has_group_bitmap(&sb, per, 0));

	/* The backup superblock (the last block) on a group bitmap block: a
	 * group of one block is refused; one of two blocks is not. */
	sb.block_count = 3 * per + 1;
	ck_assert_str_eq(geometry_why(&sb), "the backup superblock falls on a group bitmap block");
	sb.block_count = 3 * per + 2;
	ck_assert_str_eq(geometry_why(&sb), "ok");
	/* ... but one ending a group in the area is an ordinary last block. */
	sb.block_count = per + 1;
	relayout(&sb, 2, sb.journal_blocks);
	ck_assert_str_eq(geometry_why(&sb), "ok");
	ck_assert_uint_eq(ordfs_block_groups(&sb), 2);
	ck_assert(!ordfs_is_group_bitmap_block(&sb, per));

	/* With the flag, the area may not be larger than the groups ... */
	sample_super(&sb);
	sb.feature_incompat = ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	ck_assert_str_eq(geometry_why(&sb), "ok"); /* (no group past the area) */
	relayout(&sb, 2, sb.journal_blocks);
	ck_assert_str_eq(geometry_why(&sb), "block bitmap size does not match block count");
	/* ... nor leave metadata to a group past it (its bitmap block would
	 * land in the journal), nor be empty. */
	sample_super(&sb);
	sb.feature_incompat = ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	sb.block_count = 3 * per;
	relayout(&sb, 1, (uint32_t)per + 100);
	ck_assert_str_eq(geometry_why(&sb), "block bitmap does not cover the metadata areas");
	relayout(&sb, 2, (uint32_t)per + 100);
	ck_assert_str_eq(geometry_why(&sb), "ok");
	relayout(&sb, 0, 256);
	ck_assert_str_eq(geometry_why(&sb), "block bitmap does not cover the metadata areas");
	/* The flag is a known incompat feature: the superblock decodes. */
	sample_super(&sb);
	sb.feature_incompat = ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	sb.block_count = 2 * per + 7;
	uint8_t raw[ORDFS_SB_SIZE];
	struct ordfs_super out;
	const char *why;
	ordfs_super_encode(&sb, raw);
	ck_assert_int_eq(ordfs_super_decode(raw, &out, &why), 0);
	ck_assert_uint_eq(out.feature_incompat, ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS);
}
END_TEST

/* A group bitmap block verifies with its header, checksum and own bit. */
START_TEST(test_group_bitmap_block_verify)
{
	const uint64_t per = ordfs_bits_per_bitmap_block(4096);
	struct ordfs_super sb;
	sample_super(&sb);
	sb.feature_incompat = ORDFS_FEATURE_INCOMPAT_GROUP_BITMAPS;
	sb.block_count = 2 * per + 7;
	uint8_t *blk = calloc(1, 4096);
	ordfs_block_hdr_init(blk, ORDFS_BT_BLOCK_BITMAP, 0, 2 * per);
	ordfs_bitmap_put(blk, 0, true);
	ordfs_block_csum_set(blk, 4096, sb.csum_seed);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), 0);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 1, blk), -EUCLEAN); /* blockno */
	/* its own bit clear, checksum right: still refused */
	ordfs_bitmap_put(blk, 0, false);
	ordfs_block_csum_set(blk, 4096, sb.csum_seed);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), -EUCLEAN);
	ordfs_bitmap_put(blk, 0, true);
	blk[1000] ^= 4; /* checksum */
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 2, blk), -EUCLEAN);
	/* An area block has no own bit to check (bit 0 is block 0's). */
	memset(blk, 0, 4096);
	ordfs_block_hdr_init(blk, ORDFS_BT_BLOCK_BITMAP, 0, 257);
	ordfs_block_csum_set(blk, 4096, sb.csum_seed);
	ck_assert_int_eq(ordfs_block_bitmap_verify(&sb, 0, blk), 0);
	free(blk);
}
END_TEST

static Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_crc32c_known_values);
	tcase_add_test(tc, test_crc32c_paths_agree);
	tcase_add_test(tc, test_super_round_trip);
	tcase_add_test(tc, test_super_rejects_damage);
	tcase_add_test(tc, test_inode_round_trip_and_checksum);
	tcase_add_test(tc, test_block_header_verify);
	tcase_add_test(tc, test_journal_blocks);
	tcase_add_test(tc, test_name_hash_spreads);
	tcase_add_test(tc, test_group_bitmaps_geometry_and_lookup);
	tcase_add_test(tc, test_group_bitmap_block_verify);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(format_suite());
}
