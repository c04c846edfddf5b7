/*
 * latency.c - see latency.h.
 */
#include <stdbool.h>
#include <time.h>

#include "latency.h"

static unsigned bucket_of(uint64_t ns)
{
	if (ns < LATENCY_SUB)
		return (unsigned)ns;
	unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
	unsigned sub = (unsigned)(ns >> (msb - 3)) & (LATENCY_SUB - 1);
	return (msb - 2) * LATENCY_SUB + sub;
}

static uint64_t bucket_upper(unsigned i)
{
	if (i < LATENCY_SUB)
		return i;
	unsigned msb = i / LATENCY_SUB + 2, sub = i % LATENCY_SUB;
	return ((uint64_t)(LATENCY_SUB + sub + 1) << (msb - 3)) - 1;
}

void latency_record(struct latency_hist *h, uint64_t ns)
{
	__atomic_add_fetch(&h->bucket[bucket_of(ns)], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->sum_ns, ns, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->count, 1, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&h->max_ns, __ATOMIC_RELAXED);
	while (ns > max &&
	       !__atomic_compare_exchange_n(&h->max_ns, &max, ns, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

uint64_t latency_quantile(const struct latency_hist *h, double q)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < LATENCY_BUCKETS; i++)
		total += __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total + 0.999999);
	if (want == 0)
		want = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < LATENCY_BUCKETS; i++) {
		seen += __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
		if (seen >= want) {
			uint64_t upper = bucket_upper(i);
			uint64_t max = __atomic_load_n(&h->max_ns, __ATOMIC_RELAXED);
			return upper < max ? upper : max;
		}
	}
	return __atomic_load_n(&h->max_ns, __ATOMIC_RELAXED);
}

uint64_t latency_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
