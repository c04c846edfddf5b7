/*
 * mount_internal.h - the steps of mount.c that a remount (remount.c)
 * repeats: marking the superblock in use (RECOVER set, CLEAN cleared)
 * and writing it clean with fresh free counts.  Both write block 0
 * directly, so they run only while the journal is closed or idle
 * (journal_set_readonly): never beside a transaction that logs block 0.
 */
#ifndef ORDFS_MOUNT_INTERNAL_H
#define ORDFS_MOUNT_INTERNAL_H

struct ordfs;

int ordfs_mount_mark_in_use(struct ordfs *fs);
int ordfs_mount_write_clean(struct ordfs *fs);

#endif
