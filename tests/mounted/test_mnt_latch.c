/*
 * test_mnt_latch.c - a flush stuck in the disk holds up only the fsync that
 * waits for it, through the real daemon.
 *
 * Owns: the mounted latch test.  Contract with the daemon: with
 * ORDFS_TEST_FLUSH_LATCH=PATH in its environment, every flush of the image
 * waits while the file PATH exists (polled).  The test creates the latch
 * file, fsyncs file A in a thread (it must block), and meanwhile stats,
 * reads, creates, writes, renames, lists and unlinks other files, each of
 * which must complete within a few seconds; a second fsync (of file B)
 * blocks too; removing the latch file lets both fsyncs return 0.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define OP_LIMIT_MS 5000u      /* what "completes promptly" means here */
#define RELEASE_LIMIT_MS 20000u

struct fsync_job {
	int fd;
	atomic_int done;
	int rc, err;
	uint64_t started, finished;
	pthread_t thread;
};

static void *fsync_thread(void *arg)
{
	struct fsync_job *job = arg;
	job->started = mnt_now_ms();
	job->rc = fsync(job->fd);
	job->err = errno;
	job->finished = mnt_now_ms();
	atomic_store(&job->done, 1);
	return NULL;
}

static void start_fsync(struct fsync_job *job, int fd)
{
	memset(job, 0, sizeof(*job));
	job->fd = fd;
	ck_assert_int_eq(pthread_create(&job->thread, NULL, fsync_thread, job), 0);
}

/* Waits up to ms for the job; true if it finished. */
static bool wait_job(struct fsync_job *job, unsigned ms)
{
	uint64_t deadline = mnt_now_ms() + ms;
	while (!atomic_load(&job->done) && mnt_now_ms() < deadline)
		usleep(2000);
	return atomic_load(&job->done);
}

static uint64_t op_start;
static const char *op_name;

static void op_begin(const char *name)
{
	op_name = name;
	op_start = mnt_now_ms();
}

static void op_end(struct fsync_job *blocked)
{
	uint64_t took = mnt_now_ms() - op_start;
	printf("  %-40s %5llu ms\n", op_name, (unsigned long long)took);
	ck_assert_msg(took < OP_LIMIT_MS, "%s took %llu ms while a flush was latched", op_name,
		      (unsigned long long)took);
	ck_assert_msg(!atomic_load(&blocked->done),
		      "the latched fsync returned (rc %d) during '%s'", blocked->rc, op_name);
}

START_TEST(test_latched_flush_blocks_only_its_fsync)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	char latch[PATH_MAX], env[PATH_MAX + 32];
	snprintf(latch, sizeof(latch), "%s", mnt_host_path(&m, "latch"));
	snprintf(env, sizeof(env), "ORDFS_TEST_FLUSH_LATCH=%s", latch);
	mnt_start_env(&m, NULL, env);

	/* other files, committed while the latch is open */
	MNT_OK(mkdir(mnt_path(&m, "other"), 0755));
	for (unsigned i = 0; i < 4; i++)
		mnt_write_pattern(mnt_path(&m, "other/f%u", i), 100000 + i, 10 + i, 0644);
	int fd = open(mnt_path(&m, "other/f0"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));

	/* arm the latch; fsync(A) must block in the flush */
	int lfd = open(latch, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(lfd, 0);
	close(lfd);
	int a = open(mnt_path(&m, "A"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(a, 0);
	uint8_t buf[65536];
	mnt_pattern_fill(buf, sizeof(buf), 1, 0);
	mnt_write_all(a, buf, sizeof(buf));
	struct fsync_job job_a;
	start_fsync(&job_a, a);
	/* long enough for the kernel's attribute and entry caches (1 s) to
	 * expire, so what follows reaches the daemon */
	bool returned = wait_job(&job_a, 1500);
	if (returned)
		ck_abort_msg("fsync returned %d (%s) after %llu ms although the latch file "
			     "exists: the daemon does not honour ORDFS_TEST_FLUSH_LATCH",
			     job_a.rc, strerror(job_a.err),
			     (unsigned long long)(job_a.finished - job_a.started));
	printf("fsync(A) is blocked on the latch; meanwhile:\n");

	struct stat st;
	op_begin("stat other/f1");
	MNT_OK(stat(mnt_path(&m, "other/f1"), &st));
	op_end(&job_a);
	ck_assert_int_eq(st.st_size, 100001);

	op_begin("stat A (its fsync is blocked)");
	MNT_OK(stat(mnt_path(&m, "A"), &st));
	op_end(&job_a);

	op_begin("open+read other/f2 (100002 bytes)");
	mnt_expect_pattern(mnt_path(&m, "other/f2"), 100002, 12);
	op_end(&job_a);

	op_begin("create+write+close other/new (300000 bytes)");
	mnt_write_pattern(mnt_path(&m, "other/new"), 300000, 20, 0644);
	op_end(&job_a);

	op_begin("read other/new back");
	mnt_expect_pattern(mnt_path(&m, "other/new"), 300000, 20);
	op_end(&job_a);

	op_begin("append to other/f3");
	fd = open(mnt_path(&m, "other/f3"), O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	mnt_write_all(fd, "appended", 8);
	MNT_OK(close(fd));
	op_end(&job_a);

	op_begin("mkdir other/dir");
	MNT_OK(mkdir(mnt_path(&m, "other/dir"), 0755));
	op_end(&job_a);

	op_begin("rename other/f1 -> other/dir/f1");
	MNT_OK(rename(mnt_path(&m, "other/f1"), mnt_path(&m, "other/dir/f1")));
	op_end(&job_a);

	op_begin("unlink other/f0");
	MNT_OK(unlink(mnt_path(&m, "other/f0")));
	op_end(&job_a);

	op_begin("readdir other");
	DIR *d = opendir(mnt_path(&m, "other"));
	ck_assert(d);
	unsigned n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	op_end(&job_a);
	ck_assert_uint_eq(n, 2 + 4); /* . .. f2 f3 new dir */

	op_begin("statfs");
	struct statvfs v;
	MNT_OK(statvfs(m.mountpoint, &v));
	op_end(&job_a);

	/* a second fsync, of another file, waits on the latch as well */
	int b = open(mnt_path(&m, "other/f2"), O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(b, 0);
	mnt_pwrite_all(b, "B", 1, 0);
	struct fsync_job job_b;
	start_fsync(&job_b, b);
	ck_assert_msg(!wait_job(&job_b, 500), "fsync(B) returned %d with the latch held",
		      job_b.rc);
	ck_assert_msg(!atomic_load(&job_a.done), "fsync(A) returned with the latch held");

	/* release: both return 0 */
	uint64_t released = mnt_now_ms();
	MNT_OK(unlink(latch));
	ck_assert_msg(wait_job(&job_a, RELEASE_LIMIT_MS), "fsync(A) still blocked %u s after "
		      "the latch was released", RELEASE_LIMIT_MS / 1000);
	ck_assert_msg(wait_job(&job_b, RELEASE_LIMIT_MS), "fsync(B) still blocked %u s after "
		      "the latch was released", RELEASE_LIMIT_MS / 1000);
	pthread_join(job_a.thread, NULL);
	pthread_join(job_b.thread, NULL);
	ck_assert_msg(job_a.rc == 0, "fsync(A): %s", strerror(job_a.err));
	ck_assert_msg(job_b.rc == 0, "fsync(B): %s", strerror(job_b.err));
	printf("fsync(A) blocked %llu ms, returned %llu ms after the release; "
	       "fsync(B) returned %llu ms after it\n",
	       (unsigned long long)(job_a.finished - job_a.started),
	       (unsigned long long)(job_a.finished - released),
	       (unsigned long long)(job_b.finished - released));
	MNT_OK(close(a));
	MNT_OK(close(b));

	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "A"), sizeof(buf), 1);
	mnt_expect_pattern(mnt_path(&m, "other/new"), 300000, 20);
	mnt_expect_pattern(mnt_path(&m, "other/dir/f1"), 100001, 11);
	mnt_finish(&m);
}
END_TEST

static Suite *latch_suite(void)
{
	Suite *s = suite_create("mounted_latch");
	TCase *tc = tcase_create("latch");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_latched_flush_blocks_only_its_fsync);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (!MNT_TEST_HOOKS) /* the latch is ORDFS_TEST_FLUSH_LATCH */
		return mnt_skip_program(MNT_NO_TEST_HOOKS);
	return mnt_run_suite(latch_suite());
}
