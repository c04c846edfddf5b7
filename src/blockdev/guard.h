/*
 * guard.h - the flush guard: a block device wrapper that carries out the
 * flush_error= policy for failing writes and flushes of the image.
 *
 * Owns: what the filesystem knows about writes the device may have lost.
 * A disk (or the host page cache under an image file) that fails a flush
 * may drop everything written since the last flush that succeeded; a
 * host that fails an fsync may already have thrown its dirty pages away.
 * So, with the report policy and barriers on, the guard keeps a copy of
 * every block written since the last successful flush ("retained"), and
 * after a failed flush it writes those copies again before the next flush:
 * nothing a later flush claims durable is missing from the device.
 *
 * Rules:
 *  - report: errors go to the caller.  Retained copies are dropped only
 *    after a flush that began after their write succeeds.  A failed write
 *    drops the copies of its range (the caller knows it failed and owns
 *    the retry).  Retained bytes are bounded: past the soft limit a write
 *    flushes first; past twice the limit (the device keeps failing) a
 *    write fails instead of growing memory: with -ENOSPC if that is what
 *    the device last failed with (a full host), else -EIO.  A discarded
 *    block's copies are dropped (it was freed: written again it would
 *    take back the host space the discard gave).
 *  - ignore: the first failed write or flush is logged (one line per
 *    mount) and every failure is reported as success; after a failed
 *    flush the guard stops flushing ("the device cannot flush").
 *  - remount-ro, abort: errors go to the caller, who aborts the journal;
 *    nothing is retained (nothing is retried).
 *  - Under every policy a flush refused as unsupported (EINVAL,
 *    EOPNOTSUPP) means the backing store cannot flush at all: one warning,
 *    then flushes are skipped.
 *  - The policy and `retain` change only under mode_lock held for writing
 *    (flush_guard_set_policy, a remount); every write holds it for
 *    reading, so no write is half in one mode and half in the other.
 *  - Shut (flush_guard_shut, FS_IOC_SHUTDOWN): from then on every write,
 *    flush, discard and allocate fails with -EIO before it reaches the
 *    device, under every policy, and no error is reported (the caller
 *    asked for it); reads still work.  flush_guard_shut returns once the
 *    writes and flushes under way when it was called are done.
 *  - Flushes are serialized; writes run concurrently with each other and
 *    with a flush.  A write's copy is kept only if no newer write of the
 *    same block has been recorded (a per-write sequence number).
 */
#ifndef ORDFS_FLUSH_GUARD_H
#define ORDFS_FLUSH_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct blockdev;

enum flush_error_policy {
	FLUSH_ERROR_REPORT = 0, /* default */
	FLUSH_ERROR_IGNORE,
	FLUSH_ERROR_REMOUNT_RO,
	FLUSH_ERROR_ABORT,
};

/* "report", "ignore", "remount-ro", "abort"; -1 for anything else. */
int flush_error_policy_parse(const char *s);
const char *flush_error_policy_name(enum flush_error_policy p);

struct flush_guard_config {
	enum flush_error_policy policy;
	bool retain;               /* keep copies (report with barriers) */
	uint32_t block_size;
	uint64_t retain_limit;     /* bytes; 0 = default (64 MiB) */
	/* Called after every failed write or flush the caller will see (not
	 * under ignore), without guard locks held.  May be NULL. */
	void (*on_error)(void *ctx, int err);
	void *on_error_ctx;
};

struct flush_guard_stats {
	uint64_t flushes;          /* flushes passed to the device */
	uint64_t flushes_skipped;  /* nothing written since the last good one */
	uint64_t write_errors, flush_errors;
	bool failing;              /* the last flush failed, none has worked since */
	uint64_t retained_blocks;  /* copies held now */
	uint64_t reissued_blocks;  /* copies written again after a failed flush */
	bool cannot_flush;         /* flushes are skipped */
};

/* Wraps inner (not owned).  A size refresh refreshes inner and takes its
 * size. */
int flush_guard_create(struct blockdev *inner, const struct flush_guard_config *cfg,
		       struct blockdev **out);
void flush_guard_get_stats(struct blockdev *guard, struct flush_guard_stats *out);

/* A token for "now": taken after the caller's own writes completed, it
 * lets flush_guard_flush_since tell whether a flush began after them. */
uint64_t flush_guard_mark(struct blockdev *guard);

/* Makes every write that completed before `token` was taken durable:
 * skipped when a good flush began after the token (a commit's flush,
 * another fsync's), otherwise a flush as blockdev_flush does it.  Other
 * threads' writes still in flight do not matter (a flush covers the writes
 * completed when it begins).  Callers waiting behind a flush in progress
 * are covered by it when it began late enough, so concurrent fsyncs share
 * flushes (group flush). */
int flush_guard_flush_since(struct blockdev *guard, uint64_t token);

/* A remount's new policy (and whether copies are kept: report with
 * barriers).  Waits for the writes under way.  Copies stop being kept at
 * once (all dropped); when they start being kept, a flush follows, so
 * nothing written before is left unkept and unflushed: its error, if it
 * fails, is returned (the new policy is in force either way). */
int flush_guard_set_policy(struct blockdev *guard, enum flush_error_policy policy, bool retain);

/* Nothing more reaches the device (see "Shut" above).  Not undone. */
void flush_guard_shut(struct blockdev *guard);

#endif
