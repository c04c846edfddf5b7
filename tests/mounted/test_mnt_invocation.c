/*
 * test_mnt_invocation.c - starting the daemon as a user does: in the
 * background, and wrongly.
 *
 * Owns: backgrounding (without -f the command exits 0 only once the mount
 * is live, says nothing, and the detached daemon leaves the image clean
 * and unlocked after fusermount3 -u); refusals (unknown -o option,
 * data=bogus, commit=x, flush_error=shrug, errors=panic-now, missing image, an image that is not ordfs, a
 * missing mountpoint, usage errors, a second daemon on an image already
 * mounted): each exits non-zero with exactly one line on stderr, in the
 * background and the foreground alike, mounts nothing and leaves the
 * image byte-identical.  Stopping by signal: SIGTERM or SIGINT makes the
 * daemon unmount, leave the image clean and exit 0 (main.c's contract).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define MiB (1024u * 1024u)

/* ---- background start ------------------------------------------------ */

START_TEST(test_background_start)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	char *argv[] = { (char *)mnt_ordfs_bin(), m.image, m.mountpoint, NULL };
	struct mnt_run_result r;
	uint64_t t0 = mnt_now_ms();
	mnt_run(argv, NULL, &r);
	uint64_t took = mnt_now_ms() - t0;
	/* checked before anything else: the exit came after the mount */
	bool live = mnt_is_live(m.mountpoint);
	ck_assert_msg(r.status == 0, "ordfs exited %d: %s", r.status, r.err);
	ck_assert_msg(live, "ordfs exited 0 but %s was not mounted yet", m.mountpoint);
	ck_assert_msg(r.err_len == 0, "ordfs said something on success: %s", r.err);
	printf("background start took %llu ms\n", (unsigned long long)took);

	ck_assert_msg(mnt_wait_unlocked(m.image, 0) == -ETIMEDOUT,
		      "the detached daemon does not hold the image lock");
	mnt_write_pattern(mnt_path(&m, "f"), 200000, 3, 0644);
	MNT_OK(mkdir(mnt_path(&m, "d"), 0755));
	mnt_expect_pattern(mnt_path(&m, "f"), 200000, 3);

	ck_assert_int_eq(mnt_fusermount_u(m.mountpoint, false), 0);
	int err = mnt_wait_unlocked(m.image, 60000);
	ck_assert_msg(err == 0, "the image is still locked 60 s after fusermount3 -u");
	ck_assert(!mnt_is_live(m.mountpoint));
	mnt_check(&m);

	/* and again in the foreground: the data is there */
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "f"), 200000, 3);
	mnt_finish(&m);
}
END_TEST

/* ---- refusals ------------------------------------------------------------- */

/* Runs ordfs IMAGE MOUNTPOINT ARGS... (background, then with -f; NULL
 * image or mountpoint are left out) and expects a refusal: exit non-zero,
 * one line on stderr containing `says` (if not NULL), nothing mounted,
 * and, with same_image, the image unchanged (or still absent). */
static void expect_refused_how(const char *image, const char *mountpoint, const char *args[],
			       const char *says, bool same_image)
{
	size_t before_len = 0;
	char *before = image && same_image ? mnt_slurp(image, &before_len) : NULL;
	for (int fg = 0; fg < 2; fg++) {
		char *argv[12];
		int n = 0;
		argv[n++] = (char *)mnt_ordfs_bin();
		if (image)
			argv[n++] = (char *)image;
		if (mountpoint)
			argv[n++] = (char *)mountpoint;
		for (int i = 0; args && args[i] && n < 10; i++)
			argv[n++] = (char *)args[i];
		if (fg)
			argv[n++] = "-f";
		argv[n] = NULL;

		struct mnt_run_result r;
		mnt_run(argv, NULL, &r);
		const char *mode = fg ? "with -f" : "in the background";
		ck_assert_msg(r.status != 0, "%s: refused run exited 0", mode);
		ck_assert_msg(r.status < 128, "%s: the daemon died of signal %d: %s", mode,
			      r.status - 128, r.err);
		ck_assert_msg(r.lines == 1 && r.err[r.err_len - 1] == '\n',
			      "%s: expected one line on stderr, got %u: <<%s>>", mode, r.lines,
			      r.err);
		ck_assert_msg(!says || strstr(r.err, says), "%s: message '%s' does not say '%s'",
			      mode, r.err, says);
		if (mountpoint)
			ck_assert_msg(!mnt_is_live(mountpoint), "%s: %s got mounted", mode,
				      mountpoint);
		if (image && same_image) {
			bool exists = access(image, F_OK) == 0;
			ck_assert_msg((before != NULL) == exists, "%s: image %s", mode,
				      before ? "vanished" : "was created");
			ck_assert_msg(!before || mnt_file_equals(image, before, before_len),
				      "%s: a refused run changed the image", mode);
		}
		printf("refused (%s): %s", mode, r.err);
	}
	free(before);
}

static void expect_refused(const char *image, const char *mountpoint, const char *args[],
			   const char *says)
{
	expect_refused_how(image, mountpoint, args, says, true);
}

START_TEST(test_refuses_bad_options)
{
	struct mnt m;
	mnt_setup(&m, "16M");
	/* -o values the daemon must refuse, each with the word its message
	 * has to name */
	static const char *const bad_opts[][2] = {
		{ "bogus", "bogus" },
		{ "data=ordered,noatime_typo", "noatime_typo" },
		{ "data=bogus", "bogus" },
		{ "commit=x", "commit" },
		{ "commit=-1", "commit" },
		{ "flush_error=shrug", "shrug" },
		{ "errors=panic-now", "panic-now" },
		{ "dirty_limit=4K", "dirty_limit" },
		{ "dirty_limit=65G", "dirty_limit" },
		{ "dirty_limit=3T", "dirty_limit" },
		{ "read_ahead_kb=x", "read_ahead_kb" },
		{ "read_ahead_kb=65537", "read_ahead_kb" },
		{ "read_ahead_kb=-1", "read_ahead_kb" },
		{ "journal_ioprio=8", "journal_ioprio" },
	};
	for (size_t i = 0; i < sizeof(bad_opts) / sizeof(bad_opts[0]); i++) {
		const char *args[] = { "-o", bad_opts[i][0], NULL };
		expect_refused(m.image, m.mountpoint, args, bad_opts[i][1]);
	}
	const char *dash_o[] = { "-o", NULL };
	expect_refused(m.image, m.mountpoint, dash_o, NULL);
	const char *unknown_flag[] = { "-x", NULL };
	expect_refused(m.image, m.mountpoint, unknown_flag, "-x");
	const char *extra[] = { "surplus", NULL };
	expect_refused(m.image, m.mountpoint, extra, "surplus");
	/* no mountpoint, no arguments at all */
	expect_refused(m.image, NULL, NULL, NULL);
	expect_refused(NULL, NULL, NULL, NULL);
	mnt_check(&m);
}
END_TEST

START_TEST(test_refuses_missing_image)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	const char *missing = mnt_host_path(&m, "no-such-image");
	expect_refused(missing, m.mountpoint, NULL, "no-such-image");
	/* a directory is not an image either */
	expect_refused(m.dir, m.mountpoint, NULL, NULL);
	mnt_check(&m);
}
END_TEST

START_TEST(test_refuses_image_not_ordfs)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	char zeros[PATH_MAX], noise[PATH_MAX], tiny[PATH_MAX];
	snprintf(zeros, sizeof(zeros), "%s", mnt_host_path(&m, "zeros"));
	snprintf(noise, sizeof(noise), "%s", mnt_host_path(&m, "noise"));
	snprintf(tiny, sizeof(tiny), "%s", mnt_host_path(&m, "tiny"));
	int fd = open(zeros, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	MNT_OK(ftruncate(fd, 16 * MiB));
	MNT_OK(close(fd));
	mnt_write_pattern(noise, 4 * MiB, 1234, 0644);
	mnt_write_pattern(tiny, 100, 1, 0644);
	expect_refused(zeros, m.mountpoint, NULL, "zeros");
	expect_refused(noise, m.mountpoint, NULL, "noise");
	expect_refused(tiny, m.mountpoint, NULL, "tiny");
	/* an ordfs image whose superblock magic is damaged in both sector
	 * copies (one damaged copy is survived: the other is used) */
	size_t len;
	char *img = mnt_slurp(m.image, &len);
	ck_assert(img);
	img[0] ^= 0x55;
	img[512] ^= 0x55;
	fd = open(m.image, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	mnt_pwrite_all(fd, img, 1024, 0);
	MNT_OK(close(fd));
	expect_refused(m.image, m.mountpoint, NULL, NULL);
	free(img);
}
END_TEST

START_TEST(test_refuses_missing_mountpoint)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	expect_refused(m.image, mnt_host_path(&m, "no-such-dir"), NULL, "no-such-dir");
	mnt_check(&m);
}
END_TEST

START_TEST(test_refuses_image_in_use)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	char mp2[PATH_MAX];
	snprintf(mp2, sizeof(mp2), "%s", mnt_host_path(&m, "mnt2"));
	MNT_OK(mkdir(mp2, 0755));

	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "before"), 50000, 1, 0644);
	int fd = open(mnt_path(&m, "before"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	MNT_OK(fsync(fd));
	MNT_OK(close(fd));
	/* same image, another mountpoint: the image lock refuses it */
	/* (the running daemon may write the image meanwhile) */
	expect_refused_how(m.image, mp2, NULL, "in use", false);
	const char *ro[] = { "-o", "ro", NULL };
	expect_refused_how(m.image, mp2, ro, "in use", false);

	/* the first mount is unharmed */
	mnt_expect_pattern(mnt_path(&m, "before"), 50000, 1);
	mnt_write_pattern(mnt_path(&m, "after"), 70000, 2, 0644);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "after"), 70000, 2);
	mnt_finish(&m);
}
END_TEST

/* ---- stopping by signal ---------------------------------------------------- */

static void stop_by_signal(int sig, const char *name)
{
	struct mnt m;
	mnt_setup(&m, "32M");
	mnt_start(&m, NULL);
	mnt_write_pattern(mnt_path(&m, "unsynced"), 150000, 7, 0644); /* no fsync */
	MNT_OK(kill(m.daemon, sig));
	int status;
	int err = mnt_wait_pid(m.daemon, 60000, &status);
	ck_assert_msg(err == 0, "daemon still running 60 s after %s", name);
	m.daemon = 0;
	ck_assert_msg(!mnt_is_live(m.mountpoint), "still mounted after %s", name);
	mnt_check(&m); /* clean, journal empty, no problem */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		mnt_dump_file(m.log, "daemon: ");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "daemon left the image clean after %s but exited with status 0x%x",
		      name, status);
	mnt_start(&m, NULL);
	mnt_expect_pattern(mnt_path(&m, "unsynced"), 150000, 7);
	mnt_finish(&m);
}

START_TEST(test_sigterm_stops_cleanly)
{
	stop_by_signal(SIGTERM, "SIGTERM");
}
END_TEST

START_TEST(test_sigint_stops_cleanly)
{
	stop_by_signal(SIGINT, "SIGINT");
}
END_TEST

/* A mount right after an umount: the old daemon is still writing back
 * (held here in its last flush by the latch) and holds the image; the new
 * one waits for it instead of refusing "in use" (xfstests generic/604). */
START_TEST(test_mount_waits_for_exiting_daemon)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	char latch[MNT_FILE_LEN], env[MNT_FILE_LEN + 32];
	snprintf(latch, sizeof(latch), "%s", mnt_host_path(&m, "latch"));
	snprintf(env, sizeof(env), "ORDFS_TEST_FLUSH_LATCH=%s", latch);
	mnt_start_env(&m, NULL, env);
	mnt_make_file(mnt_path(&m, "f"), 0644, "kept\n");
	int lfd = open(latch, O_CREAT | O_WRONLY, 0644);
	MNT_OK(lfd);
	MNT_OK(close(lfd));
	pid_t old = m.daemon;
	ck_assert_int_eq(mnt_fusermount_u(m.mountpoint, false), 0);
	usleep(300 * 1000);
	int status;
	ck_assert_msg(waitpid(old, &status, WNOHANG) == 0, "the old daemon did not wait");
	m.daemon = 0;
	pid_t remover = fork();
	MNT_OK(remover);
	if (remover == 0) {
		usleep(1000 * 1000);
		_exit(unlink(latch) == 0 ? 0 : 1);
	}
	mnt_start(&m, NULL); /* waits for the lock, then mounts */
	ck_assert_int_eq(waitpid(remover, &status, 0), remover);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(mnt_wait_pid(old, 20000, &status), 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	mnt_expect_text(mnt_path(&m, "f"), "kept\n");
	mnt_finish(&m);
}
END_TEST

static Suite *invocation_suite(void)
{
	Suite *s = suite_create("mounted_invocation");
	TCase *tc = tcase_create("invocation");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_background_start);
	tcase_add_test(tc, test_refuses_bad_options);
	tcase_add_test(tc, test_refuses_missing_image);
	tcase_add_test(tc, test_refuses_image_not_ordfs);
	tcase_add_test(tc, test_refuses_missing_mountpoint);
	tcase_add_test(tc, test_refuses_image_in_use);
	MNT_ADD_HOOK_TEST(tc, test_mount_waits_for_exiting_daemon); /* the latch */
	tcase_add_test(tc, test_sigterm_stops_cleanly);
	tcase_add_test(tc, test_sigint_stops_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mnt_run_suite(invocation_suite());
}
