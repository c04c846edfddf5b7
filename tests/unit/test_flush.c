/*
 * test_flush.c - flush semantics on an in-memory image behind the fault
 * device: the flush guard, the barrier sequence of every commit in each
 * data mode, fdatasync and fsyncdir, errseq per open file description, and
 * for each flush_error= policy a sweep that fails every write and every
 * flush point of an fsync-heavy workload in turn.
 *
 * The fault device drops every write since its last good flush when a
 * flush fails, and each sweep case ends with a power cut (the same drop),
 * so "acknowledged by fsync" is checked against what a real disk would
 * still hold, not against the daemon's memory.
 */
#include "suite_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "base/log.h"
#include "writeback/writeback.h"
#include "blockdev/guard.h"

#define BS 4096u
#define IMG (16ull << 20)

static const struct ordfs_cred root_cred = { 0, 0 };

/* ---- a log sink that counts ------------------------------------------- */

static int log_lines, ignore_lines;
static char last_log[512];

static void count_sink(int prio, const char *msg)
{
	(void)prio;
	__atomic_add_fetch(&log_lines, 1, __ATOMIC_RELAXED);
	if (strstr(msg, "flush_error=ignore"))
		__atomic_add_fetch(&ignore_lines, 1, __ATOMIC_RELAXED);
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void log_capture(void)
{
	log_lines = ignore_lines = 0;
	last_log[0] = 0;
	ordfs_log_set_sink(count_sink);
}

/* ---- the flush guard --------------------------------------------------- */

struct gfix {
	struct blockdev *mem, *rec, *guard;
};

static void gfix_setup(struct gfix *f, enum flush_error_policy policy, bool retain)
{
	ck_assert_int_eq(blockdev_mem_create(64 * BS, &f->mem), 0);
	ck_assert_int_eq(blockdev_record_create(f->mem, false, &f->rec), 0);
	blockdev_record_drop_unflushed(f->rec, true);
	struct flush_guard_config gc = { .policy = policy, .retain = retain, .block_size = BS };
	ck_assert_int_eq(flush_guard_create(f->rec, &gc, &f->guard), 0);
}

static void gfix_free(struct gfix *f)
{
	blockdev_destroy(f->guard);
	blockdev_destroy(f->rec);
	blockdev_destroy(f->mem);
	ordfs_log_set_sink(NULL);
}

static uint8_t mem_byte(struct gfix *f, uint64_t block)
{
	return blockdev_mem_bytes(f->mem)[block * BS];
}

START_TEST(test_fault_device_drops_unflushed)
{
	struct gfix f;
	gfix_setup(&f, FLUSH_ERROR_REPORT, true);
	uint8_t blk[BS];
	memset(blk, 1, BS);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 3 * BS), 0);
	ck_assert_int_eq(blockdev_flush(f.rec), 0);
	memset(blk, 2, BS);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 3 * BS), 0);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 4 * BS), 0);
	blockdev_record_fail_flush(f.rec, 1, -EIO);
	ck_assert_int_eq(blockdev_flush(f.rec), -EIO);
	ck_assert_int_eq(mem_byte(&f, 3), 1); /* back to the flushed bytes */
	ck_assert_int_eq(mem_byte(&f, 4), 0);

	/* A persistent fault breaks the device until healed. */
	struct blockdev_fault broken = { .nth = 1, .err = -EIO, .persistent = true };
	blockdev_record_fault(f.rec, BD_EV_WRITE, &broken);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 5 * BS), -EIO);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 6 * BS), -EIO);
	ck_assert_int_eq(blockdev_flush(f.rec), -EIO);
	ck_assert_int_eq(mem_byte(&f, 5), 0);
	blockdev_record_heal(f.rec);
	ck_assert_int_eq(blockdev_write(f.rec, blk, BS, 5 * BS), 0);
	ck_assert_int_eq(blockdev_flush(f.rec), 0);
	ck_assert_int_eq(mem_byte(&f, 5), 2);
	gfix_free(&f);
}
END_TEST

START_TEST(test_guard_rewrites_after_failed_flush)
{
	struct gfix f;
	gfix_setup(&f, FLUSH_ERROR_REPORT, true);
	uint8_t blk[BS];
	memset(blk, 7, BS);
	ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 10 * BS), 0);
	blockdev_record_fail_flush(f.rec, 1, -EIO);
	ck_assert_int_eq(blockdev_flush(f.guard), -EIO);
	ck_assert_int_eq(mem_byte(&f, 10), 0); /* the disk lost it */

	struct flush_guard_stats st;
	flush_guard_get_stats(f.guard, &st);
	ck_assert_uint_eq(st.retained_blocks, 1);
	ck_assert_int_eq(blockdev_flush(f.guard), 0); /* rewritten, then flushed */
	ck_assert_int_eq(mem_byte(&f, 10), 7);
	flush_guard_get_stats(f.guard, &st);
	ck_assert_uint_eq(st.reissued_blocks, 1);
	ck_assert_uint_eq(st.retained_blocks, 0);
	ck_assert_uint_eq(st.flush_errors, 1);

	/* A power cut now loses nothing: the flush covered it. */
	blockdev_record_power_cut(f.rec);
	ck_assert_int_eq(mem_byte(&f, 10), 7);

	/* A failed write drops its copy: the caller owns the retry. */
	memset(blk, 8, BS);
	ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 11 * BS), 0);
	blockdev_record_fail_write(f.rec, 1, -ENOSPC);
	ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 11 * BS), -ENOSPC);
	flush_guard_get_stats(f.guard, &st);
	ck_assert_uint_eq(st.retained_blocks, 0);
	ck_assert_uint_eq(st.write_errors, 1);
	gfix_free(&f);
}
END_TEST

START_TEST(test_guard_skips_flush_with_nothing_written)
{
	struct gfix f;
	gfix_setup(&f, FLUSH_ERROR_REPORT, true);
	struct blockdev_counts c;
	uint8_t blk[BS] = { 1 };
	ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 2 * BS), 0);
	ck_assert_int_eq(blockdev_flush(f.guard), 0);
	ck_assert_int_eq(blockdev_flush(f.guard), 0);
	blockdev_record_counts(f.rec, &c);
	ck_assert_uint_eq(c.flushes, 1);
	ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 2 * BS), 0);
	ck_assert_int_eq(blockdev_flush(f.guard), 0);
	blockdev_record_counts(f.rec, &c);
	ck_assert_uint_eq(c.flushes, 2);
	gfix_free(&f);
}
END_TEST

START_TEST(test_guard_flush_since_skips_covered_writes)
{
	/* Both with and without retained copies (report / ignore). */
	for (int retain = 0; retain < 2; retain++) {
		struct gfix f;
		gfix_setup(&f, retain ? FLUSH_ERROR_REPORT : FLUSH_ERROR_IGNORE, retain);
		struct blockdev_counts c;
		uint8_t blk[BS] = { 1 };
		ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 2 * BS), 0);
		uint64_t mine = flush_guard_mark(f.guard);
		/* Someone else's flush (a commit's F2) begins after my write. */
		ck_assert_int_eq(blockdev_flush(f.guard), 0);
		/* Another writer writes after that flush began. */
		ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 3 * BS), 0);
		uint64_t theirs = flush_guard_mark(f.guard);
		ck_assert_uint_gt(theirs, mine);
		ck_assert_int_eq(flush_guard_flush_since(f.guard, mine), 0);
		blockdev_record_counts(f.rec, &c);
		ck_assert_uint_eq(c.flushes, 1); /* mine was covered: skipped */
		ck_assert_int_eq(flush_guard_flush_since(f.guard, theirs), 0);
		blockdev_record_counts(f.rec, &c);
		ck_assert_uint_eq(c.flushes, 2); /* theirs was not: flushed */
		ck_assert_int_eq(flush_guard_flush_since(f.guard, theirs), 0);
		blockdev_record_counts(f.rec, &c);
		ck_assert_uint_eq(c.flushes, 2);
		gfix_free(&f);
	}
}
END_TEST

START_TEST(test_guard_ignore_logs_once)
{
	struct gfix f;
	gfix_setup(&f, FLUSH_ERROR_IGNORE, false);
	log_capture();
	uint8_t blk[BS] = { 3 };
	struct blockdev_fault broken = { .nth = 1, .err = -EIO, .persistent = true };
	blockdev_record_fault(f.rec, BD_EV_WRITE, &broken);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 2 * BS), 0);
		ck_assert_int_eq(blockdev_flush(f.guard), 0);
	}
	ck_assert_int_eq(log_lines, 1); /* one line, writes and flushes alike */
	struct flush_guard_stats st;
	flush_guard_get_stats(f.guard, &st);
	ck_assert(st.cannot_flush);
	ck_assert_uint_ge(st.write_errors, 5);
	gfix_free(&f);
}
END_TEST

START_TEST(test_guard_unsupported_flush_warns_once)
{
	/* Under every policy, a store that cannot flush at all is a warning. */
	for (int p = FLUSH_ERROR_REPORT; p <= FLUSH_ERROR_ABORT; p++) {
		struct gfix f;
		gfix_setup(&f, (enum flush_error_policy)p, p == FLUSH_ERROR_REPORT);
		log_capture();
		struct blockdev_fault nosup = { .nth = 1, .err = -EOPNOTSUPP };
		blockdev_record_fault(f.rec, BD_EV_FLUSH, &nosup);
		uint8_t blk[BS] = { 4 };
		for (int i = 0; i < 3; i++) {
			ck_assert_int_eq(blockdev_write(f.guard, blk, BS, 2 * BS), 0);
			ck_assert_int_eq(blockdev_flush(f.guard), 0);
		}
		ck_assert_int_eq(log_lines, 1);
		ck_assert_ptr_nonnull(strstr(last_log, "cannot be flushed"));
		gfix_free(&f);
	}
}
END_TEST

/* ---- barrier sequence -------------------------------------------------- */

struct layout {
	uint64_t jstart, jblocks;
};

static bool in_log(const struct layout *l, uint64_t block)
{
	return block > l->jstart && block < l->jstart + l->jblocks;
}

static bool is_jblock(const uint8_t *b, uint32_t type)
{
	return le_get32(b) == ORDFS_JOURNAL_MAGIC && le_get32(b + 4) == type;
}

/* Counters the sequence check fills for the closing figures. */
struct seq_counts {
	unsigned commits, f1, checkpoints, flushes;
	unsigned in_one_write; /* commit blocks written with their log blocks */
};

/* Asserts the commit protocol's flush points on a single-threaded event
 * log: in every mode, a flush (F1) between the first write of any new
 * data block and the next commit record; F2 right after every commit
 * record; F3 before and F4 right after every journal superblock write;
 * no home write of a logged block before the commit record of the
 * transaction that logged it has been flushed.  A commit with no new data
 * to order has no F1 (the commit block's CRC covers its log blocks). */
static void check_flush_sequence(const struct blockdev_event *ev, size_t n,
				 const struct layout *l, struct seq_counts *out)
{
	uint8_t *written = calloc(IMG / BS, 1); /* data blocks written before */
	bool new_data_unflushed = false;
	ck_assert_ptr_nonnull(written);
	/* For each block: the event index where its latest logged copy's
	 * commit record became durable (SIZE_MAX = logged, not yet durable). */
	size_t nblocks = IMG / BS;
	size_t *durable_at = malloc(nblocks * sizeof(*durable_at));
	uint64_t *pending = malloc(nblocks * sizeof(*pending));
	size_t npending = 0;
	ck_assert_ptr_nonnull(durable_at);
	ck_assert_ptr_nonnull(pending);
	for (size_t i = 0; i < nblocks; i++)
		durable_at[i] = 0;
	memset(out, 0, sizeof(*out));

	for (size_t i = 0; i < n; i++) {
		if (ev[i].type == BD_EV_FLUSH) {
			out->flushes++;
			new_data_unflushed = false;
			continue;
		}
		uint64_t first = ev[i].off / BS, count = ev[i].len / BS;
		if (first == l->jstart) {
			/* F3 before, F4 after (the mount's first one follows the
			 * superblock's flush). */
			ck_assert_msg(i > 0 && ev[i - 1].type == BD_EV_FLUSH,
				      "journal superblock written at event %zu without F3", i);
			ck_assert_msg(i + 1 < n && ev[i + 1].type == BD_EV_FLUSH,
				      "journal superblock at event %zu not followed by F4", i);
			out->checkpoints++;
			continue;
		}
		for (uint64_t k = 0; k < count; k++) {
			uint64_t blk = first + k;
			const uint8_t *data = ev[i].data + k * BS;
			if (in_log(l, blk) && is_jblock(data, ORDFS_JB_COMMIT)) {
				ck_assert_msg(!new_data_unflushed, /* every mode orders new blocks */
					      "commit record at event %zu: new data not flushed "
					      "before it (F1)", i);
				/* F1 is a flush right before the commit block's own
				 * write; without F1 the block rides at the end of the
				 * write of its transaction's log blocks. */
				out->f1 += k == 0 && i > 0 && ev[i - 1].type == BD_EV_FLUSH;
				out->in_one_write += k > 0;
				ck_assert_msg(i + 1 < n && ev[i + 1].type == BD_EV_FLUSH,
					      "commit record at event %zu not followed by F2", i);
				for (size_t p = 0; p < npending; p++)
					durable_at[pending[p]] = i + 1;
				npending = 0;
				out->commits++;
			} else if (in_log(l, blk) && is_jblock(data, ORDFS_JB_DESCRIPTOR)) {
				uint32_t tags = le_get32(data + 16);
				for (uint32_t t = 0; t < tags; t++) {
					uint64_t home = le_get64(data + ORDFS_JB_HDR + 8 + t * ORDFS_JTAG_SIZE);
					ck_assert_uint_lt(home, nblocks);
					durable_at[home] = SIZE_MAX;
					pending[npending++] = home;
				}
			} else if (!in_log(l, blk) && durable_at[blk] != 0) {
				ck_assert_msg(durable_at[blk] != SIZE_MAX && durable_at[blk] < i,
					      "block %llu written home at event %zu before its commit "
					      "was durable", (unsigned long long)blk, i);
			} else if (!in_log(l, blk) && blk != l->jstart && blk != 0) {
				if (!written[blk])
					new_data_unflushed = true; /* a new block's data */
				written[blk] = 1;
			}
		}
	}
	free(durable_at);
	free(pending);
	free(written);
}

/* 40 files, each written (`blocks` blocks), fsync'd, every fifth
 * unlinked; then the flush sequence of the whole run is checked. */
static void barrier_workload(struct test_fs *t, enum journal_data_mode mode, size_t blocks,
			     unsigned *flushes_per_fsync)
{
	tfs_unmount(t);
	t->opts.data_mode = mode;
	blockdev_destroy(t->rec);
	ck_assert_int_eq(blockdev_record_create(t->mem, true, &t->rec), 0);
	tfs_mount(t);

	struct inode *root = tfs_root(t);
	size_t len = blocks * BS;
	uint8_t *buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	unsigned fsyncs = 0, flushes = 0;
	for (int i = 0; i < 40; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		struct inode *f;
		ck_assert_int_eq(ordfs_create(t->fs, root, name, 0644, &root_cred, &f), 0);
		memset(buf, i, len);
		ck_assert_int_eq(ordfs_write(t->fs, f, buf, len, 0), (ssize_t)len);
		struct blockdev_counts before, after;
		blockdev_record_counts(t->rec, &before);
		ck_assert_int_eq(ordfs_fsync(t->fs, f, i % 2), 0);
		blockdev_record_counts(t->rec, &after);
		flushes += (unsigned)(after.flushes - before.flushes);
		fsyncs++;
		if (i % 5 == 4)
			ck_assert_int_eq(ordfs_unlink(t->fs, root, name), 0);
		inode_put(t->fs, f);
	}
	inode_put(t->fs, root);
	free(buf);
	*flushes_per_fsync = flushes / fsyncs;
	tfs_unmount(t);

	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(ordfs_read_super(t->mem, false, &sb, &why), 0);
	struct layout l = { sb.journal_start, sb.journal_blocks };
	size_t n;
	const struct blockdev_event *ev = blockdev_record_events(t->rec, &n);
	struct seq_counts c;
	check_flush_sequence(ev, n, &l, &c);
	ck_assert_uint_ge(c.commits, 40);
	ck_assert_uint_ge(c.checkpoints, 2); /* the small log wrapped */
	static const char *const names[] = { "ordered", "writeback", "journal" };
	fprintf(stderr, "barrier sequence (%s, %zu KiB per fsync): %u commits (%u with F1), "
		"%u journal superblock writes, %u flushes, %u flushes per fsync\n", names[mode],
		len >> 10, c.commits, c.f1, c.checkpoints, c.flushes, *flushes_per_fsync);
	/* data=ordered and data=writeback write new data in place, to be
	 * ordered by F1, only when an fsync has more than 64 KiB of it; less
	 * is logged.  (data=writeback orders new blocks too: their old bytes
	 * are another file's.) */
	if (mode != JOURNAL_DATA_JOURNAL && len > (64u << 10))
		ck_assert_uint_ge(c.f1, 40); /* every fsync here allocates new data */
	else
		ck_assert_uint_eq(c.f1, 0);  /* nothing to order: F2 alone */
	/* A commit without F1 writes its commit block with its log blocks,
	 * except where the log wraps between them; one with F1 never. */
	ck_assert_uint_le(c.in_one_write, c.commits - c.f1);
	ck_assert_uint_ge(c.in_one_write + c.checkpoints + 1, c.commits - c.f1);
	tfs_mount(t);
}

START_TEST(test_barrier_sequence_each_mode)
{
	enum journal_data_mode modes[] = { JOURNAL_DATA_ORDERED, JOURNAL_DATA_WRITEBACK,
					   JOURNAL_DATA_JOURNAL };
	for (unsigned m = 0; m < 3; m++) {
		for (size_t blocks = 3; blocks <= 24; blocks += 21) {
			struct test_fs t;
			tfs_setup(&t, IMG, BS, 64);
			unsigned per_fsync;
			barrier_workload(&t, modes[m], blocks, &per_fsync);
			/* F1 and F2 of its commit for new data written in place
			 * (data=ordered or writeback, more than 64 KiB);
			 * otherwise F2 alone */
			bool in_place = modes[m] != JOURNAL_DATA_JOURNAL && blocks * BS > (64u << 10);
			/* (data=journal logging 96 KiB per fsync fills the
			 * 64-block log at nearly every fsync: a checkpoint's F3
			 * and F4 come on top, so no per-fsync count there) */
			if (modes[m] != JOURNAL_DATA_JOURNAL || blocks == 3)
				ck_assert_uint_eq(per_fsync, in_place ? 2 : 1);
			tfs_unmount_and_check(&t);
		}
	}
}
END_TEST

/* A device with FUA (an NBD server): a commit whose F1 already made its
 * log blocks durable writes the commit block with FUA instead of F2, so
 * an fsync of new data in data=ordered costs one flush, not two.  Without
 * F1 nothing changes (F2 is still needed for the log blocks). */
START_TEST(test_fua_commit_block_replaces_f2)
{
	for (size_t blocks = 3; blocks <= 24; blocks += 21) {
		struct test_fs t;
		tfs_setup(&t, IMG, BS, 256);
		tfs_unmount(&t);
		blockdev_record_set_fua(t.rec, true);
		tfs_mount(&t);
		struct inode *root = tfs_root(&t);
		size_t len = blocks * BS;
		uint8_t *buf = malloc(len);
		ck_assert_ptr_nonnull(buf);
		struct blockdev_counts before, after;
		blockdev_record_counts(t.rec, &before);
		for (int i = 0; i < 20; i++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", i);
			struct inode *f;
			ck_assert_int_eq(ordfs_create(t.fs, root, name, 0644, &root_cred, &f), 0);
			memset(buf, i, len);
			ck_assert_int_eq(ordfs_write(t.fs, f, buf, len, 0), (ssize_t)len);
			ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
			inode_put(t.fs, f);
		}
		blockdev_record_counts(t.rec, &after);
		uint64_t flushes = after.flushes - before.flushes;
		uint64_t fua = after.fua_writes - before.fua_writes;
		if (blocks * BS > (64u << 10)) {
			ck_assert_uint_eq(fua, 20);     /* each commit block */
			ck_assert_uint_eq(flushes, 20); /* F1 alone */
		} else {
			ck_assert_uint_eq(fua, 0);
			ck_assert_uint_eq(flushes, 20); /* F2 alone */
		}
		inode_put(t.fs, root);
		free(buf);
		tfs_unmount(&t);
		/* What the FUA commits left is a consistent, complete image. */
		tfs_mount(&t);
		root = tfs_root(&t);
		for (int i = 0; i < 20; i++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", i);
			struct inode *f;
			ck_assert_int_eq(ordfs_lookup(t.fs, root, name, &f), 0);
			ck_assert_uint_eq(f->size, len);
			inode_put(t.fs, f);
		}
		inode_put(t.fs, root);
		tfs_unmount_and_check(&t);
	}
}
END_TEST

START_TEST(test_nobarrier_never_flushes)
{
	struct test_fs t;
	tfs_setup(&t, IMG, BS, 64);
	tfs_unmount(&t);
	t.opts.barrier = false;
	blockdev_record_reset_counts(t.rec);
	tfs_mount(&t);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "x", 0644, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, "abc", 3, 0), 3);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount(&t);
	struct blockdev_counts c;
	blockdev_record_counts(t.rec, &c);
	ck_assert_uint_eq(c.flushes, 0);
	ck_assert_uint_gt(c.writes, 0);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- fdatasync, fsyncdir ------------------------------------------------ */

START_TEST(test_fdatasync_skips_timestamp_only_commit)
{
	struct test_fs t;
	tfs_setup(&t, IMG, BS, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "d", 0644, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, "data", 4, 0), 4);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);

	struct journal_stats before, after;
	journal_get_stats(t.fs->journal, &before);
	struct ordfs_setattr sa = { .valid = ORDFS_SET_MTIME, .mtime = { 12345, 6 } };
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0);
	journal_get_stats(t.fs->journal, &after);
	ck_assert_uint_eq(after.commits, before.commits); /* fdatasync: no commit */
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);
	journal_get_stats(t.fs->journal, &after);
	ck_assert_uint_eq(after.commits, before.commits + 1); /* fsync: the times */
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_fsyncdir_makes_entries_durable)
{
	struct test_fs t;
	tfs_setup(&t, IMG, BS, 0);
	struct inode *root = tfs_root(&t), *dir, *f;
	ck_assert_int_eq(ordfs_mkdir(t.fs, root, "dir", 0755, &root_cred, &dir), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, root, false), 0);
	ck_assert_int_eq(ordfs_create(t.fs, dir, "entry", 0644, &root_cred, &f), 0);
	inode_put(t.fs, f);
	ck_assert_int_eq(ordfs_fsync(t.fs, dir, false), 0);
	inode_put(t.fs, dir);
	inode_put(t.fs, root);
	blockdev_record_drop_unflushed(t.rec, true);
	blockdev_record_power_cut(t.rec);
	tfs_crash(&t);
	tfs_mount(&t);
	root = tfs_root(&t);
	ck_assert_int_eq(ordfs_lookup(t.fs, root, "dir", &dir), 0);
	ck_assert_int_eq(ordfs_lookup(t.fs, dir, "entry", &f), 0);
	inode_put(t.fs, f);
	inode_put(t.fs, dir);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

START_TEST(test_atime_update_forces_nothing)
{
	struct test_fs t;
	tfs_setup(&t, IMG, BS, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "a", 0644, &root_cred, &f), 0);
	ck_assert_int_eq(ordfs_write(t.fs, f, "data", 4, 0), 4);
	struct ordfs_setattr sa = { .valid = ORDFS_SET_ATIME | ORDFS_SET_MTIME,
				    .atime = { 1000, 0 }, .mtime = { 1000, 0 } };
	ck_assert_int_eq(ordfs_setattr(t.fs, f, &sa), 0);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0);

	struct journal_stats before, after;
	struct blockdev_counts cbefore, cafter;
	journal_get_stats(t.fs->journal, &before);
	blockdev_record_counts(t.rec, &cbefore);
	char buf[4];
	ck_assert_int_eq(ordfs_read(t.fs, f, buf, 4, 0), 4); /* relatime: atime <= mtime */
	ck_assert_int_gt(f->d.atime.sec, 1000);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, true), 0); /* fdatasync */
	journal_get_stats(t.fs->journal, &after);
	blockdev_record_counts(t.rec, &cafter);
	ck_assert_uint_eq(after.commits, before.commits);
	ck_assert_uint_eq(cafter.flushes, cbefore.flushes);
	ck_assert_uint_eq(cafter.writes, cbefore.writes);
	ck_assert_int_eq(ordfs_fsync(t.fs, f, false), 0); /* fsync takes the atime */
	journal_get_stats(t.fs->journal, &after);
	ck_assert_uint_eq(after.commits, before.commits + 1);
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- errseq per open file description ---------------------------------- */

START_TEST(test_error_reported_once_per_open_file)
{
	struct test_fs t;
	tfs_setup(&t, IMG, BS, 0);
	struct inode *root = tfs_root(&t), *f;
	ck_assert_int_eq(ordfs_create(t.fs, root, "e", 0644, &root_cred, &f), 0);
	struct ordfs_file a, b;
	ordfs_file_open(f, &a);
	ordfs_file_open(f, &b);
	ck_assert_int_eq(ordfs_write(t.fs, f, "xyz", 3, 0), 3);
	blockdev_record_fail_write(t.rec, 1, -EIO); /* the data (logged: fsync waits) */
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &a, false), -EIO);
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &a, false), 0); /* retried, durable */
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &b, false), -EIO); /* b hears once */
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &b, false), 0);
	struct ordfs_file c;
	ordfs_file_open(f, &c); /* opened after everyone saw it */
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &c, false), 0);

	/* A background write-back failure nobody has seen reaches the next
	 * opener.  A new block: background write-back writes it in place. */
	ck_assert_int_eq(ordfs_write(t.fs, f, "more", 4, 2 * BS), 4);
	blockdev_record_fail_write(t.rec, 1, -EIO);
	ck_assert_int_eq(writeback_all(t.fs, false), -EIO);
	struct ordfs_file d;
	ordfs_file_open(f, &d);
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &d, false), -EIO);
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &d, false), 0);
	ck_assert_int_eq(ordfs_file_fsync(t.fs, f, &a, false), -EIO);

	char out[8] = { 0 };
	ck_assert_int_eq(ordfs_read(t.fs, f, out, 3, 0), 3);
	ck_assert_int_eq(ordfs_read(t.fs, f, out + 3, 4, 2 * BS), 4);
	ck_assert_str_eq(out, "xyzmore");
	inode_put(t.fs, f);
	inode_put(t.fs, root);
	tfs_unmount_and_check(&t);
}
END_TEST

/* ---- the policy sweep --------------------------------------------------- */

#define SWEEP_FILES 16
#define SWEEP_BYTES (2 * BS + 123)

static int fatal_calls;

static void on_fatal(void *ctx, int err)
{
	(void)ctx;
	(void)err;
	__atomic_add_fetch(&fatal_calls, 1, __ATOMIC_SEQ_CST);
}

/* The abort callback runs in the thread that aborted the journal (often
 * the commit thread), which may wake the failed caller first. */
static int fatal_calls_settled(int want)
{
	for (int i = 0; i < 2000 && __atomic_load_n(&fatal_calls, __ATOMIC_SEQ_CST) != want; i++)
		usleep(1000);
	return __atomic_load_n(&fatal_calls, __ATOMIC_SEQ_CST);
}

static void fill(uint8_t *buf, int file, int gen)
{
	for (size_t k = 0; k < SWEEP_BYTES; k++)
		buf[k] = (uint8_t)(file * 37 + (int)k * 11 + gen * 101);
}

struct sweep_case {
	enum flush_error_policy policy;
	enum blockdev_event_type op;
	uint64_t nth;
	bool persistent;
};

struct sweep_outcome {
	uint64_t writes, flushes; /* the device operations the run made */
	uint64_t checkpoints;
	bool fired;
};

static void mount_with_policy(struct test_fs *t, enum flush_error_policy p)
{
	tfs_setup(t, IMG, BS, 64); /* small: the workload checkpoints */
	tfs_unmount(t);
	t->opts.flush_error = p;
	t->opts.fatal = on_fatal;
	tfs_mount(t);
	blockdev_record_drop_unflushed(t->rec, true);
	blockdev_record_reset_counts(t->rec);
}

/* One file of the workload: create, write, fsync through one open file
 * description; what the others see.  Returns whether the file's bytes are
 * acknowledged durable. */
static bool sweep_one_file(struct test_fs *t, const struct sweep_case *c, struct inode *root,
			   int i, bool *failed_before)
{
	char name[16];
	snprintf(name, sizeof(name), "f%d", i);
	uint8_t buf[SWEEP_BYTES];
	fill(buf, i, 0);
	struct inode *f;
	int err = ordfs_create(t->fs, root, name, 0644, &root_cred, &f);
	if (err) {
		/* Only a filesystem that went read-only, or a report-mode
		 * failure while the handle waited for log room, refuses. */
		ck_assert_msg(c->policy != FLUSH_ERROR_IGNORE, "create: %d", err);
		ck_assert_msg(err == -EROFS || err == -EIO, "create: %d", err);
		*failed_before = true;
		return false;
	}
	struct ordfs_file a, b;
	ordfs_file_open(f, &a);
	ordfs_file_open(f, &b);
	ssize_t w = ordfs_write(t->fs, f, buf, SWEEP_BYTES, 0);
	bool acked = false;
	if (w != SWEEP_BYTES) {
		ck_assert_msg(c->policy == FLUSH_ERROR_REMOUNT_RO || c->policy == FLUSH_ERROR_ABORT,
			      "write: %zd", w);
		ck_assert_int_eq(w, -EROFS);
		*failed_before = true;
		goto out;
	}
	int ra = ordfs_file_fsync(t->fs, f, &a, false);
	switch (c->policy) {
	case FLUSH_ERROR_IGNORE:
		ck_assert_int_eq(ra, 0);
		acked = true;
		break;
	case FLUSH_ERROR_REPORT:
		if (ra == 0) {
			acked = true;
			ck_assert_int_eq(ordfs_file_fsync(t->fs, f, &b, false), 0);
			break;
		}
		ck_assert_msg(ra == -EIO || ra == -ENOSPC, "fsync: %d", ra);
		*failed_before = true;
		/* The other open file description hears it exactly once. */
		ck_assert_int_eq(ordfs_file_fsync(t->fs, f, &b, false) == ra ||
				 c->persistent, 1);
		if (c->persistent)
			break;
		/* A transient fault: the second fsync rewrites and succeeds,
		 * and nobody hears the old error again. */
		ck_assert_int_eq(ordfs_file_fsync(t->fs, f, &a, false), 0);
		ck_assert_int_eq(ordfs_file_fsync(t->fs, f, &b, false), 0);
		struct ordfs_file later;
		ordfs_file_open(f, &later);
		ck_assert_int_eq(ordfs_file_fsync(t->fs, f, &later, false), 0);
		acked = true;
		break;
	case FLUSH_ERROR_REMOUNT_RO:
	case FLUSH_ERROR_ABORT:
		if (ra == 0 && !*failed_before) {
			acked = true;
			break;
		}
		ck_assert_msg(ra == -EIO || ra == -ENOSPC || ra == 0, "fsync: %d", ra);
		*failed_before = true;
		ck_assert_int_eq(ordfs_writable(t->fs), -EROFS);
		ck_assert_int_eq(ordfs_write(t->fs, f, buf, 1, 0), -EROFS);
		break;
	}
out:
	inode_put(t->fs, f);
	return acked;
}

/* Every file whose fsync succeeded is there with its bytes.  (Not under
 * ignore: losing them silently is what that policy accepts.) */
static void sweep_verify(struct test_fs *t, const struct sweep_case *c, const bool *acked)
{
	if (c->policy == FLUSH_ERROR_IGNORE)
		return;
	struct inode *root = tfs_root(t);
	for (int i = 0; i < SWEEP_FILES; i++) {
		if (!acked[i])
			continue;
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		struct inode *f;
		int err = ordfs_lookup(t->fs, root, name, &f);
		ck_assert_msg(err == 0, "acknowledged file %s lost (%d) [policy %d op %d nth %llu%s]",
			      name, err, c->policy, c->op, (unsigned long long)c->nth,
			      c->persistent ? " persistent" : "");
		uint8_t want[SWEEP_BYTES], got[SWEEP_BYTES];
		fill(want, i, 0);
		ck_assert_int_eq(ordfs_read(t->fs, f, got, SWEEP_BYTES, 0), SWEEP_BYTES);
		ck_assert_msg(memcmp(want, got, SWEEP_BYTES) == 0,
			      "acknowledged file %s has the wrong bytes [policy %d op %d nth %llu]",
			      name, c->policy, c->op, (unsigned long long)c->nth);
		inode_put(t->fs, f);
	}
	inode_put(t->fs, root);
}

static void run_sweep_case(const struct sweep_case *c, struct sweep_outcome *out)
{
	struct test_fs t;
	bool acked[SWEEP_FILES] = { false };
	bool failed = false;
	fatal_calls = 0;
	ignore_lines = 0;
	mount_with_policy(&t, c->policy);
	if (c->nth) {
		/* A host that ran out of space fails writes with ENOSPC;
		 * a failing flush is EIO. */
		struct blockdev_fault fault = { .nth = c->nth,
						.err = c->op == BD_EV_WRITE ? -ENOSPC : -EIO,
						.persistent = c->persistent };
		blockdev_record_fault(t.rec, c->op, &fault);
	}
	struct inode *root = tfs_root(&t);
	for (int i = 0; i < SWEEP_FILES; i++)
		acked[i] = sweep_one_file(&t, c, root, i, &failed);
	inode_put(t.fs, root);

	out->fired = blockdev_record_faults_fired(t.rec) > 0;
	struct journal_stats js;
	journal_get_stats(t.fs->journal, &js);
	out->checkpoints = js.checkpoints;
	struct blockdev_counts counts;
	blockdev_record_counts(t.rec, &counts);
	out->writes = counts.writes;
	out->flushes = counts.flushes;
	if (c->policy == FLUSH_ERROR_ABORT)
		ck_assert_msg(fatal_calls_settled(failed) == (failed ? 1 : 0),
			      "fatal called %d times, failed %d [op %d nth %llu]", fatal_calls,
			      failed, c->op, (unsigned long long)c->nth);
	else
		ck_assert_int_eq(fatal_calls, 0);
	/* ignore: one line for the failed write or flush, and success. */
	if (c->policy == FLUSH_ERROR_IGNORE)
		ck_assert_int_eq(ignore_lines, out->fired ? 1 : 0);

	if (c->persistent && c->policy == FLUSH_ERROR_REPORT && out->fired) {
		/* The device comes back: so does the filesystem, and every
		 * file written is made durable by one more fsync. */
		blockdev_record_heal(t.rec);
		root = tfs_root(&t);
		for (int i = 0; i < SWEEP_FILES; i++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", i);
			struct inode *f;
			if (ordfs_lookup(t.fs, root, name, &f) != 0)
				continue;
			struct ordfs_file a;
			ordfs_file_open(f, &a);
			int r = ordfs_file_fsync(t.fs, f, &a, false);
			if (r != 0) /* the unseen error first, then durable */
				r = ordfs_file_fsync(t.fs, f, &a, false);
			ck_assert_int_eq(r, 0);
			uint8_t buf[SWEEP_BYTES], want[SWEEP_BYTES];
			fill(want, i, 0);
			ck_assert_int_eq(ordfs_read(t.fs, f, buf, SWEEP_BYTES, 0), SWEEP_BYTES);
			acked[i] = memcmp(buf, want, SWEEP_BYTES) == 0;
			inode_put(t.fs, f);
		}
		inode_put(t.fs, root);
	}

	/* Power cut: the device keeps only what was flushed. */
	blockdev_record_heal(t.rec);
	blockdev_record_power_cut(t.rec);
	tfs_crash(&t);

	const char *why = "";
	int err = ordfs_mount(t.rec, &t.opts, &t.fs, &why);
	if (c->policy == FLUSH_ERROR_REMOUNT_RO && failed) {
		/* The error was recorded: fsck before a read-write mount. */
		ck_assert_msg(err == -EUCLEAN, "mount after remount-ro: %d (%s)", err, why);
		ck_assert_int_eq(tfs_check_image(&t), 0);
		bool cleared;
		ck_assert_int_eq(ordfs_clear_error_state(t.rec, &cleared), 0);
		ck_assert(cleared);
		err = ordfs_mount(t.rec, &t.opts, &t.fs, &why);
	}
	ck_assert_msg(err == 0, "remount: %s (%d)", why, err);
	sweep_verify(&t, c, acked);
	tfs_unmount_and_check(&t);
}

/* Fails every write, then every flush, of the workload in turn. */
static void sweep_policy(enum flush_error_policy p, bool persistent)
{
	struct sweep_case clean = { .policy = p };
	struct sweep_outcome base;
	run_sweep_case(&clean, &base);
	ck_assert(!base.fired);
	ck_assert_uint_ge(base.checkpoints, 1);
	unsigned cases = 0, fired = 0;
	for (int op = 0; op < 2; op++) {
		uint64_t total = op == 0 ? base.writes : base.flushes;
		for (uint64_t nth = 1; nth <= total + 1; nth += tfs_sweep_stride()) {
			struct sweep_case c = { p, op == 0 ? BD_EV_WRITE : BD_EV_FLUSH, nth,
						persistent };
			struct sweep_outcome o;
			run_sweep_case(&c, &o);
			/* Every fault fires but the one past the end. */
			ck_assert_msg(o.fired == (nth <= total),
				      "fault %llu of %llu (op %d) fired %d",
				      (unsigned long long)nth, (unsigned long long)total, op,
				      o.fired);
			cases++;
			fired += o.fired;
		}
	}
	fprintf(stderr, "sweep flush_error=%s%s: %u cases (%llu writes, %llu flushes), "
		"all clean\n", flush_error_policy_name(p), persistent ? " persistent" : "",
		cases, (unsigned long long)base.writes, (unsigned long long)base.flushes);
}

START_TEST(test_sweep_report)
{
	log_capture();
	sweep_policy(FLUSH_ERROR_REPORT, false);
	sweep_policy(FLUSH_ERROR_REPORT, true);
	ordfs_log_set_sink(NULL);
}
END_TEST

START_TEST(test_sweep_ignore)
{
	log_capture();
	sweep_policy(FLUSH_ERROR_IGNORE, false);
	ordfs_log_set_sink(NULL);
}
END_TEST

START_TEST(test_sweep_remount_ro)
{
	log_capture();
	sweep_policy(FLUSH_ERROR_REMOUNT_RO, false);
	ordfs_log_set_sink(NULL);
}
END_TEST

START_TEST(test_sweep_abort)
{
	log_capture();
	sweep_policy(FLUSH_ERROR_ABORT, false);
	ordfs_log_set_sink(NULL);
}
END_TEST

static Suite *flush_suite(void)
{
	Suite *s = suite_create("flush");
	TCase *tc = tcase_create("guard");
	tcase_add_test(tc, test_fault_device_drops_unflushed);
	tcase_add_test(tc, test_guard_rewrites_after_failed_flush);
	tcase_add_test(tc, test_guard_skips_flush_with_nothing_written);
	tcase_add_test(tc, test_guard_flush_since_skips_covered_writes);
	tcase_add_test(tc, test_guard_ignore_logs_once);
	tcase_add_test(tc, test_guard_unsupported_flush_warns_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("durability");
	tcase_add_test(tc, test_barrier_sequence_each_mode);
	tcase_add_test(tc, test_nobarrier_never_flushes);
	tcase_add_test(tc, test_fua_commit_block_replaces_f2);
	tcase_add_test(tc, test_fdatasync_skips_timestamp_only_commit);
	tcase_add_test(tc, test_fsyncdir_makes_entries_durable);
	tcase_add_test(tc, test_atime_update_forces_nothing);
	tcase_add_test(tc, test_error_reported_once_per_open_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("sweep");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sweep_report);
	tcase_add_test(tc, test_sweep_ignore);
	tcase_add_test(tc, test_sweep_remount_ro);
	tcase_add_test(tc, test_sweep_abort);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(flush_suite());
}
