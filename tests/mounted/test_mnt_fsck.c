/*
 * test_mnt_fsck.c - fsck.ordfs after kill -9 of the daemon during a mixed
 * workload: `fsck -fn` reports only that the journal needs replay (exit 0:
 * the replayed view, checked in memory, is clean) and changes no byte of
 * the image; `fsck -y` replays (exit 1); a second `fsck -fn` exits 0; and
 * every file whose fsync returned is there.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnt_helpers.h"

/* FNV-1a of the whole image file. */
static uint64_t image_digest(const char *path)
{
	size_t len;
	char *bytes = mnt_slurp(path, &len);
	ck_assert_ptr_nonnull(bytes);
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)bytes[i]) * 1099511628211ull;
	free(bytes);
	return h;
}

/* Runs fsck.ordfs ARGS IMAGE with stdout kept in DIR/fsck.out. */
static int fsck_run(struct mnt *m, const char *args, char **out)
{
	char cmd[1024];
	const char *outpath = mnt_host_path(m, "fsck.out");
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' > '%s'", getenv("FSCK_BIN"), args, m->image,
		 outpath);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	*out = mnt_slurp(outpath, NULL);
	ck_assert_ptr_nonnull(*out);
	return r.status;
}

START_TEST(test_fsck_after_kill9)
{
	ck_assert_msg(getenv("FSCK_BIN"), "FSCK_BIN is not set");
	struct mnt m;
	mnt_setup(&m, "128M");
	mnt_start(&m, "commit=3600");
	MNT_OK(mkdir(mnt_path(&m, "a"), 0755));
	MNT_OK(mkdir(mnt_path(&m, "b"), 0755));
	/* Each file: written, every third fsync'd (those must survive
	 * unless renamed or unlinked afterwards), every seventh renamed, the
	 * one before every eleventh unlinked. */
	char names[40][64];
	bool durable[40] = { false };
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "%s/f%d", i % 2 ? "a" : "b", i);
		const char *path = mnt_path(&m, "%s", names[i]);
		mnt_write_pattern(path, 3000 + (size_t)i * 997, (uint64_t)i, 0644);
		if (i % 3 == 0) {
			int fd = open(path, O_RDONLY);
			MNT_OK(fd);
			MNT_OK(fsync(fd));
			close(fd);
			durable[i] = true;
		}
		if (i % 7 == 6) {
			MNT_OK(rename(path, mnt_path(&m, "a/renamed%d", i)));
			durable[i] = false;
		}
		if (i % 11 == 10 && names[i - 1][0] && i % 7 != 0) {
			MNT_OK(unlink(mnt_path(&m, "%s", names[i - 1])));
			durable[i - 1] = false;
		}
	}
	mnt_kill9(&m);

	uint64_t before = image_digest(m.image);
	char *out;
	int rc = fsck_run(&m, "-fn", &out);
	ck_assert_msg(rc == 0, "fsck -fn after kill -9: exit %d\n%s", rc, out);
	ck_assert_msg(strstr(out, "needs replay") != NULL, "no replay reported:\n%s", out);
	ck_assert_msg(strstr(out, ", 0 problems") != NULL && strstr(out, "\nproblem ") == NULL &&
		      strncmp(out, "problem ", 8) != 0,
		      "problems reported:\n%s", out);
	free(out);
	ck_assert_msg(image_digest(m.image) == before, "fsck -n changed the image");

	rc = fsck_run(&m, "-y", &out);
	ck_assert_msg(rc == 1, "fsck -y: exit %d\n%s", rc, out);
	ck_assert(strstr(out, "replayed") != NULL);
	free(out);
	rc = fsck_run(&m, "-fn", &out);
	ck_assert_msg(rc == 0, "second fsck -fn: exit %d\n%s", rc, out);
	free(out);

	mnt_start(&m, NULL);
	for (int i = 0; i < 40; i++)
		if (durable[i])
			mnt_expect_pattern(mnt_path(&m, "%s", names[i]), 3000 + (size_t)i * 997,
					   (uint64_t)i);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted fsck");
	TCase *tc = tcase_create("fsck");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fsck_after_kill9);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
