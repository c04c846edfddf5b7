/*
 * test_recovery.c - journal_recover() on hand-made journals.
 *
 * Fixture: an in-memory image with a geometry-valid superblock (block size
 * 1024 or 4096, journal at blocks [1, 1 + jblocks)), every block outside the
 * journal filled with generation 0 of a pattern that names the block, so a
 * test can tell exactly which generation each home block holds.
 *
 * The log encoder (struct txb) is written from format.h alone, not from
 * commit.c, so these tests check recovery against the format, and
 * test_journal.c checks recovery against the real commit path.
 *
 * A transaction is built in memory (descriptors + copies, revoke blocks,
 * commit), sealed (tail checksums, chained CRC, commit fields), optionally
 * damaged by the test, then written at a log position, wrapping.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "blockdev/blockdev.h"
#include "journal/journal.h"
#include "helpers.h"

#define NBLOCKS 1024u
#define MAX_TX_LOG 320u
#define NO_DESC UINT32_MAX

static const uint32_t block_sizes[] = { 1024, 4096 };

/* ---- fixture ------------------------------------------------------------ */

struct fix {
	uint32_t bs;
	struct ordfs_super sb;
	struct blockdev *mem;
	uint32_t first, total; /* log geometry */
	uint64_t home;         /* first data block: tests write home blocks here */
};

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static void make_super(struct ordfs_super *sb, uint32_t bs, uint32_t jblocks)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = ORDFS_SB_MAGIC;
	sb->version = ORDFS_VERSION;
	sb->log_block_size = bs == 1024 ? 10 : 12;
	sb->block_count = NBLOCKS;
	sb->inode_count = 64;
	sb->inode_size = ORDFS_INODE_SIZE;
	sb->journal_start = 1;
	sb->journal_blocks = jblocks;
	uint32_t bits = ordfs_bits_per_bitmap_block(bs);
	sb->block_bitmap_blocks = (uint32_t)div_up(NBLOCKS, bits);
	sb->block_bitmap_start = 1 + jblocks;
	sb->inode_bitmap_blocks = (uint32_t)div_up(sb->inode_count, bits);
	sb->inode_bitmap_start = sb->block_bitmap_start + sb->block_bitmap_blocks;
	sb->inode_table_blocks = (uint32_t)div_up((uint64_t)sb->inode_count * ORDFS_INODE_SIZE, bs);
	sb->inode_table_start = sb->inode_bitmap_start + sb->inode_bitmap_blocks;
	sb->data_start = sb->inode_table_start + sb->inode_table_blocks;
	sb->errors = ORDFS_ERRORS_CONTINUE;
	memcpy(sb->uuid, "recovery-test-id", ORDFS_UUID_LEN);
	sb->csum_seed = ordfs_crc32c(~0u, sb->uuid, ORDFS_UUID_LEN);
	ck_assert_int_eq(ordfs_super_check_geometry(sb, NULL), 0);
}

/* Generation gen of block `block`: names both in its first 12 bytes. */
static void make_block(const struct fix *f, uint64_t block, uint32_t gen, uint8_t *out)
{
	for (uint32_t i = 0; i < f->bs; i++)
		out[i] = (uint8_t)(block * 131u + gen * 29u + i * (2u * gen + 1u));
	le_put64(out, block);
	le_put32(out + 8, gen);
}

static uint8_t *image(const struct fix *f)
{
	return blockdev_mem_bytes(f->mem);
}

static uint8_t *image_block(const struct fix *f, uint64_t block)
{
	return image(f) + block * f->bs;
}

static bool home_is(const struct fix *f, uint64_t block, uint32_t gen)
{
	uint8_t *want = malloc(f->bs);
	ck_assert_ptr_nonnull(want);
	make_block(f, block, gen, want);
	bool same = memcmp(want, image_block(f, block), f->bs) == 0;
	free(want);
	return same;
}

static void write_jsuper(struct fix *f, uint32_t start, uint64_t seq, int32_t jerr)
{
	struct ordfs_journal_super js = { f->bs, f->total, f->first, start, seq, jerr, { 0 } };
	memcpy(js.uuid, f->sb.uuid, ORDFS_UUID_LEN);
	ordfs_journal_super_encode(&js, f->sb.csum_seed, image_block(f, f->sb.journal_start));
}

static void read_jsuper(const struct fix *f, struct ordfs_journal_super *js)
{
	ck_assert_int_eq(ordfs_journal_super_decode(image_block(f, f->sb.journal_start), f->bs,
						    f->sb.csum_seed, js, NULL),
			 0);
}

static void fix_setup(struct fix *f, uint32_t bs, uint32_t jblocks)
{
	memset(f, 0, sizeof(*f));
	f->bs = bs;
	make_super(&f->sb, bs, jblocks);
	f->first = 1;
	f->total = jblocks;
	f->home = f->sb.data_start;
	ck_assert_int_eq(blockdev_mem_create((uint64_t)NBLOCKS * bs, &f->mem), 0);
	for (uint64_t b = 0; b < NBLOCKS; b++) {
		if (b >= f->sb.journal_start && b < f->sb.journal_start + jblocks)
			continue;
		make_block(f, b, 0, image_block(f, b));
	}
	write_jsuper(f, 0, 1, 0);
}

static void fix_free(struct fix *f)
{
	blockdev_destroy(f->mem);
	f->mem = NULL;
}

static uint32_t log_advance(const struct fix *f, uint32_t pos, uint32_t n)
{
	return f->first + (pos - f->first + n) % (f->total - f->first);
}

static uint8_t *log_block(const struct fix *f, uint32_t pos)
{
	return image_block(f, f->sb.journal_start + pos);
}

static uint8_t *snapshot(const struct fix *f)
{
	uint8_t *copy = malloc(f->mem->size);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, image(f), f->mem->size);
	return copy;
}

/* ---- running recovery ----------------------------------------------------- */

struct run {
	int err;
	struct journal_recovery_info info;
	struct blockdev_counts counts;
};

static struct run recover(struct fix *f, unsigned flags)
{
	struct run r;
	struct blockdev *rec;
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(blockdev_record_create(f->mem, false, &rec), 0);
	r.err = journal_recover(rec, &f->sb, flags, &r.info);
	blockdev_record_counts(rec, &r.counts);
	blockdev_destroy(rec);
	return r;
}

static struct journal_recovery_info recover_ok(struct fix *f)
{
	struct run r = recover(f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert_int_eq(journal_needs_recovery(f->mem, &f->sb), 0);
	return r.info;
}

static void assert_info_eq(const struct journal_recovery_info *a,
			   const struct journal_recovery_info *b)
{
	ck_assert_int_eq(a->needed, b->needed);
	ck_assert_uint_eq(a->first_seq, b->first_seq);
	ck_assert_uint_eq(a->next_seq, b->next_seq);
	ck_assert_uint_eq(a->transactions, b->transactions);
	ck_assert_uint_eq(a->blocks_replayed, b->blocks_replayed);
	ck_assert_uint_eq(a->blocks_revoked, b->blocks_revoked);
	ck_assert_uint_eq(a->revoke_records, b->revoke_records);
	ck_assert_uint_eq(a->bad_tag_csums, b->bad_tag_csums);
}

/* ---- the log encoder (from format.h) -------------------------------------- */

struct txb {
	struct fix *f;
	uint64_t seq;
	uint8_t *blocks;            /* MAX_TX_LOG blocks, in log order */
	bool is_copy[MAX_TX_LOG];   /* data copy (no header, no tail csum) */
	uint32_t n;
	uint32_t desc;              /* index of the descriptor taking tags */
};

static uint8_t *tx_block(struct txb *t, uint32_t i)
{
	return t->blocks + (size_t)i * t->f->bs;
}

static void tx_begin(struct txb *t, struct fix *f, uint64_t seq)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->seq = seq;
	t->desc = NO_DESC;
	t->blocks = calloc(MAX_TX_LOG, f->bs);
	ck_assert_ptr_nonnull(t->blocks);
}

static uint8_t *tx_append(struct txb *t, bool is_copy)
{
	ck_assert_uint_lt(t->n, MAX_TX_LOG);
	t->is_copy[t->n] = is_copy;
	return tx_block(t, t->n++);
}

static uint32_t tag_csum(const struct fix *f, uint64_t seq, const uint8_t *data)
{
	uint8_t le_seq[8];
	le_put64(le_seq, seq);
	return ordfs_crc32c(ordfs_crc32c(f->sb.csum_seed, le_seq, 8), data, f->bs);
}

static uint8_t *tag_of(uint8_t *desc, uint32_t i)
{
	return desc + ORDFS_JB_HDR + 8 + (size_t)i * ORDFS_JTAG_SIZE;
}

/* Logs a copy of `data` for home block `target`. */
static void tx_copy(struct txb *t, uint64_t target, const uint8_t *data)
{
	uint32_t bs = t->f->bs;
	if (t->desc == NO_DESC || le_get32(tx_block(t, t->desc) + 16) == ordfs_jtags_per_descriptor(bs)) {
		t->desc = t->n;
		ordfs_jblock_hdr_init(tx_append(t, false), ORDFS_JB_DESCRIPTOR, t->seq);
	}
	uint8_t *desc = tx_block(t, t->desc);
	uint32_t idx = le_get32(desc + 16);
	uint8_t *copy = tx_append(t, true);
	uint32_t flags = 0;

	memcpy(copy, data, bs);
	if (le_get32(data) == ORDFS_JOURNAL_MAGIC) {
		memset(copy, 0, 4);
		flags |= ORDFS_JTAG_ESCAPED;
	}
	uint8_t *tag = tag_of(desc, idx);
	le_put64(tag, target);
	le_put32(tag + 8, flags);
	le_put32(tag + 12, tag_csum(t->f, t->seq, data));
	le_put32(desc + 16, idx + 1);
}

static void tx_copy_gen(struct txb *t, uint64_t target, uint32_t gen)
{
	uint8_t *data = malloc(t->f->bs);
	ck_assert_ptr_nonnull(data);
	make_block(t->f, target, gen, data);
	tx_copy(t, target, data);
	free(data);
}

static void tx_revoke(struct txb *t, const uint64_t *blocks, uint32_t n)
{
	uint32_t per = ordfs_jrevokes_per_block(t->f->bs);
	t->desc = NO_DESC;
	for (uint32_t i = 0; i < n; i += per) {
		uint32_t k = n - i < per ? n - i : per;
		uint8_t *rb = tx_append(t, false);
		ordfs_jblock_hdr_init(rb, ORDFS_JB_REVOKE, t->seq);
		le_put32(rb + 16, k);
		for (uint32_t j = 0; j < k; j++)
			le_put64(rb + ORDFS_JB_HDR + 8 + (size_t)j * 8, blocks[i + j]);
	}
}

static void tx_revoke_one(struct txb *t, uint64_t block)
{
	tx_revoke(t, &block, 1);
}

static void tx_seal_block(struct txb *t, uint32_t i)
{
	ordfs_jblock_csum_set(tx_block(t, i), t->f->bs, t->f->sb.csum_seed);
}

/* Tail checksums of all non-copy blocks, then the commit block's count and
 * chained CRC over the raw log bytes before it. */
static void tx_seal(struct txb *t)
{
	uint32_t bs = t->f->bs;
	uint32_t crc = t->f->sb.csum_seed;
	uint32_t last = t->n - 1; /* the commit block */

	for (uint32_t i = 0; i < last; i++) {
		if (!t->is_copy[i])
			tx_seal_block(t, i);
		crc = ordfs_crc32c(crc, tx_block(t, i), bs);
	}
	uint8_t *commit = tx_block(t, last);
	le_put32(commit + 16, last);
	le_put32(commit + 20, crc);
	tx_seal_block(t, last);
}

static void tx_commit(struct txb *t)
{
	t->desc = NO_DESC;
	uint8_t *commit = tx_append(t, false);
	ordfs_jblock_hdr_init(commit, ORDFS_JB_COMMIT, t->seq);
	le_put64(commit + 24, 1700000000u);
	le_put32(commit + 32, 123);
	tx_seal(t);
}

/* Writes the first `count` blocks at log position pos (wrapping); returns the
 * position after them. */
static uint32_t tx_write_n(struct txb *t, uint32_t pos, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		memcpy(log_block(t->f, pos), tx_block(t, i), t->f->bs);
		pos = log_advance(t->f, pos, 1);
	}
	return pos;
}

static uint32_t tx_write(struct txb *t, uint32_t pos)
{
	pos = tx_write_n(t, pos, t->n);
	free(t->blocks);
	t->blocks = NULL;
	return pos;
}

static void tx_discard(struct txb *t)
{
	free(t->blocks);
	t->blocks = NULL;
}

/* One committed transaction writing generation gen of n blocks from home+off. */
static uint32_t put_tx(struct fix *f, uint32_t pos, uint64_t seq, uint64_t off, uint32_t n,
		       uint32_t gen)
{
	struct txb t;
	tx_begin(&t, f, seq);
	for (uint32_t i = 0; i < n; i++)
		tx_copy_gen(&t, f->home + off + i, gen);
	tx_commit(&t);
	return tx_write(&t, pos);
}

/* ---- empty log, one transaction, several ---------------------------------- */

START_TEST(test_empty_log_is_noop)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	put_tx(&f, f.first, 1, 0, 3, 1); /* in the log, but start == 0 */
	write_jsuper(&f, 0, 1, 0);
	uint8_t *before = snapshot(&f);

	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 0);
	struct run r = recover(&f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert(!r.info.needed);
	ck_assert_uint_eq(r.info.first_seq, 1);
	ck_assert_uint_eq(r.info.next_seq, 1);
	ck_assert_uint_eq(r.info.transactions, 0);
	ck_assert_uint_eq(r.info.blocks_replayed, 0);
	ck_assert_uint_eq(r.counts.writes, 0);
	ck_assert_uint_eq(r.counts.flushes, 0);
	ck_assert_mem_eq(before, image(&f), f.mem->size);
	free(before);
	fix_free(&f);
}
END_TEST

START_TEST(test_one_transaction_replayed)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	struct txb t;
	tx_begin(&t, &f, 7);
	for (uint32_t i = 0; i < 3; i++)
		tx_copy_gen(&t, f.home + i, 1);
	tx_copy_gen(&t, 0, 1); /* block 0 (the superblock) is journaled too */
	tx_commit(&t);
	tx_write(&t, f.first);
	write_jsuper(&f, f.first, 7, -EIO);
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 1);

	struct run r = recover(&f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert(r.info.needed);
	ck_assert_uint_eq(r.info.first_seq, 7);
	ck_assert_uint_eq(r.info.next_seq, 8);
	ck_assert_uint_eq(r.info.transactions, 1);
	ck_assert_uint_eq(r.info.blocks_replayed, 4);
	ck_assert_uint_eq(r.info.blocks_revoked, 0);
	ck_assert_uint_eq(r.info.revoke_records, 0);
	ck_assert_uint_eq(r.info.bad_tag_csums, 0);
	ck_assert_uint_eq(r.counts.writes, 5); /* 4 home blocks + journal sb */
	ck_assert_uint_eq(r.counts.flushes, 2);
	for (uint32_t i = 0; i < 3; i++)
		ck_assert(home_is(&f, f.home + i, 1));
	ck_assert(home_is(&f, 0, 1));
	ck_assert(home_is(&f, f.home + 3, 0));

	/* [J7] empty log, next sequence; the rest of the journal sb kept. */
	struct ordfs_journal_super js;
	read_jsuper(&f, &js);
	ck_assert_uint_eq(js.start, 0);
	ck_assert_uint_eq(js.sequence, 8);
	ck_assert_uint_eq(js.total_blocks, 64);
	ck_assert_uint_eq(js.first, 1);
	ck_assert_int_eq(js.err, -EIO);
	ck_assert_mem_eq(js.uuid, f.sb.uuid, ORDFS_UUID_LEN);
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 0);

	/* Running it again changes nothing. */
	uint8_t *after = snapshot(&f);
	r = recover(&f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert(!r.info.needed);
	ck_assert_uint_eq(r.info.next_seq, 8);
	ck_assert_uint_eq(r.counts.writes, 0);
	ck_assert_mem_eq(after, image(&f), f.mem->size);
	free(after);
	fix_free(&f);
}
END_TEST

START_TEST(test_newest_copy_wins)
{
	struct fix f;
	uint32_t bs = block_sizes[_i];
	fix_setup(&f, bs, 320);
	uint32_t many = ordfs_jtags_per_descriptor(bs) + 8; /* needs two descriptors */
	uint32_t pos = f.first;

	pos = put_tx(&f, pos, 10, 0, many, 1);
	struct txb t;
	tx_begin(&t, &f, 11);
	tx_copy_gen(&t, f.home + 0, 2);
	tx_copy_gen(&t, f.home + 5, 2);
	tx_commit(&t);
	pos = tx_write(&t, pos);
	tx_begin(&t, &f, 12); /* a transaction of only a commit block */
	tx_commit(&t);
	pos = tx_write(&t, pos);
	tx_begin(&t, &f, 13);
	tx_copy_gen(&t, f.home + 5, 3);
	tx_copy_gen(&t, f.home + many - 1, 3);
	tx_commit(&t);
	tx_write(&t, pos);
	write_jsuper(&f, f.first, 10, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 4);
	ck_assert_uint_eq(info.first_seq, 10);
	ck_assert_uint_eq(info.next_seq, 14);
	ck_assert_uint_eq(info.blocks_replayed, many + 4);
	ck_assert(home_is(&f, f.home + 0, 2));
	ck_assert(home_is(&f, f.home + 5, 3));
	ck_assert(home_is(&f, f.home + many - 1, 3));
	for (uint32_t i = 1; i < many - 1; i++)
		if (i != 5)
			ck_assert(home_is(&f, f.home + i, 1));
	ck_assert(home_is(&f, f.home + many, 0));
	struct ordfs_journal_super js;
	read_jsuper(&f, &js);
	ck_assert_uint_eq(js.sequence, 14);
	fix_free(&f);
}
END_TEST

/* ---- torn and damaged transactions ---------------------------------------- */

enum commit_damage {
	CD_FLIP_BYTE,
	CD_ZEROED,
	CD_WRONG_SEQUENCE,
	CD_WRONG_COUNT,
	CD_WRONG_CRC,
	CD_NEVER_WRITTEN,
	CD_COUNT
};

static void damage_commit(struct txb *t, enum commit_damage how)
{
	uint32_t last = t->n - 1;
	uint8_t *commit = tx_block(t, last);
	switch (how) {
	case CD_FLIP_BYTE:
		commit[40] ^= 0x01;
		break;
	case CD_ZEROED:
		memset(commit, 0, t->f->bs);
		break;
	case CD_WRONG_SEQUENCE:
		le_put64(commit + 8, t->seq + 1);
		tx_seal_block(t, last);
		break;
	case CD_WRONG_COUNT:
		le_put32(commit + 16, last - 1);
		tx_seal_block(t, last);
		break;
	case CD_WRONG_CRC:
		le_put32(commit + 20, le_get32(commit + 20) ^ 0x80000000u);
		tx_seal_block(t, last);
		break;
	default:
		break;
	}
}

START_TEST(test_torn_commit_not_replayed)
{
	for (unsigned bsi = 0; bsi < 2; bsi++) {
		struct fix f;
		fix_setup(&f, block_sizes[bsi], 64);
		uint32_t pos = put_tx(&f, f.first, 20, 0, 1, 1);
		struct txb t;
		tx_begin(&t, &f, 21);
		tx_copy_gen(&t, f.home + 0, 2);
		tx_copy_gen(&t, f.home + 1, 2);
		tx_revoke_one(&t, f.home + 0);
		tx_commit(&t);
		damage_commit(&t, (enum commit_damage)_i);
		uint32_t n = _i == CD_NEVER_WRITTEN ? t.n - 1 : t.n;
		pos = tx_write_n(&t, pos, n);
		tx_discard(&t);
		if (_i == CD_NEVER_WRITTEN) {
			memset(log_block(&f, pos), 0xe7, f.bs);
			pos = log_advance(&f, pos, 1);
		}
		put_tx(&f, pos, 22, 2, 1, 3); /* valid, but after the end */
		write_jsuper(&f, f.first, 20, 0);

		struct journal_recovery_info info = recover_ok(&f);
		ck_assert_uint_eq(info.transactions, 1);
		ck_assert_uint_eq(info.next_seq, 21);
		ck_assert_uint_eq(info.blocks_replayed, 1);
		ck_assert_uint_eq(info.revoke_records, 0);
		ck_assert(home_is(&f, f.home + 0, 1)); /* the torn revoke is ignored */
		ck_assert(home_is(&f, f.home + 1, 0));
		ck_assert(home_is(&f, f.home + 2, 0));
		struct ordfs_journal_super js;
		read_jsuper(&f, &js);
		ck_assert_uint_eq(js.sequence, 21);
		fix_free(&f);
	}
}
END_TEST

enum log_damage {
	LD_COPY_BYTE,        /* torn copy: chained CRC fails */
	LD_DESC_BYTE,        /* descriptor tail checksum fails */
	LD_TAG_IN_JOURNAL,   /* resealed: target inside the journal */
	LD_TAG_PAST_END,     /* resealed: target >= block_count */
	LD_TAG_FLAGS,        /* resealed: unknown tag flag */
	LD_DESC_HUGE_COUNT,  /* resealed: more tags than fit */
	LD_DESC_NO_TAGS,     /* resealed: count 0, so copies follow "nothing" */
	LD_DESC_WRONG_SEQ,   /* resealed: descriptor of another sequence */
	LD_REVOKE_HUGE,      /* resealed: revoke count 0xffffffff */
	LD_REVOKE_OVER,      /* resealed: revoke count one past the limit */
	LD_COUNT
};

static void damage_log(struct txb *t, uint32_t desc, uint32_t rev, enum log_damage how)
{
	uint8_t *d = tx_block(t, desc);
	uint32_t bs = t->f->bs;
	switch (how) {
	case LD_COPY_BYTE:
		tx_block(t, desc + 2)[100] ^= 0x40;
		return;
	case LD_DESC_BYTE:
		d[bs / 2] ^= 0x02;
		return;
	case LD_TAG_IN_JOURNAL:
		le_put64(tag_of(d, 1), t->f->sb.journal_start + 5);
		break;
	case LD_TAG_PAST_END:
		le_put64(tag_of(d, 1), t->f->sb.block_count);
		break;
	case LD_TAG_FLAGS:
		le_put32(tag_of(d, 1) + 8, 0x2);
		break;
	case LD_DESC_HUGE_COUNT:
		le_put32(d + 16, ordfs_jtags_per_descriptor(bs) + 1);
		break;
	case LD_DESC_NO_TAGS:
		le_put32(d + 16, 0);
		break;
	case LD_DESC_WRONG_SEQ:
		le_put64(d + 8, t->seq + 1);
		break;
	case LD_REVOKE_HUGE:
		le_put32(tx_block(t, rev) + 16, 0xffffffffu);
		break;
	case LD_REVOKE_OVER:
		le_put32(tx_block(t, rev) + 16, ordfs_jrevokes_per_block(bs) + 1);
		break;
	default:
		return;
	}
	tx_seal(t); /* every checksum right: only the content is wrong */
}

START_TEST(test_damaged_transaction_not_replayed)
{
	for (unsigned bsi = 0; bsi < 2; bsi++) {
		struct fix f;
		fix_setup(&f, block_sizes[bsi], 64);
		uint32_t pos = put_tx(&f, f.first, 30, 0, 1, 1);
		struct txb t;
		tx_begin(&t, &f, 31);
		for (uint32_t i = 0; i < 3; i++)
			tx_copy_gen(&t, f.home + i, 2);
		tx_revoke_one(&t, f.home + 10); /* block 4 */
		tx_commit(&t);
		damage_log(&t, 0, 4, (enum log_damage)_i);
		pos = tx_write(&t, pos);
		put_tx(&f, pos, 32, 3, 1, 3);
		write_jsuper(&f, f.first, 30, 0);

		struct journal_recovery_info info = recover_ok(&f);
		ck_assert_uint_eq(info.transactions, 1);
		ck_assert_uint_eq(info.next_seq, 31);
		ck_assert_uint_eq(info.blocks_replayed, 1);
		ck_assert(home_is(&f, f.home + 0, 1));
		ck_assert(home_is(&f, f.home + 1, 0));
		ck_assert(home_is(&f, f.home + 2, 0));
		ck_assert(home_is(&f, f.home + 3, 0));
		/* Nothing was written into the journal area but its superblock. */
		ck_assert(home_is(&f, f.sb.journal_start + f.sb.journal_blocks, 0));
		fix_free(&f);
	}
}
END_TEST

/* A copy that fails its tag checksum inside an otherwise valid transaction
 * is skipped; the rest is replayed and the older copy stays. */
START_TEST(test_bad_tag_csum_skips_only_that_block)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	uint32_t pos = put_tx(&f, f.first, 40, 0, 3, 1);
	struct txb t;
	tx_begin(&t, &f, 41);
	for (uint32_t i = 0; i < 3; i++)
		tx_copy_gen(&t, f.home + i, 2);
	tx_commit(&t);
	tx_block(&t, 2)[f.bs - 1] ^= 0xff; /* copy of home+1 */
	tx_seal(&t);
	tx_write(&t, pos);
	write_jsuper(&f, f.first, 40, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 2);
	ck_assert_uint_eq(info.bad_tag_csums, 1);
	ck_assert_uint_eq(info.blocks_replayed, 5);
	ck_assert(home_is(&f, f.home + 0, 2));
	ck_assert(home_is(&f, f.home + 1, 1));
	ck_assert(home_is(&f, f.home + 2, 2));
	fix_free(&f);
}
END_TEST

/* ---- revokes --------------------------------------------------------------- */

START_TEST(test_revoke_cancels_earlier_copies)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	uint32_t pos = put_tx(&f, f.first, 50, 0, 2, 1);
	struct txb t;
	tx_begin(&t, &f, 51);
	tx_revoke_one(&t, f.home + 0);
	tx_copy_gen(&t, f.home + 2, 2);
	tx_commit(&t);
	tx_write(&t, pos);
	write_jsuper(&f, f.first, 50, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 2);
	ck_assert_uint_eq(info.revoke_records, 1);
	ck_assert_uint_eq(info.blocks_revoked, 1);
	ck_assert_uint_eq(info.blocks_replayed, 2);
	ck_assert(home_is(&f, f.home + 0, 0));
	ck_assert(home_is(&f, f.home + 1, 1));
	ck_assert(home_is(&f, f.home + 2, 2));
	fix_free(&f);
}
END_TEST

START_TEST(test_revoke_does_not_cancel_later_copy)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	uint32_t pos = put_tx(&f, f.first, 60, 0, 1, 1);
	struct txb t;
	tx_begin(&t, &f, 61);
	tx_revoke_one(&t, f.home + 0);
	tx_commit(&t);
	pos = tx_write(&t, pos);
	pos = put_tx(&f, pos, 62, 0, 1, 3);
	write_jsuper(&f, f.first, 60, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 3);
	ck_assert_uint_eq(info.blocks_revoked, 1);
	ck_assert_uint_eq(info.blocks_replayed, 1);
	ck_assert(home_is(&f, f.home + 0, 3));
	fix_free(&f);
}
END_TEST

/* A revoke cancels a copy of its own transaction too (sequence >=), in
 * either block order. */
START_TEST(test_revoke_same_transaction)
{
	for (int revoke_first = 0; revoke_first < 2; revoke_first++) {
		struct fix f;
		fix_setup(&f, block_sizes[_i], 64);
		struct txb t;
		tx_begin(&t, &f, 70);
		if (revoke_first)
			tx_revoke_one(&t, f.home + 0);
		tx_copy_gen(&t, f.home + 0, 1);
		tx_copy_gen(&t, f.home + 1, 1);
		if (!revoke_first)
			tx_revoke_one(&t, f.home + 0);
		tx_commit(&t);
		tx_write(&t, f.first);
		write_jsuper(&f, f.first, 70, 0);

		struct journal_recovery_info info = recover_ok(&f);
		ck_assert_uint_eq(info.transactions, 1);
		ck_assert_uint_eq(info.blocks_revoked, 1);
		ck_assert(home_is(&f, f.home + 0, 0));
		ck_assert(home_is(&f, f.home + 1, 1));
		fix_free(&f);
	}
}
END_TEST

/* Many revoke records over several revoke blocks (the table grows), the
 * largest legal count accepted, records for blocks outside the filesystem
 * harmless. */
START_TEST(test_many_revokes)
{
	struct fix f;
	uint32_t bs = block_sizes[_i];
	fix_setup(&f, bs, 128);
	uint32_t per = ordfs_jrevokes_per_block(bs);
	uint32_t nrec = per + 77;
	uint64_t *recs = calloc(nrec, sizeof(*recs));
	ck_assert_ptr_nonnull(recs);
	for (uint32_t i = 0; i < nrec; i++)
		recs[i] = f.home + (i * 7u) % (NBLOCKS - f.home); /* repeats, in range */
	recs[3] = UINT64_MAX;
	recs[4] = NBLOCKS;

	uint32_t pos = put_tx(&f, f.first, 80, 0, 40, 1);
	struct txb t;
	tx_begin(&t, &f, 81);
	tx_revoke(&t, recs, nrec); /* first block holds exactly `per` records */
	tx_commit(&t);
	ck_assert_uint_eq(le_get32(tx_block(&t, 0) + 16), per);
	pos = tx_write(&t, pos);
	pos = put_tx(&f, pos, 82, 1, 1, 2); /* after the revoke: replayed */
	write_jsuper(&f, f.first, 80, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 3);
	ck_assert_uint_eq(info.revoke_records, nrec);
	uint32_t revoked = 0;
	for (uint32_t b = 0; b < 40; b++) {
		bool hit = false;
		for (uint32_t i = 0; i < nrec; i++)
			hit |= recs[i] == f.home + b;
		revoked += hit;
		if (b == 1)
			ck_assert(home_is(&f, f.home + b, 2));
		else
			ck_assert(home_is(&f, f.home + b, hit ? 0 : 1));
	}
	ck_assert_uint_gt(revoked, 1);
	ck_assert_uint_eq(info.blocks_revoked, revoked);
	ck_assert_uint_eq(info.blocks_replayed, 40 - revoked + 1);
	free(recs);
	fix_free(&f);
}
END_TEST

/* ---- escaping, wrapping, stale transactions ------------------------------- */

START_TEST(test_escaped_block_restored)
{
	struct fix f;
	uint32_t bs = block_sizes[_i];
	fix_setup(&f, bs, 64);
	/* The home block's contents look exactly like a valid descriptor of
	 * the same transaction pointing at home+1. */
	uint8_t *data = calloc(1, bs);
	ck_assert_ptr_nonnull(data);
	ordfs_jblock_hdr_init(data, ORDFS_JB_DESCRIPTOR, 90);
	le_put32(data + 16, 1);
	le_put64(tag_of(data, 0), f.home + 1);
	ordfs_jblock_csum_set(data, bs, f.sb.csum_seed);

	struct txb t;
	tx_begin(&t, &f, 90);
	tx_copy(&t, f.home + 0, data);
	tx_commit(&t);
	ck_assert_uint_eq(le_get32(tag_of(tx_block(&t, 0), 0) + 8), ORDFS_JTAG_ESCAPED);
	ck_assert_uint_eq(le_get32(tx_block(&t, 1)), 0);
	tx_write(&t, f.first);
	write_jsuper(&f, f.first, 90, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 1);
	ck_assert_uint_eq(info.blocks_replayed, 1);
	ck_assert_uint_eq(info.bad_tag_csums, 0);
	ck_assert_mem_eq(image_block(&f, f.home + 0), data, bs);
	ck_assert(home_is(&f, f.home + 1, 0));
	free(data);
	fix_free(&f);
}
END_TEST

/* Every way two transactions can straddle the end of the log. */
START_TEST(test_wrap_around_end_of_log)
{
	for (uint32_t back = 1; back <= 9; back++) {
		struct fix f;
		fix_setup(&f, block_sizes[_i], 64);
		uint32_t start = f.total - back;
		uint32_t pos = put_tx(&f, start, 100, 0, 5, 1);
		struct txb t;
		tx_begin(&t, &f, 101);
		tx_copy_gen(&t, f.home + 3, 2);
		tx_revoke_one(&t, f.home + 4);
		tx_copy_gen(&t, f.home + 9, 2);
		tx_commit(&t);
		tx_write(&t, pos);
		write_jsuper(&f, start, 100, 0);

		struct journal_recovery_info info = recover_ok(&f);
		ck_assert_uint_eq(info.transactions, 2);
		ck_assert_uint_eq(info.blocks_replayed, 6);
		ck_assert(home_is(&f, f.home + 0, 1));
		ck_assert(home_is(&f, f.home + 3, 2));
		ck_assert(home_is(&f, f.home + 4, 0));
		ck_assert(home_is(&f, f.home + 9, 2));
		fix_free(&f);
	}
}
END_TEST

/* Leftovers of checkpointed transactions (lower sequences) and a valid
 * transaction that skips a sequence are not replayed. */
START_TEST(test_stale_transactions_after_end)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	uint32_t pos = f.first;
	pos = put_tx(&f, pos, 3, 0, 1, 3);          /* checkpointed long ago */
	uint32_t start = pos;
	pos = put_tx(&f, pos, 4, 1, 2, 4);          /* checkpointed */
	pos = put_tx(&f, pos, 5, 2, 1, 5);          /* checkpointed */
	/* Now the log starts at `start` again with sequence 6. */
	pos = put_tx(&f, start, 6, 3, 1, 6);
	pos = put_tx(&f, pos, 7, 4, 1, 7);
	uint32_t after = pos;
	put_tx(&f, after, 5, 5, 1, 5); /* a stale complete tx of a lower sequence */
	put_tx(&f, log_advance(&f, after, 3), 9, 6, 1, 9); /* skips sequence 8 */
	write_jsuper(&f, start, 6, 0);

	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.first_seq, 6);
	ck_assert_uint_eq(info.next_seq, 8);
	ck_assert_uint_eq(info.transactions, 2);
	ck_assert(home_is(&f, f.home + 0, 0));
	ck_assert(home_is(&f, f.home + 1, 0));
	ck_assert(home_is(&f, f.home + 2, 0));
	ck_assert(home_is(&f, f.home + 3, 6));
	ck_assert(home_is(&f, f.home + 4, 7));
	ck_assert(home_is(&f, f.home + 5, 0));
	ck_assert(home_is(&f, f.home + 6, 0));
	fix_free(&f);
}
END_TEST

/* A crash before the first commit: the log is in use but holds nothing
 * complete.  The sequence stays. */
START_TEST(test_nothing_valid_keeps_sequence)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	struct txb t;
	tx_begin(&t, &f, 9);
	tx_copy_gen(&t, f.home, 1);
	tx_commit(&t);
	tx_write_n(&t, f.first, t.n - 1);
	tx_discard(&t);
	write_jsuper(&f, f.first, 9, 0);

	struct run r = recover(&f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert(r.info.needed);
	ck_assert_uint_eq(r.info.first_seq, 9);
	ck_assert_uint_eq(r.info.next_seq, 9);
	ck_assert_uint_eq(r.info.transactions, 0);
	ck_assert_uint_eq(r.counts.writes, 1);
	ck_assert_uint_eq(r.counts.flushes, 2);
	ck_assert(home_is(&f, f.home, 0));
	struct ordfs_journal_super js;
	read_jsuper(&f, &js);
	ck_assert_uint_eq(js.start, 0);
	ck_assert_uint_eq(js.sequence, 9);
	fix_free(&f);
}
END_TEST

/* ---- loop guards ------------------------------------------------------------ */

/* A log of nothing but valid revoke blocks of the expected sequence (never
 * a commit), and a log of nothing but commit-only transactions: both end. */
START_TEST(test_endless_log_terminates)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	uint32_t cap = f.total - f.first;
	for (uint32_t p = f.first; p < f.total; p++) {
		uint8_t *b = log_block(&f, p);
		memset(b, 0, f.bs);
		ordfs_jblock_hdr_init(b, ORDFS_JB_REVOKE, 5);
		ordfs_jblock_csum_set(b, f.bs, f.sb.csum_seed);
	}
	write_jsuper(&f, f.first + 17, 5, 0);
	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 0);
	ck_assert_uint_eq(info.next_seq, 5);

	uint32_t pos = f.first + 17;
	for (uint32_t i = 0; i < cap; i++) {
		struct txb t;
		tx_begin(&t, &f, 1000 + i);
		tx_commit(&t);
		pos = tx_write(&t, pos);
	}
	write_jsuper(&f, f.first + 17, 1000, 0);
	info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, cap);
	ck_assert_uint_eq(info.next_seq, 1000 + cap);
	fix_free(&f);
}
END_TEST

/* A transaction filling the whole log is valid; the scan may read every
 * log block once, no more. */
START_TEST(test_transaction_filling_the_log)
{
	struct fix f;
	fix_setup(&f, 1024, 64);
	uint32_t cap = f.total - f.first;       /* 63 */
	uint32_t tags = cap - 2;                /* descriptor + tags + commit */
	ck_assert_uint_le(tags, ordfs_jtags_per_descriptor(f.bs));
	put_tx(&f, f.first + 30, 110, 0, tags, 1);
	write_jsuper(&f, f.first + 30, 110, 0);
	struct journal_recovery_info info = recover_ok(&f);
	ck_assert_uint_eq(info.transactions, 1);
	ck_assert_uint_eq(info.blocks_replayed, tags);
	for (uint32_t i = 0; i < tags; i++)
		ck_assert(home_is(&f, f.home + i, 1));
	fix_free(&f);
}
END_TEST

/* ---- crash during recovery, dry run ------------------------------------- */

static void build_mixed_log(struct fix *f)
{
	uint32_t pos = f->total - 4; /* wraps */
	pos = put_tx(f, pos, 200, 0, 5, 1);
	struct txb t;
	tx_begin(&t, f, 201);
	tx_copy_gen(&t, f->home + 1, 2);
	tx_copy_gen(&t, f->home + 2, 2);
	tx_revoke_one(&t, f->home + 3);
	tx_commit(&t);
	pos = tx_write(&t, pos);
	tx_begin(&t, f, 202);
	tx_copy_gen(&t, f->home + 3, 3);
	tx_copy_gen(&t, f->home + 4, 3);
	uint8_t *magic = malloc(f->bs);
	ck_assert_ptr_nonnull(magic);
	make_block(f, f->home + 6, 3, magic);
	le_put32(magic, ORDFS_JOURNAL_MAGIC);
	tx_copy(&t, f->home + 6, magic);
	free(magic);
	tx_commit(&t);
	pos = tx_write(&t, pos);
	tx_begin(&t, f, 203); /* torn */
	tx_copy_gen(&t, f->home + 0, 4);
	tx_commit(&t);
	tx_write_n(&t, pos, t.n - 1);
	tx_discard(&t);
	write_jsuper(f, f->total - 4, 200, 0);
}

static struct blockdev *mem_from(const uint8_t *bytes, uint64_t size)
{
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_mem_from(bytes, size, &bd), 0);
	return bd;
}

/* Recovery that fails at its nth write (or flush) and then runs again,
 * possibly failing again at the mth, ends with the reference image. */
START_TEST(test_crash_during_recovery)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	build_mixed_log(&f);
	uint64_t size = f.mem->size;
	uint8_t *before = snapshot(&f);

	struct run ref = recover(&f, 0);
	ck_assert_int_eq(ref.err, 0);
	ck_assert_uint_eq(ref.info.transactions, 3);
	ck_assert_uint_eq(ref.info.blocks_replayed, 9);
	ck_assert_uint_eq(ref.info.blocks_revoked, 1);
	ck_assert_uint_eq(ref.counts.writes, 10);
	uint8_t *want = snapshot(&f);
	ck_assert(home_is(&f, f.home + 3, 3));
	ck_assert(home_is(&f, f.home + 0, 1));
	ck_assert_uint_eq(le_get32(image_block(&f, f.home + 6)), ORDFS_JOURNAL_MAGIC);
	uint64_t nwrites = ref.counts.writes, nflushes = ref.counts.flushes;

	for (uint64_t n = 1; n <= nwrites + nflushes; n += tfs_sweep_stride()) {
		for (uint64_t m = 0; m <= nwrites + nflushes; m++) {
			struct blockdev *mem = mem_from(before, size), *rec;
			struct journal_recovery_info info;
			ck_assert_int_eq(blockdev_record_create(mem, false, &rec), 0);
			uint64_t faults[2] = { n, m };
			for (int k = 0; k < 2; k++) {
				if (faults[k] == 0 || journal_needs_recovery(mem, &f.sb) == 0)
					continue;
				if (faults[k] <= nwrites)
					blockdev_record_fail_write(rec, faults[k], -EIO);
				else
					blockdev_record_fail_flush(rec, faults[k] - nwrites, -EIO);
				ck_assert_int_eq(journal_recover(rec, &f.sb, 0, &info), -EIO);
				blockdev_record_fail_write(rec, 0, 0);
				blockdev_record_fail_flush(rec, 0, 0);
			}
			ck_assert_int_eq(journal_recover(rec, &f.sb, 0, &info), 0);
			ck_assert_mem_eq(blockdev_mem_bytes(mem), want, size);
			blockdev_destroy(rec);
			blockdev_destroy(mem);
		}
	}
	free(before);
	free(want);
	fix_free(&f);
}
END_TEST

START_TEST(test_dry_run_changes_nothing)
{
	struct fix f;
	fix_setup(&f, block_sizes[_i], 64);
	build_mixed_log(&f);
	uint8_t *before = snapshot(&f);

	struct run dry = recover(&f, JOURNAL_RECOVER_DRY_RUN);
	ck_assert_int_eq(dry.err, 0);
	ck_assert_uint_eq(dry.counts.writes, 0);
	ck_assert_uint_eq(dry.counts.flushes, 0);
	ck_assert_mem_eq(before, image(&f), f.mem->size);
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 1);

	struct run real = recover(&f, 0);
	ck_assert_int_eq(real.err, 0);
	assert_info_eq(&dry.info, &real.info);
	ck_assert_uint_eq(dry.info.next_seq, 203);
	free(before);
	fix_free(&f);
}
END_TEST

/* ---- bad journal superblock, bad geometry -------------------------------- */

/* A torn write of the journal superblock: one sector copy garbage, or the
 * copies from two different writes.  Recovery reads the whole copy (copy 0
 * first), replays, and leaves both copies the same. */
START_TEST(test_torn_journal_super_uses_a_whole_copy)
{
	struct fix f;
	fix_setup(&f, 1024, 64);
	struct txb t;
	tx_begin(&t, &f, 7);
	tx_copy_gen(&t, f.home, 1);
	tx_commit(&t);
	tx_write(&t, f.first);
	uint8_t *jsb = image_block(&f, f.sb.journal_start);
	write_jsuper(&f, f.first, 7, 0);
	if (_i == 0) {
		memset(jsb, 0x5a, ORDFS_SB_COPY_SIZE); /* copy 0 garbage */
	} else {
		uint8_t old[ORDFS_SB_SIZE];
		memcpy(old, jsb, sizeof(old));
		write_jsuper(&f, 0, 1, 0);               /* "old": empty log */
		memcpy(jsb, old, ORDFS_SB_COPY_SIZE);    /* copy 0 from the new write */
	}
	ck_assert(!ordfs_super_copies_agree(jsb));
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 1);
	struct run r = recover(&f, 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(r.info.transactions, 1);
	ck_assert(home_is(&f, f.home, 1));
	ck_assert(ordfs_super_copies_agree(jsb));
	struct ordfs_journal_super js;
	read_jsuper(&f, &js);
	ck_assert_uint_eq(js.start, 0);
	ck_assert_uint_eq(js.sequence, 8);
	fix_free(&f);
}
END_TEST

enum jsb_damage { JS_GARBAGE, JS_FLIP, JS_TOTAL, JS_FIRST, JS_START, JS_BSIZE, JS_SEQ0,
		  JS_SEQ_WRAP, JS_COUNT };

START_TEST(test_bad_journal_super_rejected)
{
	struct fix f;
	fix_setup(&f, 1024, 64);
	put_tx(&f, f.first, 1, 0, 2, 1);
	uint8_t *jsb = log_block(&f, 0);
	struct ordfs_journal_super js = { f.bs, f.total, f.first, f.first, 1, 0, { 0 } };
	switch (_i) {
	case JS_GARBAGE:
		for (uint32_t i = 0; i < f.bs; i++)
			jsb[i] = (uint8_t)(i * 37 + 11);
		break;
	case JS_FLIP: /* the same bit in both sector copies */
		write_jsuper(&f, f.first, 1, 0);
		jsb[30] ^= 1;
		jsb[ORDFS_SB_COPY_SIZE + 30] ^= 1;
		break;
	case JS_TOTAL:
		js.total_blocks = f.total + 1; /* decodes, but is not the fs's */
		ordfs_journal_super_encode(&js, f.sb.csum_seed, jsb);
		break;
	case JS_FIRST:
		js.first = 2;
		ordfs_journal_super_encode(&js, f.sb.csum_seed, jsb);
		break;
	case JS_START:
		js.start = f.total;
		ordfs_journal_super_encode(&js, f.sb.csum_seed, jsb);
		break;
	case JS_SEQ0: /* found by the fuzzer: the commit thread spun on tid 0 */
		js.sequence = 0;
		ordfs_journal_super_encode(&js, f.sb.csum_seed, jsb);
		break;
	case JS_SEQ_WRAP:
		js.sequence = ~0ull;
		ordfs_journal_super_encode(&js, f.sb.csum_seed, jsb);
		break;
	case JS_BSIZE:
		write_jsuper(&f, f.first, 1, 0);
		le_put32(jsb + 16, 2048);
		le_put32(jsb + ORDFS_SB_COPY_SIZE + 16, 2048);
		ordfs_journal_super_csum_set(jsb, f.sb.csum_seed);
		break;
	}
	uint8_t *before = snapshot(&f);
	struct run r = recover(&f, 0);
	ck_assert_int_eq(r.err, -EUCLEAN);
	ck_assert_uint_eq(r.counts.writes, 0);
	ck_assert_uint_eq(r.counts.flushes, 0);
	ck_assert_mem_eq(before, image(&f), f.mem->size);
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), -EUCLEAN);
	free(before);
	fix_free(&f);
}
END_TEST

START_TEST(test_bad_fs_geometry_rejected)
{
	struct fix f;
	fix_setup(&f, 1024, 64);
	put_tx(&f, f.first, 1, 0, 1, 1);
	write_jsuper(&f, f.first, 1, 0);
	struct ordfs_super good = f.sb;
	struct journal_recovery_info info;

	f.sb.journal_start = 0;
	ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), -EUCLEAN);
	f.sb = good;
	f.sb.journal_blocks = NBLOCKS; /* runs past the last block */
	ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), -EUCLEAN);
	f.sb = good;
	f.sb.log_block_size = 30;
	ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), -EUCLEAN);
	f.sb = good;
	f.sb.block_count = 1ull << 60;
	ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), -EUCLEAN);
	f.sb = good;
	ck_assert(home_is(&f, f.home, 0));
	ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), 0);
	ck_assert(home_is(&f, f.home, 1));
	fix_free(&f);
}
END_TEST

/* ---- hostile logs --------------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t pick_target(struct fix *f, uint64_t *s)
{
	switch (rnd(s) % 4) {
	case 0:
		return rnd(s); /* anything */
	case 1:
		return f->sb.journal_start + rnd(s) % f->sb.journal_blocks;
	default:
		return f->home + rnd(s) % 8;
	}
}

/* A header-valid block of a random journal type with random counts. */
static void plausible_block(struct fix *f, uint8_t *b, uint64_t seq, uint64_t *s)
{
	static const enum ordfs_journal_block_type types[] = {
		ORDFS_JB_DESCRIPTOR, ORDFS_JB_REVOKE, ORDFS_JB_COMMIT, ORDFS_JB_SUPER
	};
	for (uint32_t i = 0; i < f->bs; i++)
		b[i] = (uint8_t)rnd(s);
	enum ordfs_journal_block_type type = types[rnd(s) % 4];
	ordfs_jblock_hdr_init(b, type, seq + rnd(s) % 3);
	uint32_t count = rnd(s) % 8 == 0 ? (uint32_t)rnd(s) : (uint32_t)(rnd(s) % 5);
	le_put32(b + 16, count);
	if (type == ORDFS_JB_DESCRIPTOR) {
		for (uint32_t i = 0; i < 4; i++) {
			le_put64(tag_of(b, i), pick_target(f, s));
			le_put32(tag_of(b, i) + 8, rnd(s) % 5 == 0 ? (uint32_t)rnd(s) : (uint32_t)(rnd(s) % 2));
		}
	}
	if (type == ORDFS_JB_REVOKE)
		for (uint32_t i = 0; i < 4; i++)
			le_put64(b + ORDFS_JB_HDR + 8 + i * 8, pick_target(f, s));
	ordfs_jblock_csum_set(b, f->bs, f->sb.csum_seed);
}

static bool write_allowed(const struct fix *f, const struct blockdev_event *ev)
{
	uint64_t jsb = f->sb.journal_start * f->bs;
	if (ev->off == jsb && ev->len == f->bs)
		return true;
	if (ev->off % f->bs != 0 || ev->len != f->bs)
		return false;
	uint64_t block = ev->off / f->bs;
	if (block >= f->sb.block_count)
		return false;
	return block < f->sb.journal_start ||
	       block >= f->sb.journal_start + f->sb.journal_blocks;
}

/* Dry run, then the real run through a recording device: same info, only
 * allowed writes, one write per replayed block plus the superblock, and a
 * second run finds an empty log. */
static void recover_hostile(struct fix *f)
{
	struct run dry = recover(f, JOURNAL_RECOVER_DRY_RUN);
	struct blockdev *rec;
	struct journal_recovery_info info;
	ck_assert_int_eq(blockdev_record_create(f->mem, true, &rec), 0);
	int err = journal_recover(rec, &f->sb, 0, &info);
	ck_assert_int_eq(dry.err, 0);
	ck_assert_int_eq(err, 0);
	size_t nev;
	const struct blockdev_event *ev = blockdev_record_events(rec, &nev);
	size_t writes = 0;
	for (size_t i = 0; i < nev; i++) {
		if (ev[i].type != BD_EV_WRITE)
			continue;
		ck_assert(write_allowed(f, &ev[i]));
		writes++;
	}
	blockdev_destroy(rec);
	assert_info_eq(&dry.info, &info);
	ck_assert_uint_eq(writes, info.blocks_replayed + (info.needed ? 1u : 0u));
	ck_assert_uint_le(info.transactions, f->total - f->first);
	ck_assert_int_eq(journal_needs_recovery(f->mem, &f->sb), 0);
}

/* Random bytes and random header-valid blocks all over the log. */
START_TEST(test_hostile_random_log)
{
	for (uint64_t seed = 1; seed <= 300; seed += tfs_sweep_stride()) {
		struct fix f;
		uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)_i;
		fix_setup(&f, block_sizes[_i], 64);
		/* Up to the largest sequence a journal superblock may hold (one
		 * near 2^64 is refused as damage: test_bad_journal_super_rejected). */
		uint64_t seq = rnd(&s) % 4 == 0 ? (1ull << 62) - 1 - rnd(&s) % 3 : 1 + rnd(&s) % 1000;
		for (uint32_t p = f.first; p < f.total; p++) {
			uint8_t *b = log_block(&f, p);
			if (rnd(&s) % 3 == 0) {
				for (uint32_t i = 0; i < f.bs; i++)
					b[i] = (uint8_t)rnd(&s);
			} else {
				plausible_block(&f, b, seq, &s);
			}
		}
		write_jsuper(&f, f.first + (uint32_t)(rnd(&s) % (f.total - f.first)), seq, 0);
		recover_hostile(&f);
		fix_free(&f);
	}
}
END_TEST

/* Valid logs with random bytes changed, sometimes with the tail checksums
 * fixed so the damage reaches the parsers. */
START_TEST(test_hostile_mutated_log)
{
	for (uint64_t seed = 1; seed <= 300; seed += tfs_sweep_stride()) {
		struct fix f;
		uint64_t s = seed * 0xd1b54a32d192ed03ull + (uint64_t)_i;
		fix_setup(&f, block_sizes[_i], 64);
		build_mixed_log(&f);
		uint32_t nmut = 1 + (uint32_t)(rnd(&s) % 6);
		for (uint32_t k = 0; k < nmut; k++) {
			uint32_t p = f.first + (uint32_t)(rnd(&s) % (f.total - f.first));
			uint8_t *b = log_block(&f, p);
			uint32_t off = rnd(&s) % 2 ? (uint32_t)(rnd(&s) % 64) : (uint32_t)(rnd(&s) % f.bs);
			b[off] = (uint8_t)rnd(&s);
			if (rnd(&s) % 2 && le_get32(b) == ORDFS_JOURNAL_MAGIC)
				ordfs_jblock_csum_set(b, f.bs, f.sb.csum_seed);
		}
		recover_hostile(&f);
		fix_free(&f);
	}
}
END_TEST

static Suite *recovery_suite(void)
{
	Suite *s = suite_create("recovery");
	TCase *tc = tcase_create("recovery");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_empty_log_is_noop, 0, 2);
	tcase_add_loop_test(tc, test_one_transaction_replayed, 0, 2);
	tcase_add_loop_test(tc, test_newest_copy_wins, 0, 2);
	tcase_add_loop_test(tc, test_torn_commit_not_replayed, 0, CD_COUNT);
	tcase_add_loop_test(tc, test_damaged_transaction_not_replayed, 0, LD_COUNT);
	tcase_add_loop_test(tc, test_bad_tag_csum_skips_only_that_block, 0, 2);
	tcase_add_loop_test(tc, test_revoke_cancels_earlier_copies, 0, 2);
	tcase_add_loop_test(tc, test_revoke_does_not_cancel_later_copy, 0, 2);
	tcase_add_loop_test(tc, test_revoke_same_transaction, 0, 2);
	tcase_add_loop_test(tc, test_many_revokes, 0, 2);
	tcase_add_loop_test(tc, test_escaped_block_restored, 0, 2);
	tcase_add_loop_test(tc, test_wrap_around_end_of_log, 0, 2);
	tcase_add_loop_test(tc, test_stale_transactions_after_end, 0, 2);
	tcase_add_loop_test(tc, test_nothing_valid_keeps_sequence, 0, 2);
	tcase_add_loop_test(tc, test_endless_log_terminates, 0, 2);
	tcase_add_test(tc, test_transaction_filling_the_log);
	tcase_add_loop_test(tc, test_crash_during_recovery, 0, 2);
	tcase_add_loop_test(tc, test_dry_run_changes_nothing, 0, 2);
	tcase_add_loop_test(tc, test_bad_journal_super_rejected, 0, JS_COUNT);
	tcase_add_loop_test(tc, test_torn_journal_super_uses_a_whole_copy, 0, 2);
	tcase_add_test(tc, test_bad_fs_geometry_rejected);
	tcase_add_loop_test(tc, test_hostile_random_log, 0, 2);
	tcase_add_loop_test(tc, test_hostile_mutated_log, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(recovery_suite());
}
