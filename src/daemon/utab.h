/*
 * utab.h - the daemon's line in libmount's utab: helper=ordfs for its
 * live mount, so umount(8) runs umount.ordfs and waits for the daemon;
 * no line left once the mount is gone (see utab.c).
 */
#ifndef ORDFS_DAEMON_UTAB_H
#define ORDFS_DAEMON_UTAB_H

/* Records helper=ordfs for the live mount of source on mountpoint (an
 * absolute path without symlinks, as mountinfo names it), after dropping
 * the stale lines for that mount point (utab.c, rule U2).  0 when
 * recorded; 1 when there is nothing to record (not root: utab is root's;
 * the helper is not installed); a negative errno. */
int utab_record_umount_helper(const char *source, const char *mountpoint);

/* Drops the lines for mountpoint that no live mount accounts for: the
 * daemon's own once its mount is gone (rule U3).  For a daemon that
 * recorded one, on its way out.  0, 1 when not root, or a negative
 * errno. */
int utab_forget_umount_helper(const char *mountpoint);

#endif
