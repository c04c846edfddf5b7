/*
 * test_journal.c - the journal runtime: commit, checkpoint, revoke, group
 * commit, a latched flush, abort, and recovery of what a crash leaves.
 *
 * Fixture: a bare journal over a small in-memory image (no filesystem):
 * block size 1024, journal at blocks [1, 1 + JBLOCKS), "home" blocks from
 * HOME on.  A crash is modelled by copying the image bytes at a point where
 * the journal is quiescent, then running recovery on the copy.
 */
#include "suite_main.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "blockdev/blockdev.h"
#include "cache/bcache.h"
#include "journal/journal.h"

#define BS 1024u
#define NBLOCKS 2048u
#define HOME 200u

struct jfix {
	struct ordfs_super sb;
	struct blockdev *mem, *rec;
	struct bcache *cache;
	struct journal *j;
	uint64_t released[64];
	unsigned nreleased;
};

static void on_release(void *ctx, uint64_t start, uint32_t len)
{
	struct jfix *f = ctx;
	if (f->nreleased < 64)
		f->released[f->nreleased++] = start + ((uint64_t)len << 40);
}

static void fix_make_sb(struct ordfs_super *sb, uint32_t jblocks)
{
	memset(sb, 0, sizeof(*sb));
	sb->log_block_size = 10;
	sb->block_count = NBLOCKS;
	sb->journal_start = 1;
	sb->journal_blocks = jblocks;
	memcpy(sb->uuid, "0123456789abcdef", 16);
	sb->csum_seed = ordfs_crc32c(~0u, sb->uuid, 16);
}

static void fix_write_empty_journal(struct blockdev *bd, const struct ordfs_super *sb)
{
	uint8_t blk[BS];
	struct ordfs_journal_super js = { BS, sb->journal_blocks, 1, 0, 1, 0, { 0 } };
	memcpy(js.uuid, sb->uuid, 16);
	ordfs_journal_super_encode(&js, sb->csum_seed, blk);
	ck_assert_int_eq(blockdev_write(bd, blk, BS, sb->journal_start * BS), 0);
}

static void fix_open(struct jfix *f, bool barrier)
{
	struct journal_config cfg = {
		.data_mode = JOURNAL_DATA_ORDERED,
		.barrier = barrier,
		.release_freed = on_release,
		.release_ctx = f,
	};
	ck_assert_int_eq(bcache_create(f->rec, BS, NBLOCKS, 64, &f->cache), 0);
	ck_assert_int_eq(journal_open(f->rec, f->cache, &f->sb, &cfg, &f->j), 0);
}

static void fix_setup(struct jfix *f, uint32_t jblocks)
{
	memset(f, 0, sizeof(*f));
	fix_make_sb(&f->sb, jblocks);
	ck_assert_int_eq(blockdev_mem_create((uint64_t)NBLOCKS * BS, &f->mem), 0);
	ck_assert_int_eq(blockdev_record_create(f->mem, false, &f->rec), 0);
	fix_write_empty_journal(f->mem, &f->sb);
	fix_open(f, true);
}

static void fix_close(struct jfix *f)
{
	if (f->j)
		ck_assert_int_eq(journal_close(f->j), 0);
	f->j = NULL;
	bcache_destroy(f->cache);
	f->cache = NULL;
}

static void fix_free(struct jfix *f)
{
	blockdev_destroy(f->rec);
	blockdev_destroy(f->mem);
}

/* Fills home block `blk` with a pattern under h. */
static void modify(struct jfix *f, struct handle *h, uint64_t blk, uint8_t val)
{
	struct buf *b;
	ck_assert_int_eq(bcache_read(f->cache, blk, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, 0), 0);
	memset(b->data, val, BS);
	le_put64(b->data, blk);
	bcache_put(f->cache, b);
}

static bool home_is(struct blockdev *mem, uint64_t blk, uint8_t val)
{
	const uint8_t *p = blockdev_mem_bytes(mem) + blk * BS;
	if (le_get64(p) != blk && val != 0)
		return false;
	for (uint32_t i = 8; i < BS; i++)
		if (p[i] != val)
			return false;
	return true;
}

/* Copy of the image as a crash right now would leave it (every write so
 * far durable: the mem device has no cache). */
static struct blockdev *crash_copy(struct jfix *f)
{
	struct blockdev *copy;
	ck_assert_int_eq(blockdev_mem_from(blockdev_mem_bytes(f->mem), f->mem->size, &copy), 0);
	return copy;
}

static void recover(struct blockdev *bd, const struct ordfs_super *sb,
		    struct journal_recovery_info *info)
{
	ck_assert_int_eq(journal_recover(bd, sb, 0, info), 0);
	ck_assert_int_eq(journal_needs_recovery(bd, sb), 0);
}

START_TEST(test_commit_then_checkpoint_writes_home)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 4, &h), 0);
	for (uint64_t b = HOME; b < HOME + 3; b++)
		modify(&f, h, b, 0xA0);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.commits, 1);
	ck_assert_uint_eq(st.blocks_logged, 3);
	/* Committed but not checkpointed: home untouched [J4 order]. */
	ck_assert(home_is(f.mem, HOME, 0));

	ck_assert_int_eq(journal_flush_all(f.j), 0);
	for (uint64_t b = HOME; b < HOME + 3; b++)
		ck_assert(home_is(f.mem, b, 0xA0));
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.log_used, 0);
	fix_close(&f);
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 0);
	fix_free(&f);
}
END_TEST

/* A handle that dirties more blocks than it asked credits for is refused
 * at the block that overruns (logged, counted), not at commit; what it
 * did within its credits commits as usual. */
START_TEST(test_credit_overrun_fails_at_once)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME, 0xB1);
	modify(&f, h, HOME + 1, 0xB2);
	modify(&f, h, HOME, 0xB3); /* the same block again costs nothing */
	struct buf *b;
	ck_assert_int_eq(bcache_read(f.cache, HOME + 2, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, 0), -EIO);
	bcache_put(f.cache, b);
	ck_assert_int_eq(journal_stop(h), 0);
	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.credit_overruns, 1);
	ck_assert_int_eq(journal_force_commit(f.j), 0);
	ck_assert_int_eq(journal_flush_all(f.j), 0);
	ck_assert(home_is(f.mem, HOME, 0xB3));
	ck_assert(home_is(f.mem, HOME + 1, 0xB2));
	ck_assert(home_is(f.mem, HOME + 2, 0));
	fix_close(&f);
	fix_free(&f);
}
END_TEST

START_TEST(test_committed_survives_crash_uncommitted_does_not)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME, 0x11);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME + 1, 0x22); /* never committed */
	ck_assert_int_eq(journal_stop(h), 0);

	struct blockdev *img = crash_copy(&f);
	ck_assert_int_eq(journal_needs_recovery(img, &f.sb), 1);
	struct journal_recovery_info info;
	recover(img, &f.sb, &info);
	ck_assert(info.needed);
	ck_assert_uint_eq(info.transactions, 1);
	ck_assert(home_is(img, HOME, 0x11));
	ck_assert(home_is(img, HOME + 1, 0));
	blockdev_destroy(img);
	fix_close(&f);
	fix_free(&f);
}
END_TEST

/* A block logged once as metadata with a common header, then reused as a
 * block without one (a long symlink's target, file data under
 * data=journal): its bytes 8..11 must not get a header checksum stamped
 * into them, in the log copy or at home.  Found by the crash harness
 * (data=journal long run: four bytes of a file's first block overwritten). */
START_TEST(test_header_checksum_not_stamped_on_reuse)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	struct buf *b;
	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	ck_assert_int_eq(bcache_read(f.cache, HOME, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, JWA_CSUM_HDR), 0);
	ordfs_block_hdr_init(b->data, ORDFS_BT_EXTENT, 12, HOME);
	bcache_put(f.cache, b);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME, 0x5c); /* raw bytes now, no header */
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	struct blockdev *img = crash_copy(&f);
	struct journal_recovery_info info;
	recover(img, &f.sb, &info);
	ck_assert(home_is(img, HOME, 0x5c));
	blockdev_destroy(img);
	ck_assert_int_eq(journal_flush_all(f.j), 0);
	ck_assert(home_is(f.mem, HOME, 0x5c));
	fix_close(&f);
	fix_free(&f);
}
END_TEST

START_TEST(test_escaped_block_round_trip)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	struct buf *b;
	ck_assert_int_eq(journal_start(f.j, 1, &h), 0);
	ck_assert_int_eq(bcache_read(f.cache, HOME, &b), 0);
	ck_assert_int_eq(journal_get_write_access(h, b, 0), 0);
	memset(b->data, 0x5c, BS);
	le_put32(b->data, ORDFS_JOURNAL_MAGIC); /* looks like a journal block */
	bcache_put(f.cache, b);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	struct blockdev *img = crash_copy(&f);
	struct journal_recovery_info info;
	recover(img, &f.sb, &info);
	const uint8_t *p = blockdev_mem_bytes(img) + HOME * BS;
	ck_assert_uint_eq(le_get32(p), ORDFS_JOURNAL_MAGIC);
	ck_assert_uint_eq(p[BS - 1], 0x5c);
	blockdev_destroy(img);
	fix_close(&f);
	fix_free(&f);
}
END_TEST

/* A block journaled, then freed (revoked), then overwritten in place as
 * data: replay of the old copy would destroy the data [J6]. */
START_TEST(test_revoke_protects_reused_block)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME, 0x33);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);

	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	ck_assert_int_eq(journal_forget(h, HOME), 0);
	ck_assert_int_eq(journal_add_freed(h, HOME, 1), 0);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);
	ck_assert_uint_eq(f.nreleased, 1); /* released only after its commit [J5] */

	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.revokes_logged, 1);

	/* Reused as file data, written in place. */
	uint8_t data[BS];
	memset(data, 0x77, BS);
	le_put64(data, HOME);
	ck_assert_int_eq(blockdev_write(f.rec, data, BS, (uint64_t)HOME * BS), 0);

	struct blockdev *img = crash_copy(&f);
	struct journal_recovery_info info;
	recover(img, &f.sb, &info);
	ck_assert(home_is(img, HOME, 0x77));
	blockdev_destroy(img);

	/* And the checkpoint must not write the old copy home either [J5]. */
	ck_assert_int_eq(journal_flush_all(f.j), 0);
	ck_assert(home_is(f.mem, HOME, 0x77));
	fix_close(&f);
	fix_free(&f);
}
END_TEST

START_TEST(test_failed_commit_aborts)
{
	struct jfix f;
	fix_setup(&f, 64);
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 2, &h), 0);
	modify(&f, h, HOME, 0x44);
	journal_ordered_data(h); /* so the commit's first flush is F1 */
	ck_assert_int_eq(journal_stop(h), 0);
	blockdev_record_fail_flush(f.rec, 1, -EIO);
	ck_assert_int_eq(journal_force_commit(f.j), -EIO);
	ck_assert_int_eq(journal_start(f.j, 1, &h), -EROFS);
	ck_assert_int_ne(journal_aborted(f.j), 0);
	/* The transaction whose flush failed must not be recoverable as
	 * committed: recovery sees no valid commit record for it, or, if the
	 * record reached the disk, it was never acknowledged.  Here the flush
	 * before the commit record failed, so no commit record was written. */
	struct blockdev *img = crash_copy(&f);
	struct journal_recovery_info info;
	recover(img, &f.sb, &info);
	ck_assert_uint_eq(info.transactions, 0);
	ck_assert(home_is(img, HOME, 0));
	blockdev_destroy(img);
	ck_assert_int_ne(journal_close(f.j), 0);
	f.j = NULL;
	fix_close(&f);
	fix_free(&f);
}
END_TEST

/* ---- concurrency: a latched flush, group commit ------------------------- */

struct committer {
	struct jfix *f;
	uint64_t blk;
	int result;
	uint64_t tid;
};

static void *commit_one_block(void *arg)
{
	struct committer *c = arg;
	struct handle *h;
	c->result = journal_start(c->f->j, 1, &h);
	if (c->result)
		return NULL;
	modify(c->f, h, c->blk, (uint8_t)c->blk);
	c->tid = journal_handle_tid(h);
	c->result = journal_stop(h);
	if (!c->result)
		c->result = journal_commit_wait(c->f->j, c->tid);
	return NULL;
}

START_TEST(test_latched_flush_does_not_block_handles)
{
	struct jfix f;
	fix_setup(&f, 256);
	blockdev_record_latch_arm(f.rec);

	struct committer first = { &f, HOME, -1, 0 };
	pthread_t t;
	pthread_create(&t, NULL, commit_one_block, &first);
	/* The commit is now stuck in its first flush. */
	ck_assert_int_eq(blockdev_record_latch_wait_blocked(f.rec, 1, 5000), 0);

	/* Meanwhile other work proceeds: handles start, modify, stop. */
	for (uint64_t b = HOME + 1; b < HOME + 20; b++) {
		struct handle *h;
		ck_assert_int_eq(journal_start(f.j, 1, &h), 0);
		modify(&f, h, b, 0x42);
		ck_assert_int_eq(journal_stop(h), 0);
	}
	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.commits, 0); /* the first commit is still waiting */
	ck_assert_uint_eq(st.running_tid, first.tid + 1);

	blockdev_record_latch_release(f.rec);
	pthread_join(t, NULL);
	ck_assert_int_eq(first.result, 0);
	fix_close(&f);
	fix_free(&f);
}
END_TEST

START_TEST(test_group_commit_shares_one_commit)
{
	enum { N = 8 };
	struct jfix f;
	fix_setup(&f, 256);
	blockdev_record_latch_arm(f.rec);

	struct committer first = { &f, HOME, -1, 0 };
	pthread_t t0, t[N];
	pthread_create(&t0, NULL, commit_one_block, &first);
	ck_assert_int_eq(blockdev_record_latch_wait_blocked(f.rec, 1, 5000), 0);

	struct committer c[N];
	for (int i = 0; i < N; i++) {
		c[i] = (struct committer){ &f, HOME + 1 + (uint64_t)i, -1, 0 };
		pthread_create(&t[i], NULL, commit_one_block, &c[i]);
	}
	/* Wait until all N have asked for their commit. */
	for (int tries = 0; tries < 5000; tries++) {
		struct journal_stats st;
		journal_get_stats(f.j, &st);
		if (st.commit_requests >= N + 1)
			break;
		usleep(1000);
	}
	blockdev_record_latch_release(f.rec);
	pthread_join(t0, NULL);
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(c[i].result, 0);
		ck_assert_uint_eq(c[i].tid, first.tid + 1);
	}
	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_eq(st.commits, 2); /* the first, and one for all N */
	fix_close(&f);
	fix_free(&f);
}
END_TEST

/* ---- a long sequence on a minimum-size journal -------------------------- */

/* Model: committed[] holds what each home block must contain after a crash
 * at a quiescent point (all acknowledged commits durable). */
START_TEST(test_min_journal_wraps_checkpoints_and_revokes)
{
	enum { SPAN = 40, ROUNDS = 400 };
	struct jfix f;
	fix_setup(&f, ORDFS_MIN_JOURNAL_BLOCKS);
	uint8_t committed[SPAN] = { 0 };
	bool freed[SPAN] = { false };
	unsigned seed = 12345;

	for (int round = 0; round < ROUNDS; round++) {
		struct handle *h;
		uint8_t pending[SPAN];
		memcpy(pending, committed, sizeof(pending));
		ck_assert_int_eq(journal_start(f.j, 8, &h), 0);
		int nmod = 1 + (int)(rand_r(&seed) % 6);
		for (int k = 0; k < nmod; k++) {
			uint32_t i = rand_r(&seed) % SPAN;
			if (!freed[i] && rand_r(&seed) % 8 == 0) {
				/* free it: revoke; its home is then written as data */
				ck_assert_int_eq(journal_forget(h, HOME + i), 0);
				freed[i] = true;
				pending[i] = 0xEE;
			} else if (!freed[i]) {
				uint8_t v = (uint8_t)(1 + rand_r(&seed) % 200);
				modify(&f, h, HOME + i, v);
				pending[i] = v;
			}
		}
		ck_assert_int_eq(journal_stop(h), 0);
		ck_assert_int_eq(journal_force_commit(f.j), 0);
		/* Freed blocks are rewritten in place as "data" after the free
		 * committed, then may be reused as metadata later. */
		for (uint32_t i = 0; i < SPAN; i++) {
			if (freed[i] && pending[i] == 0xEE) {
				uint8_t data[BS];
				memset(data, 0xEE, BS);
				le_put64(data, HOME + i);
				ck_assert_int_eq(blockdev_write(f.rec, data, BS, (HOME + i) * BS), 0);
				if (rand_r(&seed) % 2)
					freed[i] = false; /* reusable as metadata again */
				else
					pending[i] = 0xEF; /* stays data */
			}
		}
		for (uint32_t i = 0; i < SPAN; i++)
			committed[i] = pending[i] == 0xEF ? 0xEE : pending[i];

		if (round % 37 == 0) {
			struct blockdev *img = crash_copy(&f);
			struct journal_recovery_info info;
			recover(img, &f.sb, &info);
			for (uint32_t i = 0; i < SPAN; i++)
				ck_assert_msg(home_is(img, HOME + i, committed[i]),
					      "round %d block %u", round, i);
			blockdev_destroy(img);
		}
	}
	struct journal_stats st;
	journal_get_stats(f.j, &st);
	ck_assert_uint_ge(st.checkpoints, 10); /* the log wrapped many times */
	ck_assert_uint_gt(st.revokes_logged, 10);
	fix_close(&f);
	for (uint32_t i = 0; i < SPAN; i++)
		ck_assert(home_is(f.mem, HOME + i, committed[i]));
	fix_free(&f);
}
END_TEST

/* Opened read-only (a read-only mount that a remount may make
 * read-write): nothing reaches the device, at the open or the close, and
 * handles are refused until journal_set_writable; after it the journal
 * works and closes empty as usual. */
START_TEST(test_open_readonly_writes_nothing_until_writable)
{
	struct jfix f;
	memset(&f, 0, sizeof(f));
	fix_make_sb(&f.sb, 64);
	ck_assert_int_eq(blockdev_mem_create((uint64_t)NBLOCKS * BS, &f.mem), 0);
	ck_assert_int_eq(blockdev_record_create(f.mem, false, &f.rec), 0);
	fix_write_empty_journal(f.mem, &f.sb);
	struct journal_config cfg = { .data_mode = JOURNAL_DATA_ORDERED, .barrier = true,
				      .start_readonly = true };
	ck_assert_int_eq(bcache_create(f.rec, BS, NBLOCKS, 64, &f.cache), 0);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(journal_open(f.rec, f.cache, &f.sb, &cfg, &f.j), 0);
		ck_assert(journal_is_readonly(f.j));
		struct handle *h;
		ck_assert_int_eq(journal_start(f.j, 1, &h), -EROFS);
		if (round == 1)
			break;
		ck_assert_int_eq(journal_close(f.j), 0);
		f.j = NULL;
		struct blockdev_counts c;
		blockdev_record_counts(f.rec, &c);
		ck_assert_uint_eq(c.writes, 0);
		ck_assert_uint_eq(c.flushes, 0);
	}
	ck_assert_int_eq(journal_set_writable(f.j), 0);
	ck_assert(!journal_is_readonly(f.j));
	struct handle *h;
	ck_assert_int_eq(journal_start(f.j, 1, &h), 0);
	modify(&f, h, HOME, 0x5A);
	ck_assert_int_eq(journal_stop(h), 0);
	ck_assert_int_eq(journal_force_commit(f.j), 0);
	/* Committed and not yet home: a crash now replays it. */
	struct blockdev *copy = crash_copy(&f);
	struct journal_recovery_info info;
	recover(copy, &f.sb, &info);
	ck_assert(home_is(copy, HOME, 0x5A));
	blockdev_destroy(copy);
	fix_close(&f);
	ck_assert(home_is(f.mem, HOME, 0x5A));
	ck_assert_int_eq(journal_needs_recovery(f.mem, &f.sb), 0);
	fix_free(&f);
}
END_TEST

/* ---- a failed commit under retry_failed_commits (flush_error=report) ---- */

static void fix_open_retry(struct jfix *f)
{
	struct journal_config cfg = {
		.data_mode = JOURNAL_DATA_ORDERED,
		.barrier = true,
		.retry_failed_commits = true,
		.release_freed = on_release,
		.release_ctx = f,
	};
	ck_assert_int_eq(bcache_create(f->rec, BS, NBLOCKS, 64, &f->cache), 0);
	ck_assert_int_eq(journal_open(f->rec, f->cache, &f->sb, &cfg, &f->j), 0);
}

struct starter {
	struct jfix *f;
	int rc;
};

static void *start_one(void *arg)
{
	struct starter *s = arg;
	struct handle *h;
	s->rc = journal_start(s->f->j, 1, &h);
	if (s->rc == 0)
		journal_stop(h);
	return NULL;
}

static void *force_commit(void *arg)
{
	struct starter *s = arg;
	s->rc = journal_force_commit(s->f->j);
	return NULL;
}

/* A handle that only waited for the running transaction to be unlocked
 * (the log had room) must not get -EIO when that commit fails. */
START_TEST(test_start_after_failed_commit_without_waiting_for_room)
{
	struct jfix f;
	memset(&f, 0, sizeof(f));
	fix_make_sb(&f.sb, 256);
	ck_assert_int_eq(blockdev_mem_create((uint64_t)NBLOCKS * BS, &f.mem), 0);
	ck_assert_int_eq(blockdev_record_create(f.mem, false, &f.rec), 0);
	fix_write_empty_journal(f.mem, &f.sb);
	fix_open_retry(&f);

	struct handle *h1;
	ck_assert_int_eq(journal_start(f.j, 2, &h1), 0);
	modify(&f, h1, HOME, 0x44);
	struct starter c = { &f, 1 }, s2 = { &f, 1 };
	pthread_t tc, t2;
	pthread_create(&tc, NULL, force_commit, &c);
	usleep(50000); /* the commit has locked T and waits for h1 */
	pthread_create(&t2, NULL, start_one, &s2);
	usleep(50000); /* s2 waits for T to unlock */
	blockdev_record_fail_write(f.rec, 1, -EIO);
	ck_assert_int_eq(journal_stop(h1), 0);
	pthread_join(t2, NULL);
	pthread_join(tc, NULL);
	ck_assert_int_eq(c.rc, -EIO);
	ck_assert_msg(s2.rc == 0, "journal_start returned %d though the log had room", s2.rc);
	blockdev_record_heal(f.rec);
	ck_assert_int_eq(journal_force_commit(f.j), 0); /* the retry commits */
	fix_close(&f);
	fix_free(&f);
}
END_TEST

static Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_commit_then_checkpoint_writes_home);
	tcase_add_test(tc, test_credit_overrun_fails_at_once);
	tcase_add_test(tc, test_committed_survives_crash_uncommitted_does_not);
	tcase_add_test(tc, test_escaped_block_round_trip);
	tcase_add_test(tc, test_header_checksum_not_stamped_on_reuse);
	tcase_add_test(tc, test_revoke_protects_reused_block);
	tcase_add_test(tc, test_failed_commit_aborts);
	tcase_add_test(tc, test_open_readonly_writes_nothing_until_writable);
	tcase_add_loop_test(tc, test_start_after_failed_commit_without_waiting_for_room, 0, 5);
	tcase_add_test(tc, test_latched_flush_does_not_block_handles);
	tcase_add_test(tc, test_group_commit_shares_one_commit);
	tcase_add_test(tc, test_min_journal_wraps_checkpoints_and_revokes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(journal_suite());
}
