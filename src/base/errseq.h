/*
 * errseq.h - write/flush error bookkeeping with Linux errseq semantics.
 *
 * Owns: one error cursor per file (struct errseq) and one sample per open
 * file description (errseq_t).  Rules, as lib/errseq.c:
 *  - errseq_set records an error; the counter moves only if the previous
 *    error was seen, so errors nobody looked at are not counted twice.
 *  - errseq_sample, at open: an error no one has seen yet is NOT sampled
 *    away, so the new opener's first check reports it.
 *  - errseq_check_and_advance: each open file description reports a given
 *    error exactly once, then 0 until a new error is set.
 * The flush policy (flush_error=) that decides whether errors are recorded
 * at all is built on this (issue 5).
 *
 * Design: docs/design/flush.md (the error each open file is told once).
 */
#ifndef ORDFS_ERRSEQ_H
#define ORDFS_ERRSEQ_H

#include <pthread.h>
#include <stdint.h>
#include "lock/lock.h"

typedef uint32_t errseq_t;

struct errseq {
	struct ordfs_mutex lock;
	errseq_t value;
};

void errseq_init(struct errseq *e);
void errseq_destroy(struct errseq *e);
/* err is a negative errno. */
void errseq_set(struct errseq *e, int err);
errseq_t errseq_sample(struct errseq *e);
/* 0, or the negative errno not yet reported to this sample's holder. */
int errseq_check_and_advance(struct errseq *e, errseq_t *since);

#endif
