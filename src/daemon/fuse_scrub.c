/*
 * fuse_scrub.c - the daemon's side of the online scrub (ORDFS_IOC_SCRUB,
 * ordfsctl scrub): runs ordfs_scrub (check/scrub.h) on the request's own
 * thread at idle priority, and hands back the counts and the first lines
 * of what it found.
 *
 * Rules:
 *  - The scrub runs on a thread of its own, started for it at nice 19 and
 *    at the lowest best-effort I/O priority (ioprio_set, as ionice -c2
 *    -n7), and joined before the reply: the request thread that waits for
 *    it keeps its priority (a user's daemon could not raise a lowered one
 *    back).  Not the idle class: the scrub reads bitmap blocks holding the
 *    allocator's lock, and an idle-class read may wait for ever behind a
 *    busy disk (BFQ), with every allocating writer queued behind it.
 *  - Every problem goes to the daemon's log (the scrub logs it); the
 *    reply holds the counts and the first ORDFS_SCRUB_LINES.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fuse_glue.h"
#include "../fs.h"
#include "../ordfs_ioctl.h"
#include "../check/scrub.h"

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_BE 2
#define IOPRIO_BE_LOWEST 7

static void keep_line(void *ctx, enum check_problem code, const char *msg)
{
	struct ordfs_scrub *out = ctx;
	if (out->lines >= ORDFS_SCRUB_LINES)
		return;
	snprintf(out->line[out->lines++], ORDFS_SCRUB_LINE_LEN, "%s: %s",
		 check_problem_name(code), msg);
}

struct scrub_run {
	struct ordfs *fs;
	struct ordfs_scrub *out;
	struct scrub_result res;
	int err;
};

static void *scrub_thread(void *arg)
{
	struct scrub_run *run = arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	(void)setpriority(PRIO_PROCESS, (id_t)tid, 19);
	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid,
		      IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT | IOPRIO_BE_LOWEST);
	run->err = ordfs_scrub(run->fs, &run->res);
	return NULL;
}

int daemon_scrub(struct daemon_ctx *dc, struct ordfs_scrub *out)
{
	memset(out, 0, sizeof(*out));
	struct scrub_run run = { .fs = dc->fs, .out = out,
				 .res = { .report = keep_line, .ctx = out } };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t th;
	int rc = pthread_create(&th, NULL, scrub_thread, &run);
	if (rc)
		return -rc;
	pthread_join(th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	out->inodes = run.res.inodes;
	out->dirs = run.res.dirs;
	out->blocks = run.res.blocks;
	out->problems = run.res.problems;
	out->elapsed_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			  (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	return run.err;
}
