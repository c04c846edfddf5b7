/*
 * test_mnt_acl.c - POSIX ACLs through the real daemon, with the tools
 * people use: setfacl and getfacl (Debian's acl package) set and read
 * access and default ACLs, the mode follows the ACL and the ACL follows
 * chmod, an ACL the mode can say is stored as nothing, new files,
 * directories and FIFOs inherit a directory's default ACL (and the umask
 * applies only where there is none), and the kernel enforces the ACL on
 * other users: commands run as other uids (setpriv) read or write only
 * what named user, named group (supplementary too), mask and other
 * entries allow.
 *
 * Skips (exit 77, one line saying why) only without /dev/fuse or without
 * setfacl/getfacl.  Each test ends with mnt_finish(): clean unmount,
 * daemon exit 0, the checker finds the image clean, ACLs and all.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mnt_helpers.h"

#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"

/* ---- tools ------------------------------------------------------------------ */

/* The full path of a program on PATH, or NULL. */
static const char *find_tool(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char copy[4096];
	snprintf(copy, sizeof(copy), "%s", path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	char *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, size, "%s/%s", dir, name);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* Runs `sh -c cmd`; returns its exit status and (if out) its stdout,
 * malloc'd.  stderr goes to the test log when the status is not 0. */
static int sh(struct mnt *m, const char *cmd, char **out)
{
	const char *outpath = mnt_host_path(m, "sh.out");
	char full[8192];
	snprintf(full, sizeof(full), "%s > '%s'", cmd, outpath);
	char *argv[] = { "/bin/sh", "-c", full, NULL };
	struct mnt_run_result r;
	mnt_run(argv, NULL, &r);
	if (r.status != 0)
		fprintf(stderr, "[%s] exit %d: %.*s", cmd, r.status, (int)r.err_len, r.err);
	if (out) {
		*out = mnt_slurp(outpath, NULL);
		ck_assert_ptr_nonnull(*out);
	}
	return r.status;
}

static void sh_ok(struct mnt *m, const char *cmd)
{
	int rc = sh(m, cmd, NULL);
	ck_assert_msg(rc == 0, "%s: exit %d", cmd, rc);
}

/* getfacl's listing of path (numeric ids, no header, no effective-rights
 * comments; opts -a: the access ACL alone, -d: the default ACL alone,
 * entries unprefixed) must be exactly want. */
static void expect_getfacl(struct mnt *m, const char *opts, const char *path, const char *want)
{
	char cmd[1024], *out;
	snprintf(cmd, sizeof(cmd), "getfacl -p -c -n -E %s '%s'", opts, path);
	ck_assert_int_eq(sh(m, cmd, &out), 0);
	ck_assert_msg(strcmp(out, want) == 0, "%s %s:\n%s\nwanted:\n%s", opts, path, out, want);
	free(out);
}

/* Runs cmd as uid (gid = uid) with exactly the supplementary groups given
 * ("" for none); returns its exit status, stdout in *out if not NULL. */
static int run_as(struct mnt *m, unsigned uid, const char *groups, const char *cmd, char **out)
{
	char full[4096];
	snprintf(full, sizeof(full), "setpriv --reuid=%u --regid=%u %s%s -- /bin/sh -c \"%s\"", uid,
		 uid, groups[0] ? "--groups=" : "--clear-groups", groups, cmd);
	return sh(m, full, out);
}

/* mnt_path's buffers rotate (sh() uses one too): a path kept across
 * calls is copied. */
static const char *keep(char buf[MNT_FILE_LEN], const char *path)
{
	snprintf(buf, MNT_FILE_LEN, "%s", path);
	return buf;
}

static mode_t perms_of(const char *path)
{
	struct stat st;
	MNT_OK(stat(path, &st));
	return st.st_mode & 07777;
}

/* Other users must reach the mount: the per-program and per-test
 * directories are 0700 (mkdtemp); let everyone through. */
static void open_path_to(struct mnt *m)
{
	MNT_OK(chmod(mnt_root(), 0711));
	MNT_OK(chmod(m->dir, 0711));
}

/* ---- set and read back ----------------------------------------------------- */

START_TEST(test_setfacl_getfacl)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	char fbuf[MNT_FILE_LEN];
	const char *f = keep(fbuf, mnt_path(&m, "f"));
	mnt_make_file(f, 0640, "text");

	/* No ACL: getfacl shows the mode; the attribute is absent. */
	expect_getfacl(&m, "", f, "user::rw-\ngroup::r--\nother::---\n\n");
	MNT_FAILS(getxattr(f, ACCESS, NULL, 0), ENODATA);

	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "setfacl -m u:1234:rw,g:2345:r,u:1000:r '%s'", f);
	sh_ok(&m, cmd);
	expect_getfacl(&m, "", f,
		       "user::rw-\nuser:1000:r--\nuser:1234:rw-\ngroup::r--\ngroup:2345:r--\n"
		       "mask::rw-\nother::---\n\n");
	ck_assert_uint_eq(perms_of(f), 0660); /* the group bits are the mask */
	/* The raw value is Linux's: version 2, 8-byte entries, 7 of them. */
	uint8_t raw[256];
	ssize_t n = getxattr(f, ACCESS, raw, sizeof(raw));
	ck_assert_int_eq(n, 4 + 7 * 8);
	ck_assert_uint_eq(raw[0], 2);
	char list[256];
	n = listxattr(f, list, sizeof(list));
	ck_assert_int_eq(n, (ssize_t)sizeof(ACCESS));
	ck_assert_str_eq(list, ACCESS);

	/* chmod rewrites USER_OBJ, MASK and OTHER; named entries stay. */
	MNT_OK(chmod(f, 0604));
	expect_getfacl(&m, "", f,
		       "user::rw-\nuser:1000:r--\nuser:1234:rw-\ngroup::r--\ngroup:2345:r--\n"
		       "mask::---\nother::r--\n\n");
	MNT_OK(chmod(f, 0770));
	expect_getfacl(&m, "", f,
		       "user::rwx\nuser:1000:r--\nuser:1234:rw-\ngroup::r--\ngroup:2345:r--\n"
		       "mask::rwx\nother::---\n\n");

	/* Removing named entries and the mask leaves an ACL the mode can say:
	 * stored as nothing. */
	snprintf(cmd, sizeof(cmd), "setfacl -b '%s'", f);
	sh_ok(&m, cmd);
	MNT_FAILS(getxattr(f, ACCESS, NULL, 0), ENODATA);
	ck_assert_uint_eq(perms_of(f), 0740); /* setfacl -b keeps GROUP_OBJ, not the mask */
	snprintf(cmd, sizeof(cmd), "setfacl -m u::r,g::-,o::r '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_uint_eq(perms_of(f), 0404);
	MNT_FAILS(getxattr(f, ACCESS, NULL, 0), ENODATA);

	/* Default ACLs only on directories. */
	snprintf(cmd, sizeof(cmd), "setfacl -d -m u:1234:rwx '%s' 2>/dev/null", f);
	ck_assert_int_ne(sh(&m, cmd, NULL), 0);
	MNT_FAILS(getxattr(f, DEFAULT, NULL, 0), ENODATA);

	/* Malformed values are refused (the kernel checks them first; the
	 * daemon would say the same). */
	static const uint8_t bad[] = { 2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff };
	MNT_FAILS(setxattr(f, ACCESS, bad, sizeof(bad), 0), EINVAL);

	/* Across a remount. */
	snprintf(cmd, sizeof(cmd), "setfacl -m u:77:rx '%s'", f);
	sh_ok(&m, cmd);
	mnt_stop(&m);
	mnt_check(&m);
	mnt_start(&m, NULL);
	expect_getfacl(&m, "", mnt_path(&m, "f"),
		       "user::r--\nuser:77:r-x\ngroup::---\nmask::r-x\nother::r--\n\n");
	ck_assert_uint_eq(perms_of(mnt_path(&m, "f")), 0454);
	mnt_finish(&m);
}
END_TEST

/* ---- inheritance ------------------------------------------------------------------- */

START_TEST(test_default_acl_inheritance)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	mnt_start(&m, NULL);
	char dbuf[MNT_FILE_LEN], fbuf[MNT_FILE_LEN], subbuf[MNT_FILE_LEN], fifobuf[MNT_FILE_LEN];
	const char *d = keep(dbuf, mnt_path(&m, "d"));
	MNT_OK(mkdir(d, 0755));
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "setfacl -d -m u:1234:rwx,g:2345:rx,o::- '%s'", d);
	sh_ok(&m, cmd);
	expect_getfacl(&m, "-d", d,
		       "user::rwx\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::rwx\n"
		       "other::---\n\n");
	MNT_FAILS(getxattr(d, ACCESS, NULL, 0), ENODATA); /* the directory's own: none */

	/* umask 077 would leave 0600; with a default ACL it does not apply,
	 * the create mode masks the inherited ACL instead. */
	mode_t old = umask(077);
	const char *f = keep(fbuf, mnt_path(&m, "d/f"));
	mnt_make_file(f, 0666, "x");
	MNT_OK(mkdir(mnt_path(&m, "d/sub"), 0750));
	MNT_OK(mkfifo(mnt_path(&m, "d/fifo"), 0644));
	MNT_OK(symlink("f", mnt_path(&m, "d/link")));
	MNT_OK(mkdir(mnt_path(&m, "plain"), 0777));
	mnt_make_file(mnt_path(&m, "plain/f"), 0666, "y");
	umask(old);

	ck_assert_uint_eq(perms_of(f), 0660);
	expect_getfacl(&m, "", f,
		       "user::rw-\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::rw-\n"
		       "other::---\n\n");
	const char *sub = keep(subbuf, mnt_path(&m, "d/sub"));
	ck_assert_uint_eq(perms_of(sub), 0750);
	expect_getfacl(&m, "-a", sub,
		       "user::rwx\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::r-x\n"
		       "other::---\n\n");
	expect_getfacl(&m, "-d", sub,
		       "user::rwx\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::rwx\n"
		       "other::---\n\n");
	const char *fifo = keep(fifobuf, mnt_path(&m, "d/fifo"));
	ck_assert_uint_eq(perms_of(fifo), 0640);
	expect_getfacl(&m, "", fifo,
		       "user::rw-\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::r--\n"
		       "other::---\n\n");
	/* Symlinks have no ACL; without a default ACL the umask applies. */
	MNT_FAILS(lgetxattr(mnt_path(&m, "d/link"), ACCESS, NULL, 0), EOPNOTSUPP);
	ck_assert_uint_eq(perms_of(mnt_path(&m, "plain/f")), 0600);
	MNT_FAILS(getxattr(mnt_path(&m, "plain/f"), ACCESS, NULL, 0), ENODATA);
	ck_assert_uint_eq(perms_of(mnt_path(&m, "plain")), 0700);

	/* Deeper down, from sub's default ACL. */
	mnt_make_file(mnt_path(&m, "d/sub/deep"), 0640, NULL);
	expect_getfacl(&m, "", mnt_path(&m, "d/sub/deep"),
		       "user::rw-\nuser:1234:rwx\ngroup::r-x\ngroup:2345:r-x\nmask::r--\n"
		       "other::---\n\n");
	mnt_finish(&m);
}
END_TEST

/* ---- enforcement ------------------------------------------------------------------ */

START_TEST(test_acl_enforced_for_other_users)
{
	struct mnt m;
	mnt_setup(&m, "64M");
	open_path_to(&m);
	mnt_start(&m, "allow_other");
	char fbuf[MNT_FILE_LEN], dbuf[MNT_FILE_LEN];
	const char *f = keep(fbuf, mnt_path(&m, "f"));
	mnt_make_file(f, 0600, "secret\n");
	char cmd[1024], *out;
	char cat[600], append[600];
	snprintf(cat, sizeof(cat), "cat '%s'", f);
	snprintf(append, sizeof(append), "echo more >> '%s'", f);

	/* Mode 0600: nobody else. */
	ck_assert_int_ne(run_as(&m, 1234, "", cat, NULL), 0);

	/* A named user may read, not write; others still nothing. */
	snprintf(cmd, sizeof(cmd), "setfacl -m u:1234:r '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_int_eq(run_as(&m, 1234, "", cat, &out), 0);
	ck_assert_str_eq(out, "secret\n");
	free(out);
	ck_assert_int_ne(run_as(&m, 1234, "", append, NULL), 0);
	ck_assert_int_ne(run_as(&m, 1235, "", cat, NULL), 0);

	/* A named group, through a supplementary group, may write. */
	snprintf(cmd, sizeof(cmd), "setfacl -m g:2345:rw '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_int_eq(run_as(&m, 1236, "2345", append, NULL), 0);
	ck_assert_int_ne(run_as(&m, 1236, "", append, NULL), 0);

	/* The mask limits named entries: chmod g-w makes it r--. */
	MNT_OK(chmod(f, 0640));
	ck_assert_int_ne(run_as(&m, 1236, "2345", append, NULL), 0);
	ck_assert_int_eq(run_as(&m, 1236, "2345", cat, NULL), 0);
	/* A mask of nothing leaves named entries nothing. */
	snprintf(cmd, sizeof(cmd), "setfacl -m m::- '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_int_ne(run_as(&m, 1234, "", cat, NULL), 0);
	ck_assert_uint_eq(perms_of(f), 0600);

	/* Other. */
	snprintf(cmd, sizeof(cmd), "setfacl -m m::rw,o::r '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_int_eq(run_as(&m, 1237, "", cat, &out), 0);
	ck_assert_str_eq(out, "secret\nmore\n");
	free(out);
	ck_assert_int_ne(run_as(&m, 1237, "", append, NULL), 0);
	/* ... but a group entry that matches and does not grant denies, even
	 * though other would allow: 2346 gets nothing. */
	snprintf(cmd, sizeof(cmd), "setfacl -m g:2346:- '%s'", f);
	sh_ok(&m, cmd);
	ck_assert_int_ne(run_as(&m, 1237, "2346", cat, NULL), 0);
	ck_assert_int_eq(run_as(&m, 1237, "", cat, NULL), 0);

	/* Directories: a named user may create in a 0755 root-owned one. */
	const char *d = keep(dbuf, mnt_path(&m, "d"));
	MNT_OK(mkdir(d, 0755));
	char touch[600];
	snprintf(touch, sizeof(touch), "touch '%s/new'", d);
	ck_assert_int_ne(run_as(&m, 1234, "", touch, NULL), 0);
	snprintf(cmd, sizeof(cmd), "setfacl -m u:1234:rwx '%s'", d);
	sh_ok(&m, cmd);
	ck_assert_int_eq(run_as(&m, 1234, "", touch, NULL), 0);
	struct stat st;
	MNT_OK(stat(mnt_path(&m, "d/new"), &st));
	ck_assert_uint_eq(st.st_uid, 1234);
	mnt_finish(&m);
}
END_TEST

/* Mounts m (set up) for other users and makes file "f" owned by uid 1234,
 * group 2345 (a group uid 1234 is in only when run_as gives it). */
static const char *start_with_owned_file(struct mnt *m, char fbuf[MNT_FILE_LEN])
{
	open_path_to(m);
	mnt_start(m, "allow_other");
	const char *f = keep(fbuf, mnt_path(m, "f"));
	mnt_make_file(f, 0644, "x\n");
	MNT_OK(chown(f, 1234, 2345));
	return f;
}

/* Setting an access ACL as the owner who is not in the file's group (and
 * lacks CAP_FSETID) clears set-group-ID, as on Linux (xfstests
 * generic/375); in the group, the bit stays. */
START_TEST(test_setfacl_clears_setgid_outside_group)
{
	struct mnt m;
	char fbuf[MNT_FILE_LEN], cmd[1024];
	mnt_setup(&m, "64M");
	const char *f = start_with_owned_file(&m, fbuf);
	MNT_OK(chmod(f, 02770));
	snprintf(cmd, sizeof(cmd), "setfacl -m u:1235:rwx '%s'", f);

	ck_assert_int_eq(run_as(&m, 1234, "2345", cmd, NULL), 0);
	ck_assert_uint_eq(perms_of(f), 02770);
	/* Another entry: setfacl writes nothing when the ACL is unchanged. */
	snprintf(cmd, sizeof(cmd), "setfacl -m u:1236:rx '%s'", f);
	ck_assert_int_eq(run_as(&m, 1234, "", cmd, NULL), 0);
	ck_assert_uint_eq(perms_of(f), 0770);
	mnt_finish(&m);
}
END_TEST

/* fallocate by the owner who is not in the file's group drops
 * set-group-ID too, not only set-user-ID (setattr_should_drop_sgid;
 * xfstests generic/683-685); in the group, set-group-ID stays. */
START_TEST(test_fallocate_drops_setgid_outside_group)
{
	struct mnt m;
	char fbuf[MNT_FILE_LEN], cmd[1024];
	mnt_setup(&m, "64M");
	const char *f = start_with_owned_file(&m, fbuf);
	snprintf(cmd, sizeof(cmd), "fallocate -l 8192 '%s'", f);

	MNT_OK(chmod(f, 06666));
	ck_assert_int_eq(run_as(&m, 1234, "2345", cmd, NULL), 0);
	ck_assert_uint_eq(perms_of(f), 02666);
	MNT_OK(chmod(f, 06666));
	ck_assert_int_eq(run_as(&m, 1234, "", cmd, NULL), 0);
	ck_assert_uint_eq(perms_of(f), 0666);
	mnt_finish(&m);
}
END_TEST

int main(void)
{
	char buf[4096];
	if (!find_tool("setfacl", buf, sizeof(buf)) || !find_tool("getfacl", buf, sizeof(buf))) {
		printf("SKIP: setfacl/getfacl not found (Debian package acl; "
		       "scripts/install-deps.sh installs it)\n");
		return 77;
	}
	Suite *s = suite_create("mounted acl");
	TCase *tc = tcase_create("acl");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_setfacl_getfacl);
	tcase_add_test(tc, test_default_acl_inheritance);
	tcase_add_test(tc, test_acl_enforced_for_other_users);
	tcase_add_test(tc, test_setfacl_clears_setgid_outside_group);
	tcase_add_test(tc, test_fallocate_drops_setgid_outside_group);
	suite_add_tcase(s, tc);
	return mnt_run_suite(s);
}
