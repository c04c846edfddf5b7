/*
 * crash.c - the crash-state harness's entry point: picks a tier, runs its
 * workloads (workloads.c) on worker processes, and prints one summary line.
 *
 * Usage: crash [--long] [--seed N] [--jobs N] [--every N] [--index N] [-v]
 *   bounded tier (CI): the handwritten workloads in the three data modes
 *     and both journal sizes, all 180 1-operation workloads, a seeded
 *     sample of 2-operation workloads in data=ordered and a smaller one in
 *     writeback and journal, sampled 3-operation workloads, and six long
 *     runs (each mode, each journal size); then the tail workloads
 *     (workloads.c): every tail operation with every persistence on three
 *     files in data=ordered and on one in the other modes (400), 200
 *     sampled pairs, and log-file runs in each mode; last the handwritten
 *     online grow in each mode and journal size (6);
 *   --long: every 2-operation sequence (32,400) in data=ordered, larger
 *     samples elsewhere, twelve long runs of 400 operations, every pair
 *     of tail operations on one file (6400) and 2000 sampled ones;
 *   --jobs N: N worker processes (default: 2 for --long, else 1);
 *   --every N: about one workload in N, picked by a hash of its index
 *     (a stride would alias with the tier's i % 2/3/4 choices); the
 *     sanitizer builds' suite runs a quarter, the normal build all;
 *   --index N: only workload N of the tier (as named in a violation).
 * Summary: "crash: W workloads, S crash states checked, V violations" and
 * the time taken.  Exit 0 only with no violation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

struct totals {
	uint64_t workloads, states, violations;
};

/* Is workload i in the 1-in-every sample?  Chosen by a hash of the index,
 * not by a stride: the tier picks data modes, journal sizes and kinds by
 * i % 2, 3, 4 and 180, and a stride of 4 would keep only some of them. */
static bool sampled(unsigned i, unsigned every)
{
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return every <= 1 || x % every == 0;
}

/* Runs every jobs-th workload from first that is in the sample; totals
 * to fd. */
static void worker(const struct crash_tier *t, unsigned first, unsigned jobs, unsigned every,
		   bool progress, int fd)
{
	unsigned n = crash_tier_count(t);
	for (unsigned i = first; i < n; i += jobs) {
		if (!sampled(i, every))
			continue;
		crash_tier_run(t, i);
		if (progress && crash_workloads_run % 500 == 0)
			fprintf(stderr, "crash: worker %u: %" PRIu64 " workloads, %" PRIu64
				" states, %" PRIu64 " violations\n", first, crash_workloads_run,
				crash_states_checked, crash_violations);
	}
	struct totals tot = { crash_workloads_run, crash_states_checked, crash_violations };
	if (write(fd, &tot, sizeof(tot)) != (ssize_t)sizeof(tot))
		_exit(3);
}

int main(int argc, char **argv)
{
	bool longrun = false;
	long only = -1;
	unsigned jobs = 0, every = 1;
	uint64_t seed = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--long") == 0)
			longrun = true;
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
			jobs = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
			every = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--index") == 0 && i + 1 < argc)
			only = atol(argv[++i]);
		else if (strcmp(argv[i], "-v") == 0)
			crash_verbose = true;
		else {
			fprintf(stderr, "usage: crash [--long] [--seed N] [--jobs N] [--every N] [--index N] [-v]\n");
			return 2;
		}
	}
	struct crash_tier t = {
		.fixed = 30, /* 5 handwritten x 3 modes x 2 journals */ .one_op = 180, .two_op = 150, .two_op_other = 60,
		.three_op = 40, .long_runs = 6, .long_ops = 150,
		.tail_one = 400, .tail_two = 200, .logfile = 6,
		.fixed_late = 6, /* grow-online x 3 modes x 2 journals */ .seed = seed,
	};
	if (longrun) {
		t.two_op = 180 * 180;
		t.two_op_all = true;
		t.two_op_other = 4000;
		t.three_op = 4000;
		t.long_runs = 12;
		t.long_ops = 400;
		t.tail_two = 80 * 80 + 2000;
		t.tail_two_all = true;
		t.logfile = 12;
	}
	if (!jobs)
		jobs = longrun ? 2 : 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct totals sum = { 0 };
	if (only >= 0) {
		crash_tier_run(&t, (unsigned)only);
		sum = (struct totals){ crash_workloads_run, crash_states_checked, crash_violations };
	} else {
		int fds[2];
		if (pipe(fds) != 0)
			return 2;
		fflush(NULL);
		for (unsigned j = 0; j < jobs; j++) {
			pid_t pid = fork();
			if (pid < 0)
				return 2;
			if (pid == 0) {
				close(fds[0]);
				worker(&t, j, jobs, every, longrun, fds[1]);
				_exit(0);
			}
		}
		close(fds[1]);
		struct totals tot;
		unsigned got = 0;
		while (read(fds[0], &tot, sizeof(tot)) == (ssize_t)sizeof(tot)) {
			sum.workloads += tot.workloads;
			sum.states += tot.states;
			sum.violations += tot.violations;
			got++;
		}
		int status;
		while (wait(&status) > 0)
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				sum.violations++; /* a worker that crashed counts */
		if (got != jobs)
			sum.violations++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("crash: %" PRIu64 " workloads, %" PRIu64 " crash states checked, %" PRIu64
	       " violations (%.0f s, %u jobs)\n", sum.workloads, sum.states, sum.violations,
	       secs, only >= 0 ? 1 : jobs);
	return sum.violations ? 1 : 0;
}
