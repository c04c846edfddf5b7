/*
 * enospc.h - ENOSPC only when the space is really gone (enospc.c).
 */
#ifndef ORDFS_ENOSPC_H
#define ORDFS_ENOSPC_H

#include <stdbool.h>

struct ordfs;

/* After an allocation failed with err: true if it is worth
 * trying the whole operation again, because blocks freed by uncommitted
 * transactions (or by an eviction under way) have now been committed.
 * *retries counts the tries of one operation (start at 0).  Never true
 * for another error, or while this thread holds a handle [J8]. */
bool ordfs_should_retry_alloc(struct ordfs *fs, int err, unsigned *retries);

#endif
