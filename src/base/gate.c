/*
 * gate.c - waited-on syncs go ahead of background writeback (gate.h).
 */
#include <time.h>

#include "gate.h"
#include "lock/lock.h"

void sync_gate_init(struct sync_gate *g)
{
	ordfs_mutex_init(&g->lock, LOCK_SYNC_GATE, "sync gate lock");
	pthread_cond_init(&g->idle, NULL);
	g->holders = 0;
	g->yields = 0;
}

void sync_gate_destroy(struct sync_gate *g)
{
	pthread_cond_destroy(&g->idle);
	ordfs_mutex_destroy(&g->lock);
}

void sync_gate_enter(struct sync_gate *g)
{
	ordfs_mutex_lock(&g->lock);
	g->holders++;
	ordfs_mutex_unlock(&g->lock);
}

void sync_gate_leave(struct sync_gate *g)
{
	ordfs_mutex_lock(&g->lock);
	if (--g->holders == 0)
		pthread_cond_broadcast(&g->idle);
	ordfs_mutex_unlock(&g->lock);
}

void sync_gate_yield(struct sync_gate *g, uint32_t max_us)
{
	ordfs_mutex_lock(&g->lock);
	if (g->holders > 0) {
		g->yields++;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)max_us * 1000u;
		until.tv_sec += (time_t)(ns / 1000000000u);
		until.tv_nsec = (long)(ns % 1000000000u);
		while (g->holders > 0 &&
		       ordfs_cond_timedwait(&g->idle, &g->lock, &until) == 0)
			;
	}
	ordfs_mutex_unlock(&g->lock);
}
