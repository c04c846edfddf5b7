/*
 * test_mnt_dio.c - direct writes never leave older pages in the kernel's
 * page cache (issue 25, part 3; modelled on xfstests generic/451), through
 * the real daemon.
 *
 * One process rewrites a 1 MiB file again and again with O_DIRECT, each
 * round a new pattern (generation g: mnt_pattern seed DIO_SEED + g), by
 * Linux AIO (io_setup/io_submit/io_getevents, the raw syscalls) or by a
 * synchronous pwrite; buffered readers in other processes read the file
 * all the while (some reopening it every pass, one holding one fd open),
 * so their pages are cached across opens (fi->keep_cache) and some of
 * their reads are answered while a write is in flight.  After each write
 * has completed, the writer reads the whole file through a fd it holds
 * open and through a fresh open, both buffered: every byte must be
 * generation g.  A page of generation g - 1 is the bug: the kernel kept a
 * page a reader filled with the old bytes while the write was in flight
 * (an AIO write that the kernel returns as queued skips the invalidation
 * after the write; the daemon turns asynchronous direct I/O off,
 * design/caches.md, "What the kernel caches", direct writes).  AIO under
 * relatime, noatime and -o writeback_cache, and a synchronous pwrite (always
 * invalidated after
 * the write) under relatime.
 *
 * Rules: readers are children that die with the test (PR_SET_PDEATHSIG),
 * never assert (they exit non-zero on a failed or short read, which the
 * test asserts after stopping them) and stop when the shared stop flag is
 * set.  Each test runs ORDFS_DIO_SECONDS (default 3) seconds of rounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define FILE_BYTES (1u << 20)
#define PAGE_BYTES 4096u
#define READ_CHUNK (128u << 10)
#define REOPENING_READERS 3
#define READERS (REOPENING_READERS + 1) /* and one that holds its fd */
#define DIO_SEED 0xd10000u
#define AIO_WAIT_SECONDS 60

enum dio_how { DIO_AIO, DIO_SYNC };

/* What the writer and the readers share (an anonymous shared mapping). */
struct shared {
	atomic_int stop;
	atomic_ulong passes; /* whole-file reads the readers finished */
};

static uint64_t seed_of(unsigned gen)
{
	return DIO_SEED + gen;
}

static unsigned run_seconds(void)
{
	const char *s = getenv("ORDFS_DIO_SECONDS");
	long v = s ? strtol(s, NULL, 10) : 0;
	return v > 0 ? (unsigned)v : 3;
}

/* ---- the readers ------------------------------------------------------- */

/* One buffered pass over fd from offset 0: 0, or -1 on an error or a
 * short file. */
static int read_pass(int fd, char *buf)
{
	size_t got = 0;
	while (got < FILE_BYTES) {
		ssize_t n = pread(fd, buf, READ_CHUNK, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* A reader's whole life: reopening the file for every pass, or holding
 * one fd open.  Exit codes: 0 stopped, 2 open failed, 3 a read failed. */
static void reader_main(const char *path, struct shared *sh, bool reopen, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	char *buf = malloc(READ_CHUNK);
	int fd = reopen ? -1 : open(path, O_RDONLY);
	if (!buf || (!reopen && fd < 0))
		_exit(2);
	while (!atomic_load(&sh->stop)) {
		if (reopen && (fd = open(path, O_RDONLY)) < 0)
			_exit(2);
		if (read_pass(fd, buf) != 0)
			_exit(3);
		if (reopen)
			close(fd);
		atomic_fetch_add(&sh->passes, 1);
	}
	_exit(0);
}

static void start_readers(const char *path, struct shared *sh, pid_t *pids)
{
	pid_t parent = getpid();
	for (int i = 0; i < READERS; i++) {
		pids[i] = fork();
		ck_assert_msg(pids[i] >= 0, "fork: %s", strerror(errno));
		if (pids[i] == 0)
			reader_main(path, sh, i < REOPENING_READERS, parent);
	}
}

/* Stops the readers; each must have exited 0 (every read full). */
static void stop_readers(struct shared *sh, const pid_t *pids)
{
	atomic_store(&sh->stop, 1);
	for (int i = 0; i < READERS; i++) {
		int status = 0;
		int err = mnt_wait_pid(pids[i], 60000, &status);
		if (err) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
		}
		ck_assert_msg(err == 0, "reader %d did not stop within 60 s", i);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "reader %d (%s) failed: status 0x%x (2: open, 3: a short or failed "
			      "read)", i, i < REOPENING_READERS ? "reopening" : "holding its fd",
			      status);
	}
}

/* ---- the writer -------------------------------------------------------- */

struct writer {
	int fd;                /* O_DIRECT */
	enum dio_how how;
	aio_context_t ctx;     /* DIO_AIO */
	char *buf;             /* FILE_BYTES, page aligned */
};

static void writer_open(struct writer *w, const char *path, enum dio_how how)
{
	memset(w, 0, sizeof(*w));
	w->how = how;
	w->fd = open(path, O_RDWR | O_DIRECT);
	ck_assert_msg(w->fd >= 0, "open O_DIRECT: %s", strerror(errno));
	void *p = NULL;
	ck_assert_int_eq(posix_memalign(&p, PAGE_BYTES, FILE_BYTES), 0);
	w->buf = p;
	if (how == DIO_AIO)
		ck_assert_msg(syscall(SYS_io_setup, 1, &w->ctx) == 0, "io_setup: %s",
			      strerror(errno));
}

static void writer_close(struct writer *w)
{
	if (w->how == DIO_AIO)
		ck_assert_msg(syscall(SYS_io_destroy, w->ctx) == 0, "io_destroy: %s",
			      strerror(errno));
	MNT_OK(close(w->fd));
	free(w->buf);
}

/* One asynchronous direct write of the whole buffer at 0, waited for. */
static void aio_write_whole(struct writer *w)
{
	struct iocb cb;
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (uint32_t)w->fd;
	cb.aio_buf = (uint64_t)(uintptr_t)w->buf;
	cb.aio_nbytes = FILE_BYTES;
	cb.aio_offset = 0;
	struct iocb *cbs[1] = { &cb };
	long n = syscall(SYS_io_submit, w->ctx, 1L, cbs);
	ck_assert_msg(n == 1, "io_submit: %ld (%s)", n, n < 0 ? strerror(errno) : "none taken");
	struct io_event ev;
	struct timespec limit = { AIO_WAIT_SECONDS, 0 };
	do
		n = syscall(SYS_io_getevents, w->ctx, 1L, 1L, &ev, &limit);
	while (n < 0 && errno == EINTR);
	ck_assert_msg(n == 1, "io_getevents: %ld (%s)", n,
		      n < 0 ? strerror(errno) : "no completion within the limit");
	ck_assert_msg(ev.res == (int64_t)FILE_BYTES, "AIO direct write: res %lld",
		      (long long)ev.res);
}

/* Writes generation gen over the whole file, and returns once the write
 * has completed. */
static void write_generation(struct writer *w, unsigned gen)
{
	mnt_pattern_fill(w->buf, FILE_BYTES, seed_of(gen), 0);
	if (w->how == DIO_AIO)
		aio_write_whole(w);
	else
		mnt_pwrite_all(w->fd, w->buf, FILE_BYTES, 0);
}

/* Reads the whole file through fd (buffered) and asserts that it is
 * generation gen; names the first wrong page and whose bytes it holds. */
static void expect_generation(int fd, char *buf, unsigned gen, const char *through)
{
	size_t got = 0;
	while (got < FILE_BYTES) {
		ssize_t n = pread(fd, buf + got, FILE_BYTES - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_msg(n > 0, "generation %u: read through %s at %zu: %s", gen, through,
			      got, n < 0 ? strerror(errno) : "end of file");
		got += (size_t)n;
	}
	size_t bad = mnt_pattern_mismatch(buf, FILE_BYTES, seed_of(gen), 0);
	if (bad == FILE_BYTES)
		return;
	size_t page = bad / PAGE_BYTES * PAGE_BYTES;
	bool previous = gen > 0 && mnt_pattern_mismatch(buf + page, PAGE_BYTES,
							seed_of(gen - 1), page) == PAGE_BYTES;
	unsigned stale = 0;
	for (size_t p = 0; p < FILE_BYTES; p += PAGE_BYTES)
		stale += mnt_pattern_mismatch(buf + p, PAGE_BYTES, seed_of(gen), p) != PAGE_BYTES;
	ck_abort_msg("after the direct write of generation %u completed, a buffered read "
		     "through %s returned %s at offset %zu (%u of %u pages wrong)", gen, through,
		     previous ? "the previous generation's page" : "bytes of no expected generation",
		     bad, stale, FILE_BYTES / PAGE_BYTES);
}

/* Rounds of direct writes under buffered readers for run_seconds():
 * after each completed write, a held fd and a fresh open must read it. */
static void direct_writes_under_readers(const char *opts, enum dio_how how)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, opts);
	const char *f = mnt_path(&m, "f");
	mnt_write_pattern(f, FILE_BYTES, seed_of(0), 0644);

	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(sh != MAP_FAILED);
	atomic_init(&sh->stop, 0);
	atomic_init(&sh->passes, 0);
	int held = open(f, O_RDONLY);
	MNT_OK(held);
	char *check = malloc(FILE_BYTES);
	ck_assert(check);
	struct writer w;
	writer_open(&w, f, how);

	pid_t pids[READERS];
	start_readers(f, sh, pids);
	uint64_t deadline = mnt_now_ms() + run_seconds() * 1000u;
	unsigned gen = 0;
	while (mnt_now_ms() < deadline) {
		gen++;
		write_generation(&w, gen);
		expect_generation(held, check, gen, "a fd held open");
		int fresh = open(f, O_RDONLY);
		MNT_OK(fresh);
		expect_generation(fresh, check, gen, "a fresh open");
		MNT_OK(close(fresh));
	}
	unsigned long passes = atomic_load(&sh->passes);
	stop_readers(sh, pids);
	printf("%s %s: %u direct writes, %lu reader passes\n",
	       how == DIO_AIO ? "aio" : "sync", opts ? opts : "relatime", gen, passes);
	/* The readers must really have raced the writes. */
	ck_assert_msg(passes >= gen, "only %lu reader passes in %u rounds", passes, gen);

	writer_close(&w);
	MNT_OK(close(held));
	free(check);
	munmap(sh, sizeof(*sh));
	/* And the daemon holds the last generation (nothing cached now). */
	mnt_stop(&m);
	mnt_start(&m, opts);
	mnt_expect_pattern(f, FILE_BYTES, seed_of(gen));
	mnt_finish(&m);
}

START_TEST(test_aio_direct_writes_relatime)
{
	direct_writes_under_readers(NULL, DIO_AIO);
}
END_TEST

START_TEST(test_aio_direct_writes_noatime)
{
	direct_writes_under_readers("noatime", DIO_AIO);
}
END_TEST

START_TEST(test_aio_direct_writes_writeback_cache)
{
	direct_writes_under_readers("writeback_cache", DIO_AIO);
}
END_TEST

START_TEST(test_sync_direct_writes_relatime)
{
	direct_writes_under_readers(NULL, DIO_SYNC);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted direct I/O");
	TCase *tc = tcase_create("dio");
	tcase_set_timeout(tc, 120 + 2 * run_seconds());
	tcase_add_test(tc, test_aio_direct_writes_relatime);
	tcase_add_test(tc, test_aio_direct_writes_noatime);
	tcase_add_test(tc, test_aio_direct_writes_writeback_cache);
	tcase_add_test(tc, test_sync_direct_writes_relatime);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
