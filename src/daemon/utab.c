/*
 * utab.c - makes umount(8) wait for this daemon, through libmount's table
 * of userspace mount options (utab, /run/mount/utab).
 *
 * The kernel does not wait for a FUSE daemon at umount, and umount(8) runs
 * a helper only when libmount knows the mount's type or a `helper=` option
 * for it; for a FUSE mount it goes by statfs ("fuse") unless utab names a
 * helper.  So once the mount is live, a daemon running as root records
 * `helper=ordfs` for it there, and umount(8) then runs umount.ordfs, which
 * unmounts and waits until the daemon has closed the image
 * (tools/umount/main.c).
 *
 * How: libmount's table update (mnt_update_set_fs + mnt_update_table), in
 * this process: the same entry, lock and atomic rewrite that mount(8)
 * makes after a mount, with no program looked up on PATH.  Not the
 * context API's fake mount (`mount --fake`): that also reads fstab and
 * resolves the mount point, a request to this very mount (U4).
 *
 * Who removes the line:
 *  - umount(8) (root), after umount.ordfs returned 0, umount -l included:
 *    libmount drops the target's last line itself;
 *  - this daemon on its way out (utab_forget_umount_helper), for what
 *    does not touch utab: fusermount3 -u, a plain umount(2), a lazy
 *    detach by another program;
 *  - the next daemon that mounts on the same mount point, for a daemon
 *    that could not (kill -9, then fusermount3 -u of the dead mount).
 *
 * Rules:
 *  U1. Best effort: a failure is logged by the caller and umount still
 *      works, without the wait.  Only root writes utab (it is root's; a
 *      user's daemon, mounted through fusermount3, records nothing and
 *      says nothing), and only when the helper is installed where
 *      umount(8) looks (ORDFS_HELPER_DIR).
 *  U2. A line is stale when a mount point has more helper=ordfs lines for
 *      a source than live fuse.ordfs mounts of that source are there (the
 *      mount being recorded, whose line is not written yet, not counted).
 *      Stale lines are dropped newest first, with libmount's own removal
 *      (the target's last line), and only while that last line is an
 *      ordfs one: another program's line is never touched, so a stale
 *      line under it stays (mount points stacked with other mounts).
 *  U3. The daemon forgets its line after its mount is gone and before it
 *      lets go of the image, so umount.ordfs, waiting for the image, finds
 *      the line gone when it returns, and no other mount of the image can
 *      have begun.
 *  U4. Nothing here looks at a path in the mount (no stat, no statfs:
 *      only /proc/self/mountinfo and utab's own files), so the daemon
 *      records before its loop serves; a request to its own mount would
 *      wait for that loop.  (The first version ran `mount`, which looks
 *      at the mount point, from a thread beside the loop.)
 */
#include <errno.h>
#include <libmount.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/mountinfo.h"
#include "utab.h"
#include "utab_lines.h"

#ifndef ORDFS_HELPER_DIR
#define ORDFS_HELPER_DIR "/sbin"
#endif

#define HELPER_NAME "ordfs"  /* umount(8) runs ORDFS_HELPER_DIR/umount.ordfs */
#define MOUNT_TYPE "fuse.ordfs"
#define MAX_DROPS 1024       /* bounds one cleanup, whatever others write meanwhile */

/* libmount's own codes (MNT_ERR_*) as errnos. */
static int errno_of(int rc)
{
	if (rc == -MNT_ERR_LOCK)
		return -ENOLCK;
	return rc <= -MNT_ERR_NOFSTAB ? -EIO : rc;
}

/* What the lines for one mount point say about the last of them. */
struct last_line {
	const char *target;
	bool found;                /* a line names target */
	bool ordfs;                /* the last one has helper=ordfs */
	char source[PATH_MAX];     /* its source */
	unsigned same;             /* helper=ordfs lines for target and source */
};

static bool is_ordfs_line(const struct utab_line *l)
{
	return utab_opts_name_helper(l->opts, HELPER_NAME);
}

static bool note_last(const struct utab_line *l, void *ctx)
{
	struct last_line *t = ctx;
	if (strcmp(l->target, t->target) == 0) {
		t->found = true;
		t->ordfs = is_ordfs_line(l);
		snprintf(t->source, sizeof(t->source), "%s", l->source);
	}
	return true;
}

static bool count_same(const struct utab_line *l, void *ctx)
{
	struct last_line *t = ctx;
	if (strcmp(l->target, t->target) == 0 && strcmp(l->source, t->source) == 0 &&
	    is_ordfs_line(l))
		t->same++;
	return true;
}

static int read_last_line(const char *utab, const char *target, struct last_line *t)
{
	*t = (struct last_line){ .target = target };
	int err = utab_lines_each(utab, note_last, t);
	if (!err && t->found && t->ordfs)
		err = utab_lines_each(utab, count_same, t);
	return err;
}

/* Live fuse.ordfs mounts of one source on one mount point. */
struct live_count {
	const char *target, *source;
	unsigned n;
};

static bool count_live(const struct mountinfo_entry *e, void *ctx)
{
	struct live_count *c = ctx;
	if (strcmp(e->mountpoint, c->target) == 0 && strcmp(e->source, c->source) == 0 &&
	    strcmp(e->type, MOUNT_TYPE) == 0)
		c->n++;
	return true;
}

/* Is the target's last line a stale ordfs one (U2)?  pending_source: the
 * source of the mount being recorded, or NULL.  1, 0, or -errno. */
static int last_line_stale(const char *utab, const char *target, const char *pending_source)
{
	struct last_line t;
	int err = read_last_line(utab, target, &t);
	if (err || !t.found || !t.ordfs)
		return err;
	struct live_count live = { .target = target, .source = t.source };
	err = mountinfo_each(count_live, &live);
	if (err)
		return err;
	if (pending_source && strcmp(pending_source, t.source) == 0 && live.n > 0)
		live.n--;
	return t.same > live.n;
}

/* Drops the target's stale lines, newest first (U2). */
static int drop_stale_lines(struct libmnt_update *upd, const char *target,
			    const char *pending_source)
{
	for (int i = 0; i < MAX_DROPS; i++) {
		/* a removal of the target's last line; it names the file too */
		int err = mnt_update_set_fs(upd, 0, target, NULL);
		if (err)
			return err < 0 ? errno_of(err) : 0;
		int stale = last_line_stale(mnt_update_get_filename(upd), target, pending_source);
		if (stale <= 0)
			return stale;
		err = mnt_update_table(upd, NULL);
		if (err)
			return errno_of(err);
	}
	return 0;
}

/* The entry mount(8) would make for `mount -t fuse.ordfs -o helper=ordfs
 * SOURCE MOUNTPOINT`: libmount keeps only the userspace options in utab. */
static int describe_mount(struct libmnt_fs *fs, const char *source, const char *mountpoint)
{
	int err = mnt_fs_set_source(fs, source);
	if (!err)
		err = mnt_fs_set_target(fs, mountpoint);
	if (!err)
		err = mnt_fs_set_fstype(fs, MOUNT_TYPE);
	if (!err)
		err = mnt_fs_set_options(fs, "helper=" HELPER_NAME);
	return errno_of(err);
}

static int add_line(struct libmnt_update *upd, const char *source, const char *mountpoint)
{
	struct libmnt_fs *fs = mnt_new_fs();
	if (!fs)
		return -ENOMEM;
	int err = describe_mount(fs, source, mountpoint);
	if (!err) {
		err = mnt_update_set_fs(upd, 0, NULL, fs);
		/* 1: "nothing to record", which helper= never is */
		err = err > 0 ? -EINVAL : errno_of(err);
	}
	if (!err)
		err = errno_of(mnt_update_table(upd, NULL));
	mnt_unref_fs(fs);
	return err;
}

static bool helper_installed(void)
{
	char helper[PATH_MAX];
	snprintf(helper, sizeof(helper), "%s/umount.%s", ORDFS_HELPER_DIR, HELPER_NAME);
	return access(helper, X_OK) == 0;
}

int utab_record_umount_helper(const char *source, const char *mountpoint)
{
	if (geteuid() != 0 || !helper_installed())
		return 1; /* U1: no right to, or nothing to point at */
	struct libmnt_update *upd = mnt_new_update();
	if (!upd)
		return -ENOMEM;
	int err = drop_stale_lines(upd, mountpoint, source);
	if (!err)
		err = add_line(upd, source, mountpoint);
	mnt_free_update(upd);
	return err;
}

int utab_forget_umount_helper(const char *mountpoint)
{
	if (geteuid() != 0)
		return 1;
	struct libmnt_update *upd = mnt_new_update();
	if (!upd)
		return -ENOMEM;
	int err = drop_stale_lines(upd, mountpoint, NULL);
	mnt_free_update(upd);
	return err;
}
