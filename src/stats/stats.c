/*
 * stats.c - gathers what `ordfsctl stats` shows from the parts that keep
 * it: the journal (commits, log use), the flush guard (flushes, failures,
 * state), the page cache (dirty bytes), the file data taken in (written,
 * copied: fs->write_bytes, fs->copy_range_bytes) and the fsync latency histogram
 * (fs->fsync_latency, recorded by ordfs_fsync).  Reads only; takes each
 * part's own lock through its accessor, never two at once.
 */
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "base/latency.h"
#include "fs.h"
#include "ops.h"
#include "writeback/writeback.h"
#include "atime/atime.h"
#include "blockdev/guard.h"
#include "journal/journal.h"

void ordfs_options_describe(const struct ordfs_options *o, char *buf, size_t len)
{
	static const char *const modes[] = { "ordered", "writeback", "journal" };
	static const char *const errors[] = { "", "continue", "remount-ro", "abort" };
	char atime[64];
	atime_policy_describe(&o->atime, atime, sizeof(atime));
	char dirty[32] = "";
	if (o->dirty_limit_bytes)
		snprintf(dirty, sizeof(dirty), ",dirty_limit=%lluK",
			 (unsigned long long)(o->dirty_limit_bytes >> 10));
	snprintf(buf, len, "%s,data=%s,commit=%u,%s,%s,flush_error=%s%s%s,%s,journal_ioprio=%u%s",
		 o->readonly ? "ro" : "rw", modes[o->data_mode % 3], o->commit_interval_ms / 1000,
		 o->barrier ? "barrier" : "nobarrier", o->discard ? "discard" : "nodiscard",
		 flush_error_policy_name(o->flush_error),
		 o->errors >= 1 && o->errors <= 3 ? ",errors=" : "",
		 o->errors >= 1 && o->errors <= 3 ? errors[o->errors] : "", atime,
		 o->journal_ioprio, dirty);
}

void ordfs_stats_fill(struct ordfs *fs, struct ordfs_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->version = ORDFS_STATS_VERSION;
	out->block_size = fs->block_size;
	struct ordfs_options opts;
	ordfs_options_in_force(fs, &opts);
	if (!opts.errors)
		opts.errors = fs->sb.errors;
	ordfs_options_describe(&opts, out->options, sizeof(out->options));

	if (fs->journal) {
		struct journal_stats js;
		journal_get_stats(fs->journal, &js);
		out->journal_blocks = js.log_total;
		out->journal_used = js.log_used;
		out->commits = js.commits;
		out->commits_requested = js.commits_requested;
		out->commit_failures = js.failed_commits;
		out->checkpoints = js.checkpoints;
	}
	struct flush_guard_stats gs;
	flush_guard_get_stats(fs->bd, &gs);
	out->flushes = gs.flushes;
	out->flushes_skipped = gs.flushes_skipped;
	out->flush_errors = gs.flush_errors;
	out->write_errors = gs.write_errors;
	out->retained_blocks = gs.retained_blocks;
	out->flush_state = !opts.barrier ? ORDFS_FLUSH_DISABLED
			 : gs.cannot_flush   ? ORDFS_FLUSH_UNSUPPORTED
			 : gs.failing        ? ORDFS_FLUSH_FAILING
					     : ORDFS_FLUSH_OK;
	if (fs->journal && journal_aborted(fs->journal))
		out->flush_state = ORDFS_FLUSH_READONLY;

	uint64_t limit = writeback_dirty_limit_pages(fs);
	out->dirty_bytes = __atomic_load_n(&fs->dirty_pages, __ATOMIC_RELAXED) * fs->block_size;
	out->dirty_limit_bytes = limit * fs->block_size;

	out->write_bytes = __atomic_load_n(&fs->write_bytes, __ATOMIC_RELAXED);
	out->copy_range_bytes = __atomic_load_n(&fs->copy_range_bytes, __ATOMIC_RELAXED);

	const struct latency_hist *h = &fs->fsync_latency;
	out->fsyncs = __atomic_load_n(&h->count, __ATOMIC_RELAXED);
	out->fsync_mean_ns = out->fsyncs ? __atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED) /
						   out->fsyncs
					 : 0;
	out->fsync_p50_ns = latency_quantile(h, 0.50);
	out->fsync_p90_ns = latency_quantile(h, 0.90);
	out->fsync_p99_ns = latency_quantile(h, 0.99);
	out->fsync_p999_ns = latency_quantile(h, 0.999);
	out->fsync_max_ns = __atomic_load_n(&h->max_ns, __ATOMIC_RELAXED);
}
