/*
 * thread.c - the writeback thread: periodic writeback of delayed data and
 * lazy access times, and early writeback when a writer is past the
 * background threshold (writeback.h); after each periodic pass, page
 * memory that stayed free for a whole interval goes back to the kernel
 * (block_pool_trim), and blocks the allocator refused meanwhile reach
 * errors= (writeback_report_refused).
 *
 * Rules: the thread holds no lock across a pass (fs->writeback_lock only
 * guards the stop and kick flags); its errors stay with the pages (and go
 * to each file's errseq) and pass through errors= (ordfs_report_error).
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <time.h>

#include "fs.h"
#include "writeback.h"
#include "atime/atime.h"
#include "alloc/alloc.h"
#include "base/block_pool.h"
#include "lock/lock.h"
#include "super/super.h"

/* Writes back delayed data every commit interval, so data written without
 * fsync reaches the image within about two intervals (ext3's ordered mode
 * behaviour; ext4 waits up to 30 s); in between, when kicked (a writer
 * went past writeback_background_pages), writes back early in slices. */
static void *writeback_main(void *arg)
{
	struct ordfs *fs = arg;
	ordfs_mutex_lock(&fs->writeback_lock);
	struct timespec next; /* the next full pass: kicks do not postpone it */
	clock_gettime(CLOCK_REALTIME, &next);
	while (!fs->writeback_stop) {
		/* commit=0 (a remount may set it): no periodic pass, a day's
		 * sleep between kicks. */
		uint64_t interval_ms = FS_OPT(fs, commit_interval_ms);
		if (!interval_ms)
			interval_ms = 86400000u;
		uint64_t ns = (uint64_t)next.tv_nsec + (interval_ms % 1000) * 1000000u;
		next.tv_sec += (time_t)(interval_ms / 1000) + (time_t)(ns / 1000000000u);
		next.tv_nsec = (long)(ns % 1000000000u);
		int timed_out = 0;
		bool rearm = false;
		while (!fs->writeback_stop && !timed_out) {
			if (fs->writeback_rearm) { /* writeback_interval_changed */
				fs->writeback_rearm = false;
				rearm = true;
				break;
			}
			if (fs->writeback_kicked) {
				/* A writer went past the background threshold. */
				ordfs_mutex_unlock(&fs->writeback_lock);
				/* Errors stay with the pages (and go to errseq). */
				ordfs_report_error(fs, writeback_early(fs),
						   "background writeback");
				ordfs_mutex_lock(&fs->writeback_lock);
				__atomic_store_n(&fs->writeback_kicked, false, __ATOMIC_RELAXED);
				continue;
			}
			timed_out = ordfs_cond_timedwait(&fs->writeback_cond, &fs->writeback_lock,
							   &next) == ETIMEDOUT;
		}
		if (fs->writeback_stop)
			break;
		if (rearm) { /* the next pass one new interval from now */
			clock_gettime(CLOCK_REALTIME, &next);
			continue;
		}
		ordfs_mutex_unlock(&fs->writeback_lock);
		/* Errors stay with the pages (and go to errseq). */
		ordfs_report_error(fs, writeback_periodic(fs), "background writeback");
		ordfs_report_error(fs, atime_write_lazy(fs, false), /* lazytime: a day old */
				   "writing lazy access times");
		/* Page memory free for a whole interval goes back (block_pool.h). */
		block_pool_trim(fs->page_pool);
		(void)writeback_report_refused(fs);
		ordfs_mutex_lock(&fs->writeback_lock);
		clock_gettime(CLOCK_REALTIME, &next);
	}
	ordfs_mutex_unlock(&fs->writeback_lock);
	return NULL;
}

int writeback_report_refused(struct ordfs *fs)
{
	uint64_t n = alloc_take_refused(fs->alloc);
	if (!n)
		return 0;
	char what[96];
	snprintf(what, sizeof(what), "%llu block%s free in the block bitmap but in use",
		 (unsigned long long)n, n == 1 ? "" : "s");
	return ordfs_error_corruption(fs, -EUCLEAN, what);
}

void writeback_kick(struct ordfs *fs)
{
	if (!fs->writeback_started || __atomic_load_n(&fs->writeback_kicked, __ATOMIC_RELAXED))
		return;
	ordfs_mutex_lock(&fs->writeback_lock);
	if (!fs->writeback_kicked) {
		__atomic_store_n(&fs->writeback_kicked, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&fs->writeback_cond);
	}
	ordfs_mutex_unlock(&fs->writeback_lock);
}

void writeback_interval_changed(struct ordfs *fs)
{
	if (!fs->writeback_started) {
		writeback_thread_start(fs); /* commit=0 at mount: none runs yet */
		return;
	}
	ordfs_mutex_lock(&fs->writeback_lock);
	fs->writeback_rearm = true;
	pthread_cond_broadcast(&fs->writeback_cond);
	ordfs_mutex_unlock(&fs->writeback_lock);
}

void writeback_thread_stop(struct ordfs *fs)
{
	if (!fs->writeback_started)
		return;
	ordfs_mutex_lock(&fs->writeback_lock);
	fs->writeback_stop = true;
	pthread_cond_broadcast(&fs->writeback_cond);
	ordfs_mutex_unlock(&fs->writeback_lock);
	pthread_join(fs->writeback_thread, NULL);
	fs->writeback_started = false;
}

void writeback_thread_start(struct ordfs *fs)
{
	if (FS_OPT(fs, commit_interval_ms) &&
	    pthread_create(&fs->writeback_thread, NULL, writeback_main, fs) == 0)
		fs->writeback_started = true;
}
