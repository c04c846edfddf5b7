/*
 * stats.h - a mounted filesystem's numbers for `ordfsctl stats`.
 *
 * Design: docs/design/daemon.md (statistics and discard).
 */
#ifndef ORDFS_STATS_H
#define ORDFS_STATS_H

#include <stddef.h>

#include "ordfs_ioctl.h"

struct ordfs;
struct ordfs_options;

/* Fills out from the journal, the flush guard, the page cache and the
 * fsync latency histogram.  Never fails. */
void ordfs_stats_fill(struct ordfs *fs, struct ordfs_stats *out);
/* The options in force, as -o would spell them. */
void ordfs_options_describe(const struct ordfs_options *o, char *buf, size_t len);

#endif
