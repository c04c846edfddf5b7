/*
 * test_mnt_cycles.c - directories that meet themselves (issue 36, finding
 * 1 and "cycles and self-references"), through the real daemon.
 *
 * Each image is a small tree (/a/b/c, files in it) damaged by the
 * corruption tool (tools/corrupt, with every checksum valid): a directory
 * entry naming its own directory, the root, the root inside the root, the
 * directory's parent, and a '..' cycle between two directories.  On each:
 * the listing with attributes (ls -l: READDIRPLUS), lookup (stat), rename
 * into and out of the bad name, mkdir under it and rm -rf give a clean
 * error (EUCLEAN where ordfs answers), never an abort or a hang; the
 * daemon keeps serving everything else, with writers and listers of the
 * damaged directory running at once (a writer queued behind a listing was
 * a deadlock in builds without the lock-order check); the unmount is
 * clean and the superblock has the error recorded (EUCLEAN), so the next
 * mount leaves the image to fsck.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mnt_helpers.h"
#include "corrupt.h"
#include "blockdev/blockdev.h"
#include "format/format.h"
#include "super/super.h"

/* The tree every case damages, and the inode of each directory. */
static const char *const tree_dirs[] = { "a", "a/b", "a/b/c" };
#define TREE_DIRS 3

struct tree {
	uint32_t ino[TREE_DIRS];
	uint32_t lf_ino; /* lost+found */
};

static void make_tree(struct mnt *m, struct tree *t)
{
	mnt_start(m, NULL);
	struct stat st;
	for (unsigned i = 0; i < TREE_DIRS; i++) {
		MNT_OK(mkdir(mnt_path(m, "%s", tree_dirs[i]), 0755));
		MNT_OK(stat(mnt_path(m, "%s", tree_dirs[i]), &st));
		t->ino[i] = (uint32_t)st.st_ino;
	}
	MNT_OK(stat(mnt_path(m, "lost+found"), &st));
	t->lf_ino = (uint32_t)st.st_ino;
	mnt_make_file(mnt_path(m, "keep"), 0644, "kept");
	mnt_make_file(mnt_path(m, "a/f"), 0644, "af");
	mnt_make_file(mnt_path(m, "a/b/g"), 0644, "bg");
	mnt_stop(m);
}

/* The path (under the mount, "" for the root) of directory ino. */
static const char *dir_path(const struct tree *t, uint32_t ino)
{
	if (ino == 2)
		return "";
	if (ino == t->lf_ino)
		return "lost+found";
	for (unsigned i = 0; i < TREE_DIRS; i++)
		if (t->ino[i] == ino)
			return tree_dirs[i];
	ck_abort_msg("directory %u is not in the tree", ino);
	return NULL;
}

/* Damages the unmounted image; the directory holding the new entry in
 * *holder, the directory it names in *named. */
static void damage(struct mnt *m, enum corrupt_kind kind, uint64_t seed, uint32_t *holder,
		   uint32_t *named)
{
	struct blockdev *bd;
	ck_assert_int_eq(blockdev_file_open(m->image, 0, &bd), 0);
	char what[160] = "";
	int err = corrupt_image(bd, kind, seed, what, sizeof(what));
	blockdev_destroy(bd);
	ck_assert_msg(err == 0, "corrupt %s: %s", corrupt_kind_name(kind), strerror(-err));
	fprintf(stderr, "    damage: %s\n", what);
	if (kind == CORRUPT_DOTDOT_CYCLE)
		ck_assert_int_eq(sscanf(what, "dotdot-cycle: directory %u names its parent %u",
					holder, named), 2);
	else
		ck_assert_int_eq(sscanf(strchr(what, ' '), " directory %u has an entry \"loop\" "
					"naming %u", holder, named), 2);
}

/* Lists dir with readdir (the kernel asks READDIRPLUS first, and plain
 * READDIR after a reply that stopped short); returns 0 if the listing
 * ended cleanly, else the errno it ended with.  *saw: an entry called
 * leaf was returned. */
static int list_dir(const char *dir, const char *leaf, bool *saw)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno;
	*saw = false;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, leaf) == 0)
			*saw = true;
		errno = 0;
	}
	int err = errno;
	closedir(d);
	return err;
}

/* Runs a shell command line (ls, rm): its exit code; never a signal. */
static int run_sh(const char *cmdline)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmdline, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	ck_assert_msg(r.status < 128, "%s: killed (%d)", cmdline, r.status);
	return r.status;
}

/* Listers and writers of the damaged directory at once. */
struct hammer {
	struct mnt *m;
	const char *dir; /* the listed directory, under the mount */
	int id;
	bool *stop;             /* read and set atomically */
	unsigned rounds;        /* read and added to atomically */
};

/* The path of rel under the mount, in the thread's own buffer (mnt_path's
 * rotating buffers are for one thread). */
static const char *hpath(const struct hammer *h, char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", h->m->mountpoint, rel);
	return buf;
}

static void *hammer_list(void *arg)
{
	struct hammer *h = arg;
	char p[PATH_MAX];
	while (!__atomic_load_n(h->stop, __ATOMIC_ACQUIRE)) {
		bool saw;
		(void)list_dir(hpath(h, p, sizeof(p), h->dir), "loop", &saw);
		__atomic_add_fetch(&h->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *hammer_write(void *arg)
{
	struct hammer *h = arg;
	char name[64], other[64];
	while (!__atomic_load_n(h->stop, __ATOMIC_ACQUIRE)) {
		snprintf(name, sizeof(name), "%s%sw%d", h->dir, *h->dir ? "/" : "", h->id);
		snprintf(other, sizeof(other), "%s%sv%d", h->dir, *h->dir ? "/" : "", h->id);
		char pn[PATH_MAX], po[PATH_MAX];
		hpath(h, pn, sizeof(pn), name);
		hpath(h, po, sizeof(po), other);
		int fd = open(pn, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
		(void)rename(pn, po);
		(void)unlink(po);
		(void)mkdir(pn, 0755);
		(void)rmdir(pn);
		__atomic_add_fetch(&h->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Has each of the n hammers done a round? */
static bool every_hammer_went_round(const struct hammer *h, int n)
{
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&h[i].rounds, __ATOMIC_RELAXED) == 0)
			return false;
	return true;
}

/* Two listers and two writers of dir for a second, and on until each has
 * done a round (60 s at most: a loaded machine may not run every thread
 * in the first second); each must have done rounds (a deadlock stops them
 * all: the test's timeout). */
static void hammer(struct mnt *m, const char *dir)
{
	bool stop = false;
	struct hammer h[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){ m, dir, i, &stop, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, i < 2 ? hammer_list : hammer_write,
						&h[i]), 0);
	}
	usleep(1000 * 1000);
	for (uint64_t end = mnt_now_ms() + 60000;
	     !every_hammer_went_round(h, 4) && mnt_now_ms() < end;)
		usleep(10 * 1000);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_msg(h[i].rounds > 0, "thread %d made no progress in 60 s", i);
	}
}

/* The daemon still serves: the untouched file reads back, a new file and
 * directory can be made and removed. */
static void still_serving(struct mnt *m)
{
	ck_assert(mnt_is_live(m->mountpoint));
	mnt_expect_text(mnt_path(m, "keep"), "kept");
	mnt_make_file(mnt_path(m, "after"), 0644, "new");
	mnt_expect_text(mnt_path(m, "after"), "new");
	MNT_OK(mkdir(mnt_path(m, "after.d"), 0755));
	MNT_OK(rmdir(mnt_path(m, "after.d")));
	MNT_OK(unlink(mnt_path(m, "after")));
}

/* The unmount is clean and the image says EUCLEAN was met. */
static void error_recorded(struct mnt *m)
{
	ck_assert_int_eq(mnt_stop_status(m), 0);
	struct blockdev *bd;
	struct ordfs_super sb;
	const char *why;
	ck_assert_int_eq(blockdev_file_open(m->image, BLOCKDEV_READONLY, &bd), 0);
	ck_assert_int_eq(ordfs_read_super(bd, false, &sb, &why), 0);
	blockdev_destroy(bd);
	ck_assert_msg(sb.state & ORDFS_STATE_ERROR, "no error recorded in the superblock");
	ck_assert_uint_eq(sb.last_error_code, EUCLEAN);
	/* fsck repairs such images (finding 6 is another branch's): the
	 * damaged image is thrown away. */
	mnt_discard(m);
}

/*
 * One damaged image: bad is the path whose lookup meets the damage, listed
 * the directory whose listing with attributes meets it.
 */
static void loop_case(enum corrupt_kind kind, uint64_t seed)
{
	struct mnt m;
	struct tree t;
	uint32_t holder, named;
	mnt_setup(&m, "64M");
	make_tree(&m, &t);
	damage(&m, kind, seed, &holder, &named);

	char bad[160], listed[160], holder_p[128];
	snprintf(holder_p, sizeof(holder_p), "%s", dir_path(&t, holder));
	if (kind == CORRUPT_DOTDOT_CYCLE) {
		/* named's '..' is now holder (its child): named itself is the
		 * bad name, seen from its real parent */
		const char *np = dir_path(&t, named);
		snprintf(bad, sizeof(bad), "%s", np);
		const char *slash = strrchr(np, '/');
		snprintf(listed, sizeof(listed), "%.*s", slash ? (int)(slash - np) : 0, np);
	} else {
		snprintf(bad, sizeof(bad), "%s%sloop", holder_p, *holder_p ? "/" : "");
		snprintf(listed, sizeof(listed), "%s", holder_p);
	}
	fprintf(stderr, "    bad name /%s, listing /%s\n", bad, listed);

	mnt_start(&m, "errors=continue");
	struct stat st;
	bool saw = false;
	/* The listing with attributes stops at the bad entry: EUCLEAN if it
	 * was the first of a reply, else the kernel goes on with plain
	 * READDIR, which lists the name (no attributes: nothing is looked
	 * at) and the lookups below refuse it.  Before the fix: the daemon
	 * aborted (ECONNABORTED) or the name was served. */
	const char *leaf = strrchr(bad, '/') ? strrchr(bad, '/') + 1 : bad;
	int lerr = list_dir(mnt_path(&m, "%s", listed), leaf, &saw);
	ck_assert_msg(lerr == EUCLEAN || (lerr == 0 && saw), "listing /%s: %s, %s %s", listed,
		      strerror(lerr), leaf, saw ? "listed" : "not listed");
	MNT_FAILS(lstat(mnt_path(&m, "%s", bad), &st), EUCLEAN);
	MNT_FAILS(stat(mnt_path(&m, "%s/.", bad), &st), EUCLEAN);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ls -l '%s' >/dev/null 2>&1", mnt_path(&m, "%s", listed));
	ck_assert_int_ne(run_sh(cmd), 0);
	/* rename into it, out of it, over it; mkdir under it */
	MNT_FAILS(rename(mnt_path(&m, "keep"), mnt_path(&m, "%s/keep", bad)), EUCLEAN);
	MNT_FAILS(rename(mnt_path(&m, "%s", bad), mnt_path(&m, "moved")), EUCLEAN);
	MNT_OK(mkdir(mnt_path(&m, "spare"), 0755));
	MNT_FAILS(rename(mnt_path(&m, "spare"), mnt_path(&m, "%s", bad)), EUCLEAN);
	MNT_FAILS(mkdir(mnt_path(&m, "%s/new", bad), 0755), EUCLEAN);
	MNT_FAILS(rmdir(mnt_path(&m, "%s", bad)), EUCLEAN);
	MNT_FAILS(unlink(mnt_path(&m, "%s", bad)), EUCLEAN);
	still_serving(&m);
	/* writers queued behind listings of the damaged directory */
	hammer(&m, listed);
	/* rm -rf of the damaged directory (not the root) fails cleanly */
	if (*listed) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s' 2>/dev/null", mnt_path(&m, "%s", listed));
		ck_assert_int_ne(run_sh(cmd), 0);
	}
	still_serving(&m);
	/* and the damage is still refused the same way */
	MNT_FAILS(lstat(mnt_path(&m, "%s", bad), &st), EUCLEAN);
	error_recorded(&m);
}

START_TEST(test_entry_names_its_own_directory)
{
	loop_case(CORRUPT_DIRENT_SELF, 1);
}
END_TEST

START_TEST(test_entry_names_the_root)
{
	loop_case(CORRUPT_DIRENT_ROOT, 2);
}
END_TEST

START_TEST(test_root_entry_names_the_root)
{
	loop_case(CORRUPT_DIRENT_ROOT_SELF, 3);
}
END_TEST

START_TEST(test_entry_names_its_parent)
{
	loop_case(CORRUPT_DIRENT_PARENT, 4);
}
END_TEST

START_TEST(test_dotdot_cycle)
{
	loop_case(CORRUPT_DOTDOT_CYCLE, 5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mounted cycles");
	TCase *tc = tcase_create("cycles");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_entry_names_its_own_directory);
	tcase_add_test(tc, test_entry_names_the_root);
	tcase_add_test(tc, test_root_entry_names_the_root);
	tcase_add_test(tc, test_entry_names_its_parent);
	tcase_add_test(tc, test_dotdot_cycle);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
