/*
 * journal.h - JBD-style write-ahead journal: handles, transactions, commit,
 * checkpoint and recovery.
 *
 * Owns: the log area of the image and the transaction state machine
 *
 *     RUNNING --(commit starts: handles drained, buffers copied)--> COMMITTING
 *     COMMITTING --(log written, F1, commit record, F2)--> COMMITTED
 *     COMMITTED --(home blocks written, F3, log tail advanced, F4)--> gone
 *
 * Copy-at-commit: when a commit starts it waits for the running
 * transaction's handles to finish (new handles wait, briefly), copies every
 * buffer of the transaction into private memory and opens the next
 * transaction.  The copies are what is logged and, after the commit, what
 * the checkpoint writes home.  So a commit never blocks modifications for
 * longer than one memcpy per buffer, and the checkpoint never writes bytes
 * of an uncommitted transaction.  (jbd2 freezes buffers on first write
 * access during a commit instead; see design/journal.md for why we copy.)
 *
 * The durability rules.  Code that keeps one cites it as [Jn].
 *
 *  J1 Ordered data first.  Data that a transaction makes reachable (blocks
 *     it allocates or converts, in every mode; bytes of a written block that
 *     a size it raises exposes, in data=ordered) is written before the
 *     handle that does it starts, so flush F1 of that transaction's commit
 *     (or the writer's own flush first) makes it durable before the commit
 *     record can count, or it is logged in the transaction itself (small
 *     fsync'd data, data=journal: writeback/route.c).  Overwrites inside the
 *     size on disk are not ordered (as in jbd2).
 *  J2 Log before commit record.  Descriptor, block copies and revoke blocks
 *     are written before the commit record, whose CRC is chained over them
 *     all, so a record without them does not validate.  F1 (a flush before
 *     the record) is issued when J1 needs it: the transaction makes data
 *     written before it reachable in data=ordered (journal_ordered_data).
 *  J3 Committed means durable.  After the commit record is written, F2; only
 *     then is the transaction committed: waiters are released, its copies
 *     become checkpointable and the blocks it freed become allocatable.
 *  J4 Checkpoint before reuse.  Log space is reused only after the
 *     transactions in it are written home, F3, the journal superblock's tail
 *     is advanced, F4.
 *  J5 No reuse before the free commits.  A block freed by transaction T is
 *     not allocated again until T has committed (J3); a checkpoint never
 *     writes a copy of a block whose free has committed.
 *  J6 Revoke.  Freeing a block that a live transaction in the log holds
 *     records a revoke in the freeing transaction, so replay never writes an
 *     old copy over the block's new contents.
 *  J7 Sequence.  Sequence numbers only grow; recovery leaves the journal
 *     empty with the next sequence after the last one replayed, so a stale
 *     commit record left in the log can never match again.
 *  J8 Handles never wait for commits.  Code holding a handle must not wait
 *     for a commit or a checkpoint (the commit waits for handles: deadlock).
 *
 * Locking: journal->state_lock guards transaction state and the journal
 * fields of struct buf.  Order: inode locks -> journal_start (may sleep) ->
 * allocator lock -> state_lock -> bcache lock.  One commit thread does all
 * commits and checkpoints, so log I/O is never concurrent with itself.
 *
 * Design: docs/design/journal.md.
 */
#ifndef ORDFS_JOURNAL_H
#define ORDFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

struct blockdev;
struct bcache;
struct buf;
struct journal;
struct handle;

enum journal_data_mode {
	JOURNAL_DATA_ORDERED = 0,  /* default */
	JOURNAL_DATA_WRITEBACK = 1,
	JOURNAL_DATA_JOURNAL = 2,  /* file data goes through the log too */
};

#define JOURNAL_IOPRIO_DEFAULT 3 /* ext4's: one above the default of 4 */

struct journal_config {
	enum journal_data_mode data_mode;
	unsigned commit_interval_ms; /* periodic commit; 0 = only on demand */
	bool barrier;                /* issue flushes (F1..F4) */
	/* Best-effort I/O priority level (0 highest .. 7) of the commit
	 * thread's I/O, as ext4's journal_ioprio: so a commit someone waits
	 * for goes ahead of the bulk writes of other threads where the host's
	 * I/O scheduler honours priorities (bfq).  0 in this struct means the
	 * default, JOURNAL_IOPRIO_DEFAULT; set it to level + 1. */
	unsigned ioprio_plus1;
	/* On a failed write or flush: false aborts the journal (nothing more
	 * commits); true keeps the failed transaction, tells its waiters -EIO
	 * and writes it again (the same log image, at the same place, with the
	 * same sequence) at the next commit request or interval.  Later
	 * transactions commit only after it.  flush_error=report.  A commit
	 * that fails for another reason than the device (a transaction larger
	 * than its credits allowed: a bug) is never retried: the journal
	 * aborts with internal set, whatever this says. */
	bool retry_failed_commits;
	/* Called once, from the thread that aborted the journal, without
	 * journal locks held.  internal: the journal itself found the error
	 * (journal_abort_internal), not the device or a caller.  May be NULL. */
	void (*aborted)(void *ctx, int err, bool internal);
	void *aborted_ctx;
	/* Called by the commit thread after a transaction commits, once per
	 * extent that transaction freed (J5).  May be NULL. */
	void (*release_freed)(void *ctx, uint64_t start, uint32_t len);
	void *release_ctx;
	/* Open read-only (a read-only mount that a remount may make
	 * read-write): nothing is written, not even the journal superblock,
	 * and handles fail with -EROFS until journal_set_writable. */
	bool start_readonly;
};

struct journal_stats {
	uint64_t commits;          /* transactions committed */
	uint64_t commit_requests;  /* journal_commit_wait() calls that waited */
	uint64_t commits_requested; /* commits someone waited for (the rest:
				     * periodic, by the commit interval) */
	uint64_t blocks_logged;    /* metadata copies written to the log */
	uint64_t revokes_logged;
	uint64_t checkpoints;
	uint64_t blocks_checkpointed;
	uint64_t flushes;
	uint64_t failed_commits;   /* commit attempts that failed */
	uint64_t failed_checkpoints;
	uint64_t credit_overruns;  /* handles refused a block past their credits */
	uint64_t running_tid;
	uint64_t committed_tid;    /* highest committed sequence */
	uint32_t log_used;         /* log blocks holding live transactions */
	uint32_t log_total;
};

/* Opens the journal of an image whose log is empty (recovery already done:
 * journal_open refuses a non-empty log with -EUCLEAN).  Starts the commit
 * thread. */
int journal_open(struct blockdev *bd, struct bcache *cache, const struct ordfs_super *sb,
		 const struct journal_config *cfg, struct journal **out);
/* Commits, checkpoints everything, leaves the log empty, stops the thread.
 * Returns the first error seen (the journal is freed either way). */
int journal_close(struct journal *j);

/* ---- handles (one per filesystem operation) --------------------------- */

/* Starts a handle that may dirty up to `credits` metadata blocks.  May wait
 * for a commit to make room.  -EROFS if the journal has aborted, -E2BIG if
 * credits exceed the largest transaction the log allows, -EIO if it had to
 * wait for room and a commit failed meanwhile. */
int journal_start(struct journal *j, uint32_t credits, struct handle **out);
/* The largest credits one handle may ask for. */
uint32_t journal_max_credits(struct journal *j);
/* Ends the handle.  Returns -EROFS if the journal aborted meanwhile. */
int journal_stop(struct handle *h);
/* Does the calling thread hold an open handle?  (Then it must not wait for
 * a commit [J8].) */
bool journal_handle_held(void);
/* Sequence number of the transaction this handle belongs to. */
uint64_t journal_handle_tid(const struct handle *h);

#define JWA_CSUM_HDR 0x1u /* block has the common header: set csum at commit */

/* Declares that the caller is about to modify b under this handle: b joins
 * the running transaction (and is pinned until checkpointed).  Call before
 * every modification; cheap when b is already in the transaction. */
int journal_get_write_access(struct handle *h, struct buf *b, unsigned flags);
/* Logs `data` (a whole block) as the new contents of block blockno in this
 * handle: file data that goes through the log (data=journal, a small
 * fsync's new data, a truncate's zeroed last block).  The block gets a
 * cached buffer, so later writes of it are logged too and reads find the
 * newest bytes there (design/write-routes.md, "coherence").  One credit. */
int journal_log_block(struct handle *h, uint64_t blockno, const void *data);
/* A block is being freed in this handle's transaction: drop it from the
 * transaction, record a revoke if the log holds it (J6), and remember the
 * free for the checkpoint (J5).  Safe for blocks never journaled. */
int journal_forget(struct handle *h, uint64_t blockno);
/* Records an extent of blocks freed by this handle's transaction; it is
 * handed to cfg->release_freed once the transaction commits (J5). */
int journal_add_freed(struct handle *h, uint64_t start, uint32_t len);
/* This handle makes data written before it reachable (data=ordered: a
 * delayed allocation, a conversion of unwritten blocks): its transaction's
 * commit issues F1 so that data is durable before the commit record.  A
 * transaction without such data needs no F1: the commit block's CRC,
 * chained over all its log blocks, already makes a commit record without
 * them worthless, so F2 alone orders it. */
void journal_ordered_data(struct handle *h);

/* ---- commits ---------------------------------------------------------- */

uint64_t journal_running_tid(struct journal *j);
/* Makes sure transaction tid is committed, starting its commit if it is the
 * running one, and waits.  0 if it committed (or was already), -EIO if a
 * commit it depends on failed while it waited, -EROFS if the journal is
 * aborted.  Concurrent callers for the same transaction share one commit
 * (group commit). */
int journal_commit_wait(struct journal *j, uint64_t tid);
/* Commits the running transaction (if it holds anything) and waits. */
int journal_force_commit(struct journal *j);
/* Commits and then checkpoints everything: the log is empty on return. */
int journal_flush_all(struct journal *j);

/* A remount (mount/remount.c) changes these live.  The commit thread
 * applies a new I/O priority to itself at its next wake-up. */
struct journal_tunables {
	unsigned commit_interval_ms;
	bool barrier;
	unsigned ioprio_plus1;
	bool retry_failed_commits;
};
void journal_set_tunables(struct journal *j, const struct journal_tunables *t);

/* Read-only (a remount,ro): new handles fail with -EROFS, the running
 * transaction commits once the handles in it stop, everything is
 * checkpointed and the log is marked empty, as at a clean unmount, with
 * the journal kept open.  On failure the journal is writable again and
 * the error returned.  journal_set_writable undoes it: the log is marked
 * in use again (recovery scans from where the next transaction goes) and
 * handles may start. */
int journal_set_readonly(struct journal *j);
/* Is the journal read-only now (journal_set_readonly, or opened so)? */
bool journal_is_readonly(struct journal *j);
int journal_set_writable(struct journal *j);

/* Marks the journal aborted with err: handles fail with -EROFS from now on
 * and nothing more is committed.  Idempotent; cfg.aborted runs on the
 * first call. */
void journal_abort(struct journal *j, int err);
/* A change inside a handle failed after earlier changes of the same
 * handle: aborts the journal, so half an operation never commits.
 * Returns err. */
int journal_abort_half_done(struct journal *j, int err);
/* Writes the journal superblock again with the abort errno in it, so the
 * next mount (after replay) knows the filesystem stopped on an error.
 * Best effort: the device may be what failed. */
int journal_record_error(struct journal *j);
/* journal_abort for an error the journal's own rules found (a logic
 * error): cfg.aborted hears internal = true. */
void journal_abort_internal(struct journal *j, int err);
int journal_aborted(struct journal *j);

void journal_get_stats(struct journal *j, struct journal_stats *out);

/* ---- recovery (shared by the daemon's mount and fsck) ----------------- */

struct journal_recovery_info {
	bool needed;                /* the log was not empty */
	uint64_t first_seq;         /* first transaction found */
	uint64_t next_seq;          /* first sequence not found (end of log) */
	uint32_t transactions;      /* complete transactions replayed */
	uint32_t blocks_replayed;
	uint32_t blocks_revoked;    /* tags skipped because of a revoke */
	uint32_t revoke_records;
	uint32_t bad_tag_csums;     /* tags whose copy failed its checksum */
	int32_t journal_err;        /* errno the journal superblock recorded */
};

#define JOURNAL_RECOVER_DRY_RUN 0x1u /* scan only; write nothing */

/* Three passes over the log (scan, revoke, replay), writing replayed blocks
 * home, flushing, then marking the log empty with the next sequence (J7).
 * Idempotent: a crash at any point is recovered by running it again.
 * Returns 0 (info filled) or a negative errno; a corrupt journal superblock
 * is -EUCLEAN. */
int journal_recover(struct blockdev *bd, const struct ordfs_super *sb, unsigned flags,
		    struct journal_recovery_info *info);

/* fsck, when the journal superblock is corrupt: zeroes the log and writes
 * a fresh, empty journal superblock (transactions not yet replayed are
 * lost; there is no way to find them). */
int journal_reset(struct blockdev *bd, const struct ordfs_super *sb);

/* Zeroes the errno the journal superblock recorded (fsck, after a clean
 * check).  *cleared tells whether there was one. */
int journal_clear_error(struct blockdev *bd, const struct ordfs_super *sb, bool *cleared);

/* Reads the journal superblock: is the log empty? (0 = empty, 1 = needs
 * recovery, negative errno on error.) */
int journal_needs_recovery(struct blockdev *bd, const struct ordfs_super *sb);

#endif
