/*
 * test_journal_seq.c - journal sequence numbers stay below the value the
 * reader refuses (format.h: ORDFS_JSEQ_LIMIT, ORDFS_JSEQ_RENEW), and the
 * journal superblock's errno field is read safely whatever it holds.
 *
 * Fixture: a bare journal over an in-memory image (no filesystem), as in
 * test_journal.c: block size 1024, journal at blocks [1, 1 + JBLOCKS),
 * home blocks from HOME on.  A crash is a copy of the image bytes.
 *
 * What is checked:
 *  - a log found empty at ORDFS_JSEQ_RENEW or past it starts again at 1
 *    when opened for writing (at once, or at journal_set_writable after a
 *    read-only open), and a transaction the old run left in the log can
 *    never be replayed in the new one (the log is zeroed first): the
 *    crash right after the open replays nothing;
 *  - just below ORDFS_JSEQ_RENEW the sequence goes on as it was;
 *  - recovery reads an errno field outside [-4095, 0] as -EUCLEAN.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

#define BS 1024u
#define NBLOCKS 1024u
#define JBLOCKS 64u
#define HOME 200u

struct sfix {
	struct ordfs_super sb;
	struct blockdev *mem;
	struct bcache *cache;
	struct journal *j;
};

static void write_jsuper(struct sfix *f, uint32_t start, uint64_t seq, int32_t jerr)
{
	uint8_t blk[BS];
	struct ordfs_journal_super js = { BS, JBLOCKS, 1, start, seq, jerr, { 0 } };
	memcpy(js.uuid, f->sb.uuid, 16);
	ordfs_journal_super_encode(&js, f->sb.csum_seed, blk);
	ck_assert_int_eq(blockdev_write(f->mem, blk, BS, f->sb.journal_start * BS), 0);
}

static void read_jsuper(struct blockdev *bd, const struct ordfs_super *sb,
			struct ordfs_journal_super *js)
{
	uint8_t blk[BS];
	ck_assert_int_eq(blockdev_read(bd, blk, BS, sb->journal_start * BS), 0);
	ck_assert_int_eq(ordfs_journal_super_decode(blk, BS, sb->csum_seed, js, NULL), 0);
}

static void setup(struct sfix *f)
{
	memset(f, 0, sizeof(*f));
	f->sb.log_block_size = 10;
	f->sb.block_count = NBLOCKS;
	f->sb.journal_start = 1;
	f->sb.journal_blocks = JBLOCKS;
	memcpy(f->sb.uuid, "0123456789abcdef", 16);
	f->sb.csum_seed = ordfs_crc32c(~0u, f->sb.uuid, 16);
	ck_assert_int_eq(blockdev_mem_create((uint64_t)NBLOCKS * BS, &f->mem), 0);
	write_jsuper(f, 0, 1, 0);
}

static void open_journal(struct sfix *f, bool readonly)
{
	struct journal_config cfg = { .data_mode = JOURNAL_DATA_ORDERED, .barrier = true,
				      .start_readonly = readonly };
	ck_assert_int_eq(bcache_create(f->mem, BS, NBLOCKS, 64, &f->cache), 0);
	ck_assert_int_eq(journal_open(f->mem, f->cache, &f->sb, &cfg, &f->j), 0);
}

static void close_journal(struct sfix *f)
{
	ck_assert_int_eq(journal_close(f->j), 0);
	f->j = NULL;
	bcache_destroy(f->cache);
	f->cache = NULL;
}

/* One committed transaction filling home block blk with val. */
static void commit_block(struct sfix *f, uint64_t blk, uint8_t val)
{
	struct handle *h;
	struct buf *b;
	ck_assert_int_eq(journal_start(f->j, 1, &h), 0);
	ck_assert_int_eq(bcache_read(f->cache, blk, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, 0), 0);
	memset(b->data, val, BS);
	bcache_put(f->cache, b);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f->j), 0);
}

static uint8_t home_byte(struct blockdev *bd, uint64_t blk)
{
	return blockdev_mem_bytes(bd)[blk * BS + 100];
}

static uint64_t running_tid(struct sfix *f)
{
	struct journal_stats st;
	journal_get_stats(f->j, &st);
	return st.running_tid;
}

/* An old run leaves transaction 1 (HOME = 0x11) in the log, checkpointed
 * long ago; home moved on (0x33); the run reached ORDFS_JSEQ_RENEW.  The
 * next open for writing starts at 1 (_i: 0 read-write at once, 1 read-only
 * then journal_set_writable), and a crash right after it replays nothing:
 * the old transaction 1 is gone from the log, not taken for the new one. */
START_TEST(test_renewal_starts_at_one_and_forgets_the_old_log)
{
	struct sfix f;
	setup(&f);
	open_journal(&f, false);
	commit_block(&f, HOME, 0x11);
	close_journal(&f); /* home written, the log keeps the old blocks */
	ck_assert_uint_eq(home_byte(f.mem, HOME), 0x11);
	uint8_t newer[BS];
	memset(newer, 0x33, BS);
	ck_assert_int_eq(blockdev_write(f.mem, newer, BS, HOME * BS), 0);
	write_jsuper(&f, 0, ORDFS_JSEQ_RENEW + 7, 0);

	bool readonly = _i == 1;
	open_journal(&f, readonly);
	ck_assert_uint_eq(running_tid(&f), 1);
	struct ordfs_journal_super js;
	read_jsuper(f.mem, &f.sb, &js);
	if (readonly) {
		/* Nothing written yet: still the old, empty log. */
		ck_assert_uint_eq(js.start, 0);
		ck_assert_uint_eq(js.sequence, ORDFS_JSEQ_RENEW + 7);
		ck_assert_int_eq(journal_set_writable(f.j), 0);
		read_jsuper(f.mem, &f.sb, &js);
	}
	ck_assert_uint_eq(js.start, 1);
	ck_assert_uint_eq(js.sequence, 1);

	/* A crash now: recovery scans from log block 1 for sequence 1. */
	struct blockdev *crash;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(f.mem), f.mem->size, &crash), 0);
	struct journal_recovery_info info;
	ck_assert_int_eq(journal_recover(crash, &f.sb, 0, &info), 0);
	ck_assert_uint_eq(info.transactions, 0);
	ck_assert_uint_eq(info.blocks_replayed, 0);
	ck_assert_uint_eq(home_byte(crash, HOME), 0x33);
	blockdev_destroy(crash);

	/* The new run commits and closes as any other. */
	commit_block(&f, HOME + 1, 0x44);
	close_journal(&f);
	read_jsuper(f.mem, &f.sb, &js);
	ck_assert_uint_eq(js.start, 0);
	ck_assert_uint_eq(js.sequence, 2);
	ck_assert_uint_eq(home_byte(f.mem, HOME + 1), 0x44);
	ck_assert_uint_eq(home_byte(f.mem, HOME), 0x33);
	blockdev_destroy(f.mem);
}
END_TEST

/* Below ORDFS_JSEQ_RENEW the sequence goes on: nothing is renewed. */
START_TEST(test_below_renewal_sequence_goes_on)
{
	struct sfix f;
	setup(&f);
	write_jsuper(&f, 0, ORDFS_JSEQ_RENEW - 1, 0);
	open_journal(&f, false);
	ck_assert_uint_eq(running_tid(&f), ORDFS_JSEQ_RENEW - 1);
	commit_block(&f, HOME, 0x55);
	close_journal(&f);
	struct ordfs_journal_super js;
	read_jsuper(f.mem, &f.sb, &js);
	ck_assert_uint_eq(js.sequence, ORDFS_JSEQ_RENEW);
	/* ... and the next open renews. */
	open_journal(&f, false);
	ck_assert_uint_eq(running_tid(&f), 1);
	close_journal(&f);
	blockdev_destroy(f.mem);
}
END_TEST

/* The errno field as recovery hands it on (mount.c negates it). */
START_TEST(test_errno_field_out_of_range_reads_euclean)
{
	static const struct {
		int32_t field, want;
	} cases[] = {
		{ 0, 0 },          { -EIO, -EIO },        { -4095, -4095 },
		{ INT32_MIN, -EUCLEAN }, { -4096, -EUCLEAN }, { 5, -EUCLEAN },
		{ INT32_MAX, -EUCLEAN },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sfix f;
		setup(&f);
		write_jsuper(&f, 0, 9, cases[i].field);
		struct journal_recovery_info info;
		ck_assert_int_eq(journal_recover(f.mem, &f.sb, 0, &info), 0);
		ck_assert_msg(info.journal_err == cases[i].want, "errno field %d read as %d, want %d",
			      cases[i].field, info.journal_err, cases[i].want);
		blockdev_destroy(f.mem);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("journal_seq");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_renewal_starts_at_one_and_forgets_the_old_log, 0, 2);
	tcase_add_test(tc, test_below_renewal_sequence_goes_on);
	tcase_add_test(tc, test_errno_field_out_of_range_reads_euclean);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
