/*
 * gate.h - waited-on syncs go ahead of background writeback.
 *
 * Owns: the count of fsyncs and syncs in progress and the wait that
 * background writeback does on it.  Rules:
 *  - every fsync/sync holds the gate (sync_gate_enter/leave) from its own
 *    writeback to its last flush;
 *  - background writeback (the periodic thread, a writer throttled past
 *    the dirty limit) writes bulk data in chunks and, before each chunk,
 *    waits while a sync holds the gate, but never longer than max_us per
 *    chunk: the heavy writer is held back, fairly, and still progresses
 *    under a steady stream of fsyncs.  So a commit someone waits for finds
 *    at most one background chunk ahead of it at the disk, instead of
 *    whatever the FIFO of FUSE requests and host writeback put there.
 *
 * Design: docs/design/write-routes.md (background writeback yields to waited-on syncs).
 */
#ifndef ORDFS_FLUSH_GATE_H
#define ORDFS_FLUSH_GATE_H
#include <pthread.h>
#include <stdint.h>
#include "lock/lock.h"

struct sync_gate {
	struct ordfs_mutex lock;
	pthread_cond_t idle;
	uint32_t holders; /* syncs in progress */
	uint64_t yields;  /* chunks that waited (statistics) */
};

void sync_gate_init(struct sync_gate *g);
void sync_gate_destroy(struct sync_gate *g);
void sync_gate_enter(struct sync_gate *g);
void sync_gate_leave(struct sync_gate *g);
/* Background writeback, before a chunk: waits until no sync holds the
 * gate, or max_us passed. */
void sync_gate_yield(struct sync_gate *g, uint32_t max_us);

#endif
