/*
 * test_mnt_stats.c - `ordfsctl stats` through the real daemon: the options
 * in force, commits waited for, flushes, dirty data and fsync latency move
 * as the workload says they must; --json is one object; a path outside an
 * ordfs mount is refused.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "ordfs_ioctl.h"

static const char *bin(const char *name)
{
	const char *p = getenv(name);
	ck_assert_msg(p && *p, "%s is not set", name);
	return p;
}

START_TEST(test_stats_follow_the_workload)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, "data=journal,noatime,commit=30");
	struct ordfs_stats st;
	mnt_get_stats(&m, &st);
	ck_assert_msg(strstr(st.options, "data=journal") && strstr(st.options, "commit=30") &&
		      strstr(st.options, "noatime") && strstr(st.options, "barrier"),
		      "options in force: %s", st.options);
	ck_assert_uint_eq(st.fsyncs, 0);
	ck_assert_uint_eq(st.flush_state, ORDFS_FLUSH_OK);
	ck_assert_uint_gt(st.journal_blocks, 0);
	uint64_t commits0 = st.commits, waited0 = st.commits_requested;

	/* 1 MiB not yet written back: dirty (commit=30 keeps the writeback
	 * thread away for the length of the test). */
	char *buf = malloc(1 << 20);
	ck_assert(buf);
	memset(buf, 7, 1 << 20);
	int fd = open(mnt_path(&m, "big"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, buf, 1 << 20);
	mnt_get_stats(&m, &st);
	ck_assert_uint_ge(st.dirty_bytes, 1 << 20);
	ck_assert_uint_ge(st.dirty_limit_bytes, st.dirty_bytes);
	MNT_OK(fsync(fd));
	close(fd);
	mnt_get_stats(&m, &st);
	ck_assert_uint_eq(st.dirty_bytes, 0);

	/* Ten more fsyncs that each commit. */
	fd = open(mnt_path(&m, "log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 10; i++) {
		mnt_write_all(fd, "line\n", 5);
		MNT_OK(fsync(fd));
	}
	close(fd);
	mnt_get_stats(&m, &st);
	ck_assert_uint_ge(st.fsyncs, 11);
	ck_assert_uint_ge(st.commits, commits0 + 11);
	/* the ten appends each waited for a commit; the 1 MiB in data=journal
	 * may have committed earlier for log space, which nobody waits for */
	ck_assert_uint_ge(st.commits_requested, waited0 + 10);
	ck_assert_uint_ge(st.flushes, 11); /* data=journal: F2 of each commit (no F1) */
	ck_assert_uint_gt(st.fsync_max_ns, 0);
	ck_assert(st.fsync_p50_ns <= st.fsync_p99_ns && st.fsync_p99_ns <= st.fsync_max_ns);
	ck_assert(st.fsync_mean_ns <= st.fsync_max_ns);
	ck_assert_uint_eq(st.commit_failures + st.flush_errors + st.write_errors, 0);

	/* The command line: text and JSON. */
	struct mnt_run_result r;
	char *text[] = { (char *)bin("ORDFSCTL_BIN"), "stats", m.mountpoint, NULL };
	mnt_run(text, NULL, &r);
	ck_assert_msg(r.status == 0, "ordfsctl stats: %d %s", r.status, r.err);
	char *json[] = { (char *)bin("ORDFSCTL_BIN"), "stats", "--json", m.mountpoint, NULL };
	mnt_run(json, NULL, &r);
	ck_assert_msg(r.status == 0, "ordfsctl stats --json: %d %s", r.status, r.err);
	char *outside[] = { (char *)bin("ORDFSCTL_BIN"), "stats", m.dir, NULL };
	mnt_run(outside, NULL, &r);
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "not on a mounted ordfs"), "%s", r.err);
	free(buf);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_finish(&m);
}
END_TEST

/* Threads of process pid whose best-effort I/O priority level is
 * `level` (the commit thread's, set by journal_ioprio=). */
static int threads_with_ioprio(pid_t pid, int level)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		long prio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, tid);
		n += prio == ((2 /* IOPRIO_CLASS_BE */ << 13) | level);
	}
	closedir(d);
	return n;
}

/* What ordfsctl prints, checked on stdout through a pipe; the options
 * given are in force. */
START_TEST(test_stats_output)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	mnt_start(&m, "dirty_limit=16M,journal_ioprio=6");
	ck_assert_int_eq(threads_with_ioprio(m.daemon, 6), 1); /* the commit thread */
	mnt_make_file(mnt_path(&m, "f"), 0644, "x");
	int fd = open(mnt_path(&m, "f"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	close(fd);
	char cmd[4 * MNT_FILE_LEN + 64];
	snprintf(cmd, sizeof(cmd), "'%s' stats '%s'; '%s' stats --json '%s'", bin("ORDFSCTL_BIN"),
		 m.mountpoint, bin("ORDFSCTL_BIN"), m.mountpoint);
	FILE *p = popen(cmd, "r");
	ck_assert(p);
	char out[8192];
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	ck_assert_int_eq(pclose(p), 0);
	static const char *const want[] = { "options:", "data=ordered", "relatime", "journal:",
					    "commits:", "flushes:", "flush state:    ok",
					    "dirty data:", "fsync latency:  ", "\"fsync\": {\"calls\": ",
					    "\"state\": \"ok\"", "journal_ioprio=6",
					    "dirty_limit=16384K", "(limit 16.0 MiB)" };
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(out, want[i]), "no '%s' in:\n%s", want[i], out);
	const char *brace = strchr(out, '{');
	ck_assert(brace && out[n - 2] == '}' && out[n - 1] == '\n');
	mnt_stop(&m);
	mnt_check(&m);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted stats");
	TCase *tc = tcase_create("stats");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stats_follow_the_workload);
	tcase_add_test(tc, test_stats_output);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
