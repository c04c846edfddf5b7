/*
 * image_lock.h - taking an image's lock for the daemon and fsck.ordfs,
 * waiting for a daemon that is still finishing its unmount.
 *
 * The kernel does not wait for a FUSE daemon at unmount: `fusermount3 -u`
 * (or umount(2)) returns while the daemon still writes back, checkpoints
 * and marks the image clean, holding the image's lock.  A mount or fsck
 * started right then must wait for it, as a kernel mount waits for the
 * previous umount, rather than fail.  The rule: when no FUSE mount of the
 * image is left in mountinfo, the holder is leaving (or is an fsck), so
 * wait up to timeout_ms; when the image is mounted, it is in use now.
 */
#ifndef ORDFS_IMAGE_LOCK_H
#define ORDFS_IMAGE_LOCK_H

struct blockdev;

/* Waits this long for a holder whose mount is gone. */
#define IMAGE_LOCK_WAIT_MS 10000

/* Takes bd's host lock (blockdev_host_lock, LOCK_EX) for the image file
 * `image`.  0; -EBUSY when it is mounted, or still held after timeout_ms;
 * another negative errno if the lock cannot be taken. */
int image_lock_wait(struct blockdev *bd, const char *image, unsigned timeout_ms);

#endif
