/*
 * mnt_helpers.h - fixtures for the mounted tests: the real daemon on a real
 * image, driven through ordinary system calls.
 *
 * Owns: where the binaries are (ORDFS_BIN, MKFS_BIN from meson), the
 * per-program temporary root (/tmp/ordfs-mnt.XXXXXX) and one directory per
 * test inside it (image, mountpoint, daemon logs), starting and stopping
 * daemons, running commands with their stderr captured, the checker run
 * on the image after every unmount, and the content patterns tests write.
 *
 * Rules:
 *  - A program skips (exit 77, one line saying why) only when /dev/fuse is
 *    missing or cannot be opened, or when it needs the daemon's test hooks
 *    for every test and the build has none (-Dtest_hooks=false); anything
 *    else that goes wrong fails.  A program with only some tests that need
 *    the hooks adds those with MNT_ADD_HOOK_TEST, which prints one SKIP
 *    line per test left out.
 *  - Every test that mounts ends with mnt_stop() + mnt_check(): the daemon
 *    must exit 0 after `fusermount3 -u`, and the checker must find no
 *    problem on a clean image.
 *  - A failing test leaves its mounts and daemons behind (Check's child
 *    exits at the failed assertion); mnt_run_suite() then unmounts
 *    everything under the root lazily, kills the daemons it started there
 *    and removes the root, so one failure never wedges the next program.
 */
#ifndef ORDFS_MNT_HELPERS_H
#define ORDFS_MNT_HELPERS_H

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* ---- assertions on system calls ------------------------------------- */

/* expr must not be -1; the message carries errno. */
#define MNT_OK(expr)                                                                   \
	do {                                                                           \
		errno = 0;                                                             \
		long mnt_ok_rc_ = (long)(expr);                                        \
		ck_assert_msg(mnt_ok_rc_ != -1, "%s failed: %s", #expr, strerror(errno)); \
	} while (0)

/* expr must fail with errno e. */
#define MNT_FAILS(expr, e)                                                             \
	do {                                                                           \
		errno = 0;                                                             \
		long mnt_fails_rc_ = (long)(expr);                                     \
		int mnt_fails_errno_ = errno;                                          \
		ck_assert_msg(mnt_fails_rc_ == -1 && mnt_fails_errno_ == (e),          \
			      "%s: expected %s, got rc %ld (%s)", #expr, strerror(e),  \
			      mnt_fails_rc_, strerror(mnt_fails_errno_));              \
	} while (0)

/* ---- programs and the temporary root ---------------------------------- */

/* Paths of the built daemon and mkfs (ORDFS_BIN, MKFS_BIN). */
const char *mnt_ordfs_bin(void);
const char *mnt_mkfs_bin(void);
/* The program's temporary root directory. */
const char *mnt_root(void);

/* main() of a mounted test program: skip without FUSE, make the root,
 * set umask 0 (modes in tests are exactly what they ask for), run the
 * suite verbosely, clean up.  Returns the exit code. */
int mnt_run_suite(Suite *s);

/* ---- the daemon's test hooks ------------------------------------------ */

/* meson compiles the mounted tests with ORDFS_TEST_HOOKS exactly when the
 * daemon has its test hooks (-Dtest_hooks=true: the ORDFS_TEST_* variables
 * and ORDFS_IOC_TEST_* ioctls, src/daemon/test_hooks.c). */
#ifdef ORDFS_TEST_HOOKS
#define MNT_TEST_HOOKS 1
#else
#define MNT_TEST_HOOKS 0
#endif
#define MNT_NO_TEST_HOOKS                                                              \
	"the daemon was built without its test hooks "                                 \
	"(configure with -Dtest_hooks=true; scripts/build.sh does)"

/* main() of a program whose every test needs the hooks, in a build
 * without them: prints "SKIP: why" and returns 77. */
int mnt_skip_program(const char *why);
/* Prints "SKIP  test: why" for one test left out. */
void mnt_skip_test(const char *test, const char *why);
/* Adds test fn to tc if the daemon has its test hooks, else says it skips
 * it. */
#define MNT_ADD_HOOK_TEST(tc, fn)                                                      \
	do {                                                                           \
		if (MNT_TEST_HOOKS)                                                    \
			tcase_add_test((tc), fn);                                      \
		else                                                                   \
			mnt_skip_test(#fn, MNT_NO_TEST_HOOKS);                         \
	} while (0)

/* ---- one test's filesystem -------------------------------------------- */

#define MNT_ROOT_LEN 64   /* "/tmp/ordfs-mnt.XXXXXX" */
#define MNT_DIR_LEN 128   /* root + "/t.XXXXXX" */
#define MNT_FILE_LEN 256  /* dir + a short name */

struct mnt {
	char dir[MNT_DIR_LEN];         /* the test's own directory */
	char image[MNT_FILE_LEN];      /* dir/image */
	char mountpoint[MNT_FILE_LEN]; /* dir/mnt */
	char log[MNT_FILE_LEN];        /* stderr of the current -f daemon */
	pid_t daemon;              /* the -f daemon, 0 when none runs */
	unsigned starts;           /* daemons started so far */
	const char *test;          /* the test function, for timings */
	uint64_t started_ms;
};

/* Makes the test directory and an image of size (mkfs.ordfs syntax, e.g.
 * "64M") with mkfs.ordfs -q.  mnt_finish() prints how long the test took. */
#define mnt_setup(m, size) mnt_setup_named((m), (size), __func__)
void mnt_setup_named(struct mnt *m, const char *size, const char *test);
/* Starts `ordfs IMAGE MOUNTPOINT -f [-o opts]` (opts may be NULL) with
 * envvar ("NAME=VALUE", may be NULL) added to its environment, and waits
 * until the mount is live. */
void mnt_start_env(struct mnt *m, const char *opts, const char *envvar);
void mnt_start(struct mnt *m, const char *opts);
/* fusermount3 -u; the daemon must exit 0 and the mount be gone. */
void mnt_stop(struct mnt *m);
/* Is the image in use as a crash would leave it: RECOVER set, CLEAN
 * clear (the next mount replays)?  Read from the image file. */
bool mnt_image_in_use(struct mnt *m);
/* Does the image's superblock record an error (ORDFS_STATE_ERROR: a
 * read-write mount waits for fsck)? */
bool mnt_image_error_recorded(struct mnt *m);
/* Runs the checker on the image: no problem, superblock clean, journal
 * empty. */
void mnt_check(struct mnt *m);
/* mnt_stop (if a daemon runs) + mnt_check + remove the test directory. */
void mnt_finish(struct mnt *m);
/* fusermount3 -u; returns the daemon's exit code (128 + signal if it was
 * killed) and asserts the mount is gone.  For tests that expect a daemon
 * to fail its unmount (an aborted journal). */
int mnt_stop_status(struct mnt *m);
/* kill -9 of the daemon, then fusermount3 -u -z of the dead mount. */
void mnt_kill9(struct mnt *m);
/* Removes the test directory without checking the image (a test that
 * left it damaged on purpose). */
void mnt_discard(struct mnt *m);
/* Path under the mountpoint (printf format); the result lives in one of
 * a few rotating static buffers. */
const char *mnt_path(struct mnt *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Path under the test directory (outside the mount). */
const char *mnt_host_path(struct mnt *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct ordfs_stats;
/* ORDFS_IOC_STATS on the mount (ordfsctl stats' figures); asserts the
 * ioctl works and speaks this build's stats version. */
void mnt_get_stats(struct mnt *m, struct ordfs_stats *st);

/* Does path have another st_dev than its parent directory? */
bool mnt_is_live(const char *mountpoint);
/* Waits until mountpoint is live: 0, -ETIMEDOUT, or -ECHILD if daemon
 * (when > 0) exited first (its status in *status). */
int mnt_wait_live(const char *mountpoint, pid_t daemon, unsigned timeout_ms, int *status);
/* Waits for pid to exit: 0 and the wait status, or -ETIMEDOUT. */
int mnt_wait_pid(pid_t pid, unsigned timeout_ms, int *status);
/* Waits until nobody holds the image's flock (a daemon that detached
 * has exited): 0 or -ETIMEDOUT. */
int mnt_wait_unlocked(const char *image, unsigned timeout_ms);
/* Prints a file (a daemon log) to stderr, prefixed. */
void mnt_dump_file(const char *path, const char *prefix);
/* Whole contents of a host file (malloc'd, NUL-terminated), or NULL. */
char *mnt_slurp(const char *path, size_t *len);
/* Does the file at path hold exactly these bytes (what mnt_slurp would
 * return)?  Read a chunk at a time
 * (no copy of the whole file: under the sanitizers a big image's copy
 * costs seconds). */
bool mnt_file_equals(const char *path, const char *bytes, size_t len);

/* ---- running commands ------------------------------------------------- */

struct mnt_run_result {
	int status;      /* exit code; 128 + signal if killed */
	char err[4096];  /* stderr (truncated) */
	size_t err_len;
	unsigned lines;  /* newline count of stderr */
};

/* Runs argv[0] (a path) to completion with stderr captured and stdout to
 * /dev/null; envvar ("NAME=VALUE") is added to its environment. */
void mnt_run(char *const argv[], const char *envvar, struct mnt_run_result *r);
/* How long an unmount is tried again while the kernel says the mount is
 * busy: the last references of files a test (or a killed worker) closed
 * are dropped after close() returns (a deferred fput, a FUSE release in
 * flight), later on a loaded machine.  A mount still busy past it fails
 * the unmount: a leaked open file is not hidden by a lazy unmount. */
#define MNT_BUSY_TIMEOUT_MS 30000u
/* Runs an unmount command (run(argv, r): mnt_run, or a run as another
 * user) and runs it again, with a backoff of 10 ms doubling to 500 ms,
 * while it fails saying the mount is busy (EBUSY), for
 * MNT_BUSY_TIMEOUT_MS at most; *r is the last run's result. */
void mnt_unmount_retrying(void (*run)(char *const argv[], struct mnt_run_result *r),
			  char *const argv[], struct mnt_run_result *r);
/* fusermount3 -u [-z] mountpoint, tried again while busy
 * (mnt_unmount_retrying); returns its exit status. */
int mnt_fusermount_u(const char *mountpoint, bool lazy);

/* ---- content patterns ------------------------------------------------- */

/* Byte at offset off of the content named by seed. */
uint8_t mnt_pattern_byte(uint64_t seed, uint64_t off);
void mnt_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off);
/* Index of the first byte that differs from the pattern, or len. */
size_t mnt_pattern_mismatch(const void *buf, size_t len, uint64_t seed, uint64_t off);

/* Writes len bytes of pattern seed to path (created/truncated, mode). */
void mnt_write_pattern(const char *path, size_t len, uint64_t seed, mode_t mode);
/* Asserts that path holds exactly len bytes of pattern seed. */
void mnt_expect_pattern(const char *path, size_t len, uint64_t seed);

/* write/read everything or fail the test. */
void mnt_write_all(int fd, const void *buf, size_t len);
void mnt_pwrite_all(int fd, const void *buf, size_t len, off_t off);
size_t mnt_read_full(int fd, void *buf, size_t len); /* stops at EOF */

/* Monotonic clock in milliseconds. */
uint64_t mnt_now_ms(void);
/* The atime / mtime of path (stat must succeed), and timespecs compared
 * to the nanosecond: -1, 0, 1. */
struct timespec mnt_atime_of(const char *path);
struct timespec mnt_mtime_of(const char *path);
int mnt_ts_cmp(struct timespec a, struct timespec b);
/* The mutt case under relatime, on a file read since its last change:
 * an append (a mail delivered) leaves atime behind mtime, and the next
 * read (the mail reader) moves atime past mtime again. */
void mnt_expect_mutt_case(const char *path);

/* Creates path (O_EXCL) with mode and optional text; returns the open fd. */
int mnt_create_file(const char *path, mode_t mode, const char *text);
/* Creates path (O_EXCL) with mode and optional text, and closes it. */
void mnt_make_file(const char *path, mode_t mode, const char *text);
/* Asserts that path holds exactly text (up to 4 KiB). */
void mnt_expect_text(const char *path, const char *text);

#endif
