/*
 * latency.h - a lock-free latency histogram (fsync latency since mount).
 *
 * Buckets: values below 8 ns exactly, then 8 sub-buckets per power of two
 * (a bucket is at most 12.5% wide), so percentiles are good to one bucket
 * and recording is three atomic adds.  Readers see a consistent enough
 * picture without locks (counts may be a few records apart).
 */
#ifndef ORDFS_STATS_LATENCY_H
#define ORDFS_STATS_LATENCY_H

#include <stdint.h>

#define LATENCY_SUB 8u
#define LATENCY_BUCKETS (64u * LATENCY_SUB)

struct latency_hist {
	uint64_t count, sum_ns, max_ns;
	uint64_t bucket[LATENCY_BUCKETS];
};

void latency_record(struct latency_hist *h, uint64_t ns);
/* The upper bound of the bucket holding the q-quantile (0 < q <= 1); 0
 * with no records. */
uint64_t latency_quantile(const struct latency_hist *h, double q);
/* Monotonic nanoseconds. */
uint64_t latency_now_ns(void);

#endif
