/*
 * utab.h - records helper=ordfs for a live mount so umount(8) waits for
 * the daemon (see utab.c).
 */
#ifndef ORDFS_DAEMON_UTAB_H
#define ORDFS_DAEMON_UTAB_H

/* 0 when recorded or when there is nothing to record (not root, helper
 * not installed); a negative errno when `mount --fake` failed. */
int utab_register_umount_helper(const char *source, const char *mountpoint);

#endif
