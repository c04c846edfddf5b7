/*
 * stats_print.c - see stats_print.h.  Sizes in KiB/MiB/GiB and times in
 * µs/ms/s as a person reads them; JSON keeps bytes and nanoseconds.
 */
#include <inttypes.h>
#include <string.h>

#include "stats_print.h"

static const char *flush_state_name(uint32_t s)
{
	switch (s) {
	case ORDFS_FLUSH_OK: return "ok";
	case ORDFS_FLUSH_FAILING: return "failing (writes kept and retried)";
	case ORDFS_FLUSH_UNSUPPORTED: return "unsupported by the image (skipped: unsafe on power loss)";
	case ORDFS_FLUSH_DISABLED: return "disabled (nobarrier: unsafe on power loss)";
	case ORDFS_FLUSH_READONLY: return "stopped after an error (read-only)";
	default: return "unknown";
	}
}

static const char *flush_state_key(uint32_t s)
{
	static const char *const keys[] = { "ok", "failing", "unsupported", "disabled", "read-only" };
	return s < 5 ? keys[s] : "unknown";
}

static void bytes(char *buf, size_t n, uint64_t v)
{
	if (v >= (1ull << 30))
		snprintf(buf, n, "%.1f GiB", (double)v / (double)(1ull << 30));
	else if (v >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", (double)v / (double)(1ull << 20));
	else
		snprintf(buf, n, "%.1f KiB", (double)v / 1024.0);
}

static void duration(char *buf, size_t n, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, n, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, n, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.0f µs", (double)ns / 1e3);
}

void stats_print_text(FILE *out, const char *mountpoint, const struct ordfs_stats *st)
{
	char a[32], b[32], c[32], d[32], e[32], f[32];
	uint64_t bs = st->block_size;
	fprintf(out, "%s\n", mountpoint);
	fprintf(out, "  options:        %s\n", st->options);
	bytes(a, sizeof(a), st->journal_used * bs);
	bytes(b, sizeof(b), st->journal_blocks * bs);
	fprintf(out, "  journal:        %s of %s in use (%.0f%%)\n", a, b,
		st->journal_blocks ? 100.0 * (double)st->journal_used / (double)st->journal_blocks
				   : 0.0);
	fprintf(out, "  commits:        %" PRIu64 " (%" PRIu64 " waited for by fsync/sync, %" PRIu64
		" periodic), %" PRIu64 " failed; %" PRIu64 " checkpoints\n", st->commits,
		st->commits_requested, st->commits - st->commits_requested, st->commit_failures,
		st->checkpoints);
	fprintf(out, "  flushes:        %" PRIu64 " (%" PRIu64 " skipped: nothing new), %" PRIu64
		" failed flushes, %" PRIu64 " failed writes\n", st->flushes, st->flushes_skipped,
		st->flush_errors, st->write_errors);
	fprintf(out, "  flush state:    %s", flush_state_name(st->flush_state));
	if (st->retained_blocks && st->flush_state == ORDFS_FLUSH_FAILING)
		fprintf(out, ", %" PRIu64 " blocks kept", st->retained_blocks);
	fputc('\n', out);
	bytes(a, sizeof(a), st->dirty_bytes);
	bytes(b, sizeof(b), st->dirty_limit_bytes);
	fprintf(out, "  dirty data:     %s (limit %s)\n", a, b);
	bytes(a, sizeof(a), st->write_bytes);
	bytes(b, sizeof(b), st->copy_range_bytes);
	fprintf(out, "  data in:        %s written, %s copied in the image\n", a, b);
	if (st->transport[0] && strcmp(st->transport, "io_uring") == 0)
		fprintf(out, "  transport:      io_uring: %u queues, %u threads (at most %u on one "
			"queue); %" PRIu64 " requests through the rings, %" PRIu64 " on /dev/fuse\n",
			st->uring_queues, st->uring_threads, st->uring_threads_peak_queue,
			st->uring_requests, st->dev_requests);
	else if (st->transport[0])
		fprintf(out, "  transport:      /dev/fuse (%s)\n", st->transport_note);
	if (!st->fsyncs) {
		fprintf(out, "  fsync latency:  no fsync since mount\n");
		return;
	}
	duration(a, sizeof(a), st->fsync_mean_ns);
	duration(b, sizeof(b), st->fsync_p50_ns);
	duration(c, sizeof(c), st->fsync_p90_ns);
	duration(d, sizeof(d), st->fsync_p99_ns);
	duration(e, sizeof(e), st->fsync_p999_ns);
	duration(f, sizeof(f), st->fsync_max_ns);
	fprintf(out, "  fsync latency:  %" PRIu64 " calls: mean %s, p50 %s, p90 %s, p99 %s, "
		"p99.9 %s, max %s\n", st->fsyncs, a, b, c, d, e, f);
}

/* JSON string: the options have no quotes or backslashes, but say so. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, out);
	}
	fputc('"', out);
}

void stats_print_json(FILE *out, const struct ordfs_stats *st)
{
	fprintf(out, "{\"version\": %u, \"options\": ", st->version);
	json_string(out, st->options);
	fprintf(out, ", \"block_size\": %u", st->block_size);
	fprintf(out, ", \"journal\": {\"bytes\": %" PRIu64 ", \"used_bytes\": %" PRIu64 "}",
		st->journal_blocks * st->block_size, st->journal_used * st->block_size);
	fprintf(out, ", \"commits\": {\"total\": %" PRIu64 ", \"waited_for\": %" PRIu64
		", \"periodic\": %" PRIu64 ", \"failed\": %" PRIu64 "}, \"checkpoints\": %" PRIu64,
		st->commits, st->commits_requested, st->commits - st->commits_requested,
		st->commit_failures, st->checkpoints);
	fprintf(out, ", \"flushes\": {\"issued\": %" PRIu64 ", \"skipped\": %" PRIu64
		", \"failed\": %" PRIu64 ", \"failed_writes\": %" PRIu64 ", \"state\": \"%s\""
		", \"kept_blocks\": %" PRIu64 "}", st->flushes, st->flushes_skipped,
		st->flush_errors, st->write_errors, flush_state_key(st->flush_state),
		st->retained_blocks);
	fprintf(out, ", \"dirty\": {\"bytes\": %" PRIu64 ", \"limit_bytes\": %" PRIu64 "}",
		st->dirty_bytes, st->dirty_limit_bytes);
	fprintf(out, ", \"data_in\": {\"written_bytes\": %" PRIu64 ", \"copied_bytes\": %" PRIu64 "}",
		st->write_bytes, st->copy_range_bytes);
	fprintf(out, ", \"transport\": {\"name\": ");
	json_string(out, st->transport);
	fprintf(out, ", \"note\": ");
	json_string(out, st->transport_note);
	fprintf(out, ", \"uring_queues\": %u, \"uring_threads\": %u, \"uring_threads_peak_queue\": %u"
		", \"uring_requests\": %" PRIu64 ", \"dev_requests\": %" PRIu64 "}",
		st->uring_queues, st->uring_threads, st->uring_threads_peak_queue,
		st->uring_requests, st->dev_requests);
	fprintf(out, ", \"fsync\": {\"calls\": %" PRIu64 ", \"mean_ns\": %" PRIu64
		", \"p50_ns\": %" PRIu64 ", \"p90_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64
		", \"p999_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 "}}\n", st->fsyncs,
		st->fsync_mean_ns, st->fsync_p50_ns, st->fsync_p90_ns, st->fsync_p99_ns,
		st->fsync_p999_ns, st->fsync_max_ns);
}
